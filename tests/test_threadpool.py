"""rebind.threadpool: the thread count (override, load rule) and BLAS held to it.

The rule under test, by definition: the user's ``REBIND_NUM_THREADS``, else
``OMP_NUM_THREADS``; otherwise the usable cores (capped by
``MXNET_OMP_MAX_THREADS``) less the CPUs other processes keep busy (a CPU used
by others for more than ``BUSY_SLACK`` of its time counts as busy), at least 1;
fewer threads at once, more after two samples in a row. Checks of what
OpenBLAS does run in fresh interpreters, so each sees rebind's import-time
sizing with its own environment.
"""

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import rebind as mx
from rebind import threadpool
from rebind.threadpool import ThreadPolicy, requested_threads

threadpoolctl = pytest.importorskip("threadpoolctl")  # the 'test' extra installs it


class FakeSampler:
    """Hands out the given loads (CPUs used by others), one per sample; ``instants`` per restart."""

    def __init__(self, loads, instants=()):
        self.loads = list(loads)
        self.instants = list(instants)

    def sample(self):
        return self.loads.pop(0)

    def restart(self):
        return self.instants.pop(0)


@pytest.fixture
def quiet_machine(monkeypatch):
    """Nothing else runs as the policy starts (its first count is then the cores)."""
    monkeypatch.setattr(threadpool.LoadSampler, "running_others", staticmethod(lambda: 0))


# -- the override order ---------------------------------------------------------------


def test_rebind_num_threads_wins_over_omp_num_threads():
    assert requested_threads({"REBIND_NUM_THREADS": "3", "OMP_NUM_THREADS": "1"}) == 3
    assert requested_threads({"OMP_NUM_THREADS": "2"}) == 2
    assert requested_threads({"OMP_NUM_THREADS": "4,2"}) == 4  # nested OpenMP: the outer level
    assert requested_threads({}) is None


def test_an_unusable_count_is_ignored_with_a_warning():
    with pytest.warns(RuntimeWarning, match="REBIND_NUM_THREADS='two'"):
        assert requested_threads({"REBIND_NUM_THREADS": "two", "OMP_NUM_THREADS": "2"}) == 2
    with pytest.warns(RuntimeWarning, match="OMP_NUM_THREADS='0'"):
        assert requested_threads({"OMP_NUM_THREADS": "0"}) is None


def test_the_users_count_is_fixed_and_never_samples():
    sampler = FakeSampler([])  # sampling would fail: no loads to hand out
    policy = ThreadPolicy({"REBIND_NUM_THREADS": "3"}, sampler=sampler, cpus=2)
    assert policy.threads == 3  # the user's word, even above the cores
    assert policy.update(time.monotonic()) == 3
    assert policy.next_sample == float("inf")


def test_mxnet_omp_max_threads_caps_the_automatic_count(quiet_machine):
    policy = ThreadPolicy({"MXNET_OMP_MAX_THREADS": "2"}, sampler=FakeSampler([0.0]), cpus=8)
    assert policy.threads == 2
    assert policy.update(time.monotonic()) == 2


# -- the load rule ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "others, threads",
    [(0.0, 4), (0.3, 4), (0.31, 3), (1.0, 3), (1.3, 3), (1.4, 2), (3.0, 1), (9.0, 1)],
)
def test_other_processes_busy_cpus_are_left_to_them(quiet_machine, others, threads):
    policy = ThreadPolicy({}, sampler=FakeSampler([]), cpus=4)
    assert policy.allowed_by(others) == threads


def test_fewer_threads_at_once_more_after_two_samples(quiet_machine):
    policy = ThreadPolicy({}, sampler=FakeSampler([2.0, 0.0, 0.0, 1.0, None]), cpus=4)
    assert policy.threads == 4
    counts = [policy.update(time.monotonic()) for _ in range(5)]
    # 2 busy -> 2 at once; idle once -> still 2; idle twice -> 4; 1 busy -> 3;
    # unknown load (no /proc) -> the cores, after the 3 of the sample before
    assert counts == [2, 2, 4, 3, 3]


def test_a_sample_after_a_pause_starts_afresh_from_the_tasks_running_now(quiet_machine):
    """Others' time while this process did not compute is not held against it."""
    sampler = FakeSampler([2.0, 0.0, 2.0], instants=[0, 2, None])
    policy = ThreadPolicy({}, sampler=sampler, cpus=4)
    start = time.monotonic()
    assert policy.update(start) == 2  # two CPUs busy while we compute: two threads
    # a pause of the compute, then nothing runs beside us: all four at once (two samples
    # in a row would have kept two), and the next window is read soon
    later = start + threadpool.STALE_AFTER + 1
    assert policy.update(later) == 4
    assert policy.next_sample == later + threadpool.FRESH_WINDOW
    # that short window alone decides: idle keeps four
    assert policy.update(policy.next_sample) == 4
    # another pause with two tasks running now: two at once; the window after it, busy: two
    later = policy.next_sample + threadpool.STALE_AFTER + 1
    assert policy.update(later) == 2
    assert policy.update(policy.next_sample) == 2
    # a pause where the running tasks are unknown (a container's share of a host): the cores
    assert policy.update(policy.next_sample + threadpool.STALE_AFTER + 1) == 4
    assert sampler.loads == [] and sampler.instants == []


def test_the_count_at_import_follows_the_tasks_running_then(monkeypatch):
    monkeypatch.setattr(threadpool.LoadSampler, "running_others", staticmethod(lambda: 3))
    assert ThreadPolicy({}, sampler=FakeSampler([]), cpus=4).threads == 1
    monkeypatch.setattr(threadpool.LoadSampler, "running_others", staticmethod(lambda: None))
    assert ThreadPolicy({}, sampler=FakeSampler([]), cpus=4).threads == 4


def test_compute_threads_samples_at_most_every_interval(monkeypatch):
    sampler = FakeSampler([0.0] * 3)
    policy = ThreadPolicy({}, sampler=sampler, cpus=2)
    monkeypatch.setattr(threadpool, "POLICY", policy)
    monkeypatch.setattr(threadpool.POOLS, "controllable", False)  # this process's BLAS stays
    policy.next_sample = 0.0
    for _ in range(1000):
        assert threadpool.compute_threads() >= 1
    assert len(sampler.loads) == 2  # one sample for the thousand calls


def test_refresh_costs_microseconds_between_samples():
    threadpool.refresh()
    start = time.process_time()
    for _ in range(100_000):
        threadpool.refresh()
    # a read of /proc per call would take about 100 microseconds, 10 s here
    assert time.process_time() - start < 1.0


# -- BLAS held to the count -------------------------------------------------------------

PROBE = """
import json, os, sys
{prelude}
import rebind as mx
from rebind import side_by_side, threadpool
del sys.modules["threadpoolctl"]  # a refused import leaves None behind
from threadpoolctl import threadpool_info
mx.nd.dot(mx.nd.ones((64, 64)), mx.nd.ones((64, 64))).asnumpy()
blas = [d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"]
print(json.dumps({{"blas": blas, "count": threadpool.compute_threads(),
    "controllable": threadpool.POOLS.controllable,
    "leaked": [n for n in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS") if n in os.environ]}}))
"""
BLOCK_THREADPOOLCTL = 'sys.modules["threadpoolctl"] = None  # as if not installed'


def _probe(environ, prelude="import threadpoolctl"):
    names = ("REBIND_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    env = {k: v for k, v in os.environ.items() if k not in names}
    env.update(environ)
    code = PROBE.format(prelude=prelude)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _openblas_loaded():
    return any(d["internal_api"] == "openblas" for d in threadpoolctl.threadpool_info())


@pytest.mark.parametrize("count", [1, 2])
def test_threadpoolctl_sets_blas_to_the_count(count):
    result = _probe({"REBIND_NUM_THREADS": str(count)})
    assert result["controllable"] and result["count"] == count
    assert result["blas"] and set(result["blas"]) == {count}


def test_the_users_blas_variable_wins_for_that_library():
    if not _openblas_loaded():
        pytest.skip("NumPy's BLAS here is not OpenBLAS")
    result = _probe({"REBIND_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "1"})
    assert result["count"] == 2 and result["blas"] == [1]


def test_without_threadpoolctl_blas_is_sized_as_numpy_loads():
    if not _openblas_loaded():
        pytest.skip("NumPy's BLAS here is not OpenBLAS (MKL reads the same way, not checked)")
    result = _probe({"REBIND_NUM_THREADS": "1"}, prelude=BLOCK_THREADPOOLCTL)
    assert not result["controllable"]
    assert result["count"] == 1 and result["blas"] == [1]
    assert result["leaked"] == []  # the variables were set only while NumPy loaded


def _blas_counts():
    """The BLAS libraries' thread counts (an OpenMP runtime other tests loaded is not one)."""
    return {d["num_threads"] for d in threadpoolctl.threadpool_info() if d["user_api"] == "blas"}


def test_a_count_someone_else_set_is_left_alone():
    pools = threadpool.BlasPools(environ={})
    original = threadpoolctl.threadpool_info()
    try:
        pools.limit(2)
        with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
            pools.limit(2)  # the policy's count changed meanwhile: the user's block wins
            assert _blas_counts() == {1}
        pools.limit(1)  # the block restored rebind's count: rebind's again
        assert _blas_counts() == {1}
    finally:
        # each library back to its own count, by file: numpy's and scipy's OpenBLAS share a
        # prefix, and restoring by prefix gave both the last one's count (numpy's left at 2
        # where rebind had set 1 read as someone else's: the next test failed once in CI)
        counts = {info["filepath"]: info["num_threads"] for info in original}
        for library in threadpoolctl.ThreadpoolController().lib_controllers:
            if library.filepath in counts:
                library.set_num_threads(counts[library.filepath])


@pytest.mark.usefixtures("helpers_run_their_calls")
def test_two_cpu_contexts_run_side_by_side_on_the_policys_count_divided(monkeypatch):
    # a fixed count of 2, so that every batch divides the same count (a library loaded
    # after the last scan follows it too: see the late-library tests below)
    fixed = ThreadPolicy({"REBIND_NUM_THREADS": "2"}, sampler=FakeSampler([]), cpus=2)
    monkeypatch.setattr(threadpool, "POLICY", fixed)
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=64, name="fc1")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=4, name="fc2"), name="softmax")
    rng = np.random.RandomState(0)
    batches = mx.io.NDArrayIter(rng.rand(64, 32), rng.randint(0, 4, 64), batch_size=16)
    inside, between = [], []

    def blas_counts():
        infos = threadpoolctl.threadpool_info()
        return {d["num_threads"] for d in infos if d["user_api"] == "blas"}

    def watched(executor, index):
        forward = executor.forward

        def forward_recorded(*args, **kwargs):
            share = threadpool.compute_threads()
            record = (index, threading.get_ident(), share, threadpool.POLICY.threads, blas_counts())
            inside.append(record)
            return forward(*args, **kwargs)

        executor.forward = forward_recorded

    def during_batch(param):
        count = threadpool.compute_threads()  # first: a due sample may resize the pools
        between.append((blas_counts(), count))

    # this test's own record of what rebind set: a count another test changed afterwards
    # would read as someone else's and be left alone (see the test above)
    monkeypatch.setattr(threadpool.POOLS, "_set", {})
    threadpool.POOLS.limit(threadpool.compute_threads())  # BLAS libraries other tests loaded
    module = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)])
    module.bind(batches.provide_data, batches.provide_label)
    for index, executor in enumerate(module._exec_group.execs):
        watched(executor, index)
    module.fit(batches, num_epoch=1, batch_end_callback=during_batch)
    assert len(inside) == 8 and len(between) == 4
    # context 0 in the calling thread, context 1 in a pool thread (which one may vary)
    caller = threading.get_ident()
    assert {ident for index, ident, *_ in inside if index == 0} == {caller}
    assert caller not in {ident for index, ident, *_ in inside if index == 1}
    for _, _, share, whole, blas in inside:
        # each context's share of the policy's count (not the whole: BLAS spins; at least 1)
        assert share == max(1, whole // 2) and blas == {share}
    for blas, count in between:
        assert blas == {count}  # the whole count again once the contexts are done


def test_shared_by_divides_the_count_among_its_callers(monkeypatch):
    fixed = ThreadPolicy({"REBIND_NUM_THREADS": "4"}, sampler=FakeSampler([]), cpus=8)
    monkeypatch.setattr(threadpool, "POLICY", fixed)
    monkeypatch.setattr(threadpool.POOLS, "controllable", False)  # the count only, not BLAS
    assert threadpool.compute_threads() == 4
    with threadpool.shared_by(2):
        assert threadpool.compute_threads() == 2
        with threadpool.shared_by(8):
            assert threadpool.compute_threads() == 1  # never below one thread
        assert threadpool.compute_threads() == 2  # the outer block's share again
    assert threadpool.compute_threads() == 4


def test_engine_threads_are_the_users_count_else_the_usable_cores_whatever_the_load(monkeypatch):
    busy = ThreadPolicy({}, sampler=FakeSampler([3.0, 3.0]), cpus=4)
    busy.update(0.0)
    assert busy.threads == 1  # BLAS, whose threads spin, gets one thread
    monkeypatch.setattr(threadpool, "POLICY", busy)
    assert threadpool.engine_threads() == 4  # a pool of sleeping threads keeps the cores
    capped = ThreadPolicy({"MXNET_OMP_MAX_THREADS": "2"}, sampler=FakeSampler([]), cpus=8)
    monkeypatch.setattr(threadpool, "POLICY", capped)
    assert threadpool.engine_threads() == 2
    fixed = ThreadPolicy({"OMP_NUM_THREADS": "3"}, sampler=FakeSampler([]), cpus=8)
    monkeypatch.setattr(threadpool, "POLICY", fixed)
    assert threadpool.engine_threads() == 3


class FakeLibrary:
    """A pool as threadpoolctl's controllers show it: a file, an API and a thread count."""

    def __init__(self, filepath, threads):
        self.filepath, self.threads = filepath, threads
        self.internal_api, self.user_api = "openblas", "blas"

    def get_num_threads(self):
        return self.threads

    def set_num_threads(self, threads):
        self.threads = threads


def test_hold_rescans_once_a_library_was_loaded_since_the_last_scan(monkeypatch):
    first, late = FakeLibrary("first.so", 2), FakeLibrary("late.so", 2)
    loaded, scans = [first], []

    class Controller:  # threadpoolctl's scan: the libraries loaded now
        def __init__(self):
            scans.append(1)
            self.lib_controllers = list(loaded)

    monkeypatch.setattr(threadpoolctl, "ThreadpoolController", Controller)
    monkeypatch.setattr(threadpool, "_LOADER_COUNT", lambda: len(loaded))
    pools = threadpool.BlasPools(environ={})
    pools.limit(2)
    pools.hold(1)  # nothing loaded since the scan: no new one
    assert len(scans) == 1 and first.threads == 1
    loaded.append(late)  # loaded after the scan, still at its own count
    pools.hold(2)
    assert len(scans) == 2 and (first.threads, late.threads) == (2, 2)
    pools.hold(1)
    assert len(scans) == 2 and (first.threads, late.threads) == (1, 1)


def test_the_loaded_object_count_moves_when_a_library_loads():
    code = (
        "import ctypes, ctypes.util, json\n"
        "from rebind import threadpool\n"
        "before = threadpool.loaded_objects()\n"
        "ctypes.CDLL(ctypes.util.find_library('m'))\n"  # loaded already: no new object
        "same = threadpool.loaded_objects()\n"
        "import importlib, importlib.util, sys\n"
        "names = ('_decimal', '_lzma', '_bz2', 'mmap', '_sqlite3', '_curses', '_ctypes_test')\n"
        "def shared(name):  # an extension module in its own shared object, not loaded yet\n"
        "    spec = name not in sys.modules and importlib.util.find_spec(name)\n"
        "    return bool(spec) and str(spec.origin).endswith(('.so', '.pyd', '.dylib'))\n"
        "importlib.import_module(next(name for name in names if shared(name)))\n"
        "print(json.dumps([before, same, threadpool.loaded_objects()]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    before, same, after = json.loads(done.stdout.strip().splitlines()[-1])
    assert before == same != after


LATE_LIBRARY = """
import ctypes, json, sys
import rebind as mx
from rebind import side_by_side, threadpool
from threadpoolctl import threadpool_info
threadpool.POOLS.limit(threadpool.POLICY.threads)  # the last scan: before the library loads
before = {{d["filepath"] for d in threadpool_info()}}
ctypes.CDLL({path!r})
late = [d for d in threadpool_info() if d["filepath"] not in before]
initial = late[0]["num_threads"]
callers = 8 if initial != 1 else 2  # a share (of 8 threads) the library does not have yet
with threadpool.shared_by(callers):
    inside = [d["num_threads"] for d in threadpool_info() if d["filepath"] not in before]
print(json.dumps({{"initial": initial, "share": 8 // callers, "inside": inside}}))
"""


def _unloaded_pool_library():
    """A BLAS or OpenMP library a fresh rebind process has not loaded (None if none is found)."""
    import ctypes.util

    name = ctypes.util.find_library("gomp")
    loaded = {os.path.basename(d["filepath"]) for d in threadpoolctl.threadpool_info()}
    if name is None or any(n.startswith("libgomp") for n in loaded):
        return None
    return name


def test_a_library_loaded_after_the_last_scan_follows_a_side_by_side_share():
    library = _unloaded_pool_library()
    if library is None:
        pytest.skip("no OpenMP runtime (libgomp) to load late on this machine")
    names = ("REBIND_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    env = {k: v for k, v in os.environ.items() if k not in names}
    env["REBIND_NUM_THREADS"] = "8"
    code = LATE_LIBRARY.format(path=library)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["initial"] != result["share"]
    assert result["inside"] == [result["share"]]


def test_engine_share_divides_the_engine_count_among_side_by_side_callers(monkeypatch):
    monkeypatch.setattr(threadpool, "engine_threads", lambda: 4)
    assert threadpool.engine_share() == 4
    with threadpool.shared_by(2):
        assert threadpool.engine_share() == 2
        with threadpool.shared_by(8):
            assert threadpool.engine_share() == 1  # at least one
    assert threadpool.engine_share() == 4
