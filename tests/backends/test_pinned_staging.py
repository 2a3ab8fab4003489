"""Host -> device copies through the pinned ring (backends/cupy_staging.py), on a stand-in GPU.

``FakeCupy`` (fake_streams.py) models what the ring relies on:
``ndarray.set(view, stream)`` only queues the copy, which reads the pinned
view when the device gets to it (never sooner); an event completes when the
device has run everything queued before it; ``Event.synchronize`` makes the
host wait for that. So a region of the ring written again before its copy ran
would land the wrong values, and every wait of the host is counted: copies
must not wait while the ring has room, and must wait only for the copies
whose memory they reuse.
"""

import numpy as np
import pytest

from rebind.backends import cupy_staging
from rebind.backends.cupy_backend import CupyBackend

from .fake_streams import FakeCupy


@pytest.fixture
def cupy():
    return FakeCupy()


def _values(count, seed, rows=1000):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((rows, 4)).astype(np.float32) for _ in range(count)]


def test_copies_do_not_wait_while_the_ring_has_room(cupy):
    ring = cupy_staging.PinnedRing()
    sources = _values(6, seed=0)  # 16 kB each: far less than the smallest ring
    expected = [s.copy() for s in sources]
    targets = [cupy.empty(s.shape, s.dtype) for s in sources]
    for source, target in zip(sources, targets, strict=True):
        ring.copy(cupy, target, source)
        source[...] = 0  # the host's array may change at once: the ring holds its own copy
    assert cupy.device.host_waits == 0 and cupy.device.default.done == 0
    cupy.device.run_everything()
    for values, target in zip(expected, targets, strict=True):
        np.testing.assert_array_equal(target.storage, values)


def test_a_region_is_written_again_only_after_its_copy_ran(cupy):
    ring = cupy_staging.PinnedRing()
    sources = _values(40, seed=1, rows=20000)  # 320 kB each: the 4 MiB ring wraps
    targets = [cupy.empty(s.shape, s.dtype) for s in sources]
    for source, target in zip(sources, targets, strict=True):
        ring.copy(cupy, target, source)
    assert ring.capacity == 1 << 22
    assert 0 < cupy.device.host_waits < len(sources)  # only for the regions reused
    assert len(cupy.events) < len(sources)  # the events of finished copies are used again
    cupy.device.run_everything()
    for source, target in zip(sources, targets, strict=True):
        np.testing.assert_array_equal(target.storage, source)


def test_a_larger_copy_grows_the_ring_after_the_old_copies_ran(cupy):
    ring = cupy_staging.PinnedRing()
    small = _values(3, seed=2)
    large = np.arange(2 << 20, dtype=np.float32).reshape(-1, 8)  # 8 MiB: 4 need 32 MiB
    targets = [cupy.empty(s.shape, s.dtype) for s in [*small, large]]
    for source, target in zip([*small, large], targets, strict=True):
        ring.copy(cupy, target, source)
    assert ring.capacity == 1 << 25
    assert cupy.device.default.done == 3  # the small copies ran before their buffer was let go
    cupy.device.run_everything()
    for source, target in zip([*small, large], targets, strict=True):
        np.testing.assert_array_equal(target.storage, source)


def test_a_copy_too_large_to_stage_is_made_directly(cupy):
    ring = cupy_staging.PinnedRing()
    huge = np.ones(cupy_staging.MAX_STAGED_BYTES // 4 + 1, np.float32)
    target = cupy.empty(huge.shape, huge.dtype)
    ring.copy(cupy, target, huge)
    assert ring.capacity == 0 and cupy.device.host_waits == 1
    np.testing.assert_array_equal(target.storage, huge)


def test_the_backend_stages_every_host_copy(cupy):
    # asarray and copy_from_host, small arrays included, go through the ring: no copy
    # waits for the device, and dtypes are converted and scalars broadcast on the host
    backend = CupyBackend()
    backend._module = cupy
    labels = backend.asarray([3, 1, 2], np.float32, 0)
    target = cupy.empty((2, 3), np.float32)
    backend.copy_from_host(target, np.arange(6, dtype=np.float64).reshape(2, 3), 0)
    filled = cupy.empty((4,), np.int32)
    backend.copy_from_host(filled, 7, 0)
    assert cupy.device.host_waits == 0 and len(cupy.device.default.ops) == 3
    cupy.device.run_everything()
    np.testing.assert_array_equal(labels.storage, np.array([3, 1, 2], np.float32))
    np.testing.assert_array_equal(target.storage, np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(filled.storage, [7, 7, 7, 7])
