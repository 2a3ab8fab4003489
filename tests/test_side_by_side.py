"""rebind.side_by_side: calls run at the same time, their results in order, flags carried."""

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
