"""Copies started a batch ahead (backends/cupy_ahead.py), ordered on a stand-in GPU.

The loop modelled is fit's: step k's kernels, queued on the compute stream,
read the input array; then batch k+1's copy is started on the copy stream;
then step k+1's forward finishes it (a device-to-device copy into the input)
and queues its own kernels. Whatever order the device runs the two streams
in, each step must read its own batch, and the host must never wait.
"""

import numpy as np
import pytest

from rebind.backends.cupy_ahead import CopyAhead
from rebind.backends.cupy_backend import CupyBackend
from rebind.backends.cupy_staging import MAX_STAGED_BYTES, PinnedRing

from .fake_streams import FakeCupy


@pytest.fixture
def cupy():
    return FakeCupy()


def _batches(count, seed=0, shape=(64, 10)):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]


def _fit_like(cupy, batches, run_between):
    """Queue fit's steps; ``run_between(cupy)`` lets the device run some work after each."""
    ahead = CopyAhead(PinnedRing())
    target = cupy.empty(batches[0].shape, batches[0].dtype)
    target.set(batches[0])  # the first batch is loaded the ordinary way
    seen = []
    for index in range(len(batches)):
        cupy.read_later(target, seen)  # step k's forward and backward
        run_between(cupy)
        if index + 1 < len(batches):
            host = batches[index + 1].copy()
            ticket = ahead.start(cupy, 0, target, host)
            host[...] = np.nan  # the host's array may change once start returns
            run_between(cupy)
            ticket.finish()  # step k+1's forward
            run_between(cupy)
    cupy.device.run_everything()
    return seen


def _copy_stream_eager(cupy):
    for stream in cupy.device.streams[1:]:
        stream.run_all()


def _compute_stream_eager(cupy):
    cupy.device.default.run_all()


@pytest.mark.parametrize(
    "run_between",
    [lambda cupy: None, _copy_stream_eager, _compute_stream_eager],
    ids=["device-lazy", "copy-stream-first", "compute-stream-first"],
)
def test_each_step_reads_its_own_batch_in_any_device_order(cupy, run_between):
    batches = _batches(12)
    host_waits_before = cupy.device.host_waits  # the first batch's ordinary copy waits
    seen = _fit_like(cupy, batches, run_between)
    assert len(seen) == len(batches)
    for values, batch in zip(seen, batches, strict=True):
        np.testing.assert_array_equal(values, batch)
    assert cupy.device.host_waits == host_waits_before + 1


@pytest.mark.parametrize(
    "run_between",
    [lambda cupy: None, _copy_stream_eager, _compute_stream_eager],
    ids=["device-lazy", "copy-stream-first", "compute-stream-first"],
)
def test_a_new_spare_waits_for_the_kernels_still_writing_its_memory(cupy, run_between):
    """A spare's memory may come from the pool while queued kernels still write it."""
    cupy.recycled_memory = True
    batches = _batches(6)
    seen = _fit_like(cupy, batches, run_between)
    for values, batch in zip(seen, batches, strict=True):
        np.testing.assert_array_equal(values, batch)


def test_the_copy_runs_on_its_own_stream_and_one_spare_serves_the_loop(cupy):
    ahead = CopyAhead(PinnedRing())
    target = cupy.empty((8, 3), np.float32)
    for batch in _batches(5, shape=(8, 3)):
        ahead.start(cupy, 0, target, batch).finish()
    copy_streams = cupy.device.streams[1:]
    assert len(copy_streams) == 1 and copy_streams[0].ops  # the copies went there
    assert [len(spares) for spares in ahead._spares.values()] == [1]


def test_a_dropped_copy_frees_its_spare_and_leaves_the_target_alone(cupy):
    ahead = CopyAhead(PinnedRing())
    target = cupy.empty((8, 3), np.float32)
    first, second = _batches(2, shape=(8, 3))
    ahead.start(cupy, 0, target, first).drop()
    ticket = ahead.start(cupy, 0, target, second)
    assert [len(spares) for spares in ahead._spares.values()] == [1]  # the dropped one, again
    ticket.finish()
    cupy.device.run_everything()
    np.testing.assert_array_equal(target.storage, second)
    with pytest.raises(RuntimeError, match="already finished or dropped"):
        ticket.finish()


def test_a_ticket_gives_its_spare_back_once(cupy):
    ahead = CopyAhead(PinnedRing())
    target, other = cupy.empty((8, 3), np.float32), cupy.empty((8, 3), np.float32)
    first, second = _batches(2, shape=(8, 3))
    stale = ahead.start(cupy, 0, target, first)
    stale.drop()
    pending = ahead.start(cupy, 0, target, second)  # the same spare, taken again
    stale.drop()  # must not free the spare the pending copy holds
    third = ahead.start(cupy, 0, other, first)
    assert [len(spares) for spares in ahead._spares.values()] == [2]
    pending.finish()
    third.finish()
    cupy.device.run_everything()
    np.testing.assert_array_equal(target.storage, second)
    np.testing.assert_array_equal(other.storage, first)


def test_copies_started_together_take_a_spare_each(cupy):
    ahead = CopyAhead(PinnedRing())
    targets = [cupy.empty((8, 3), np.float32) for _ in range(3)]
    batches = _batches(3, shape=(8, 3))
    tickets = [ahead.start(cupy, 0, t, b) for t, b in zip(targets, batches, strict=True)]
    for ticket in reversed(tickets):
        ticket.finish()
    cupy.device.run_everything()
    for target, batch in zip(targets, batches, strict=True):
        np.testing.assert_array_equal(target.storage, batch)
    ahead.release()
    assert not ahead._spares


def test_empty_and_oversized_copies_are_left_to_the_caller(cupy):
    ahead = CopyAhead(PinnedRing())
    empty = np.zeros((0, 4), np.float32)
    assert ahead.start(cupy, 0, cupy.empty(empty.shape, empty.dtype), empty) is None
    rows = MAX_STAGED_BYTES // (4 * 1024) + 1
    large = np.broadcast_to(np.float32(1), (rows, 1024))  # over the limit, no memory used
    assert ahead.start(cupy, 0, cupy.empty((1, 1), np.float32), large) is None


def test_the_backend_converts_dtypes_and_refuses_what_it_cannot_stage(cupy):
    backend = CupyBackend()
    backend._module = cupy
    target = cupy.empty((2, 3), np.float32)
    ticket = backend.copy_ahead(target, np.arange(6, dtype=np.float64).reshape(2, 3), 0)
    ticket.finish()
    cupy.device.run_everything()
    np.testing.assert_array_equal(target.storage, np.arange(6, dtype=np.float32).reshape(2, 3))
    assert backend.copy_ahead(target, np.zeros((3, 2), np.float32), 0) is None  # other shape
    target.flags.c_contiguous = False
    assert backend.copy_ahead(target, np.zeros((2, 3), np.float32), 0) is None
    backend._aheads[0].release()
    assert not backend._aheads[0]._spares
