"""rebind.side_by_side: calls run at the same time, their results in order, flags carried."""

import os
import select
import signal
import threading

import pytest

from rebind import side_by_side, threadpool
from rebind.thread_flags import ThreadFlag, raise_all, raised


def test_results_come_back_in_the_order_of_the_calls():
    assert side_by_side.run([lambda i=i: i * i for i in range(4)]) == [0, 1, 4, 9]
    assert side_by_side.run([lambda: "alone"]) == ["alone"]
    assert side_by_side.run([]) == []


def test_the_first_call_runs_in_the_calling_thread_the_others_beside_it():
    barrier = threading.Barrier(3, timeout=30)  # only passes if all three run at once

    def meet():
        barrier.wait()
        return threading.get_ident()

    idents = side_by_side.run([meet, meet, meet])
    assert idents[0] == threading.get_ident()
    assert len(set(idents)) == 3


def test_the_first_failing_call_by_position_raises_after_all_ended():
    ended = []

    def fails(message):
        def call():
            ended.append(message)
            raise KeyError(message)

        return call

    with pytest.raises(KeyError, match="second"):
        side_by_side.run([lambda: ended.append("first"), fails("second"), fails("third")])
    assert sorted(ended) == ["first", "second", "third"]


def test_the_calling_threads_flags_are_set_in_the_helper_threads():
    flag, other = ThreadFlag(), ThreadFlag()

    def read():
        return flag.active, other.active

    with flag.within():
        assert flag in raised() and other not in raised()
        assert side_by_side.run([read, read]) == [(True, False), (True, False)]
    assert side_by_side.run([read, read]) == [(False, False), (False, False)]


def test_raise_all_restores_the_flags_it_set():
    flag = ThreadFlag()
    with raise_all((flag,)):
        assert flag.active
    assert not flag.active


def test_the_policys_count_is_shared_while_the_calls_run(monkeypatch):
    fixed = threadpool.ThreadPolicy({"REBIND_NUM_THREADS": "4"}, cpus=8)
    monkeypatch.setattr(threadpool, "POLICY", fixed)
    monkeypatch.setattr(threadpool.POOLS, "controllable", False)
    counts = side_by_side.run([threadpool.compute_threads, threadpool.compute_threads])
    assert counts == [2, 2]
    assert threadpool.compute_threads() == 4


def test_the_switch_turns_it_off(monkeypatch):
    assert side_by_side.enabled()
    monkeypatch.setenv("REBIND_CONTEXT_THREADS", "0")
    assert not side_by_side.enabled()


def test_a_run_inside_a_run_takes_turns_and_keeps_the_promises():
    inner_idents = []

    def inner(value):
        def call():
            inner_idents.append(threading.get_ident())
            return value

        return call

    def outer():
        # a second group while the first runs: in turn, in this (helper) thread
        return side_by_side.run([inner(1), inner(2)]), threading.get_ident()

    first, (inner_results, helper) = side_by_side.run([lambda: "first", outer])
    assert first == "first" and inner_results == [1, 2]
    assert inner_idents == [helper, helper]
    ended = []

    def fails():
        ended.append("fails")
        raise KeyError("in turn")

    def nested():
        return side_by_side.run([fails, lambda: ended.append("after")])

    with pytest.raises(KeyError, match="in turn"):
        side_by_side.run([lambda: None, nested])
    assert ended == ["fails", "after"]  # every call ran before the error was raised


def _in_a_helper():
    """Two calls whose second reports its thread, the first waiting until it has run."""
    started = threading.Event()

    def second():
        started.set()
        return threading.get_ident()

    return [lambda: started.wait(30), second]


def test_the_helper_threads_are_kept_between_runs():
    first = side_by_side.run(_in_a_helper())[1]
    second = side_by_side.run(_in_a_helper())[1]
    assert first == second != threading.get_ident()


def test_a_call_its_helper_has_not_started_runs_in_the_calling_thread(monkeypatch):
    # a helper that does not wake up (on a busy machine: one waiting for a CPU)
    monkeypatch.setattr(side_by_side._Helper, "hand", lambda self, task, flags: None)
    flag = ThreadFlag()
    with flag.within():
        results = side_by_side.run([lambda: 1, lambda: (threading.get_ident(), flag.active)])
    assert results == [1, (threading.get_ident(), True)]
    monkeypatch.undo()
    assert side_by_side.run(_in_a_helper())[1] != threading.get_ident()  # helpers work on


def test_a_forked_child_makes_its_own_helpers():
    side_by_side.run([lambda: None, lambda: None])  # the parent's helper exists
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's helper thread is not here
        try:
            ok = side_by_side.run([lambda: 1, lambda: 2]) == [1, 2]
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 120)
    if not ready:  # waiting for a helper thread the fork did not copy
        os.kill(pid, signal.SIGKILL)
    answer = os.read(read, 1) if ready else b""
    os.waitpid(pid, 0)
    assert answer == b"1"
