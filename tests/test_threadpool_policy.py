"""rebind.threadpool's count: the user's override, the load rule, when it samples.

The rule under test, by definition: the user's ``REBIND_NUM_THREADS``, else
``OMP_NUM_THREADS``; otherwise the usable cores (capped by
``MXNET_OMP_MAX_THREADS``) less the CPUs other processes keep busy (a CPU used
by others for more than ``BUSY_SLACK`` of its time counts as busy), at least 1;
fewer threads at once, more after two samples in a row; after a pause of the
process's compute, afresh from the tasks running then. BLAS held to the count:
``test_threadpool.py``.
"""

import time

import pytest

from rebind import threadpool
from rebind.threadpool import ThreadPolicy, requested_threads

from .threadpool_fakes import FakeSampler


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
