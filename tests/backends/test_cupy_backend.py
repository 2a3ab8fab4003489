"""The CuPy backend: real GPU tests where CuPy and a device exist, skipped otherwise."""

import subprocess
import sys

import numpy as np
import pytest

import rebind as mx
from rebind import registry


def _cupy_or_skip():
    backend = registry.lookup("backends", "cupy")
    reason = backend.unavailable_reason()
    if reason is not None:
        pytest.skip(f"cupy backend unavailable: {reason}")
    return backend


def test_importing_rebind_does_not_import_cupy():
    code = (
        "import sys, rebind as mx; mx.nd.zeros(2); mx.registry.get_registry('backends');"
        "print('cupy' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


@pytest.mark.gpu
def test_arrays_live_on_the_gpu():
    backend = _cupy_or_skip()
    cupy = backend.xp
    array = mx.nd.array([[1, 2], [3, 4]], ctx=mx.gpu(0))
    assert isinstance(array.data, cupy.ndarray)
    assert array.data.device.id == 0
    assert array.context == mx.gpu(0)
    np.testing.assert_array_equal((array * 2 + 1).asnumpy(), [[3, 5], [7, 9]])


@pytest.mark.gpu
def test_copies_between_host_and_device():
    _cupy_or_skip()
    host = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    device = host.copyto(mx.gpu(0))
    back = device.as_in_context(mx.cpu())
    np.testing.assert_array_equal(back.asnumpy(), host.asnumpy())
    target = mx.nd.zeros((2, 3), ctx=mx.gpu(0))
    host.copyto(target)
    np.testing.assert_array_equal(target.asnumpy(), host.asnumpy())


@pytest.mark.gpu
def test_second_gpu_when_present():
    backend = _cupy_or_skip()
    if backend.num_devices() < 2:
        pytest.skip("needs two GPUs")
    array = mx.nd.ones(4, ctx=mx.gpu(1))
    assert array.data.device.id == 1
    moved = array.copyto(mx.gpu(0))
    assert moved.data.device.id == 0


@pytest.mark.gpu
def test_missing_device_index_is_a_clear_error():
    backend = _cupy_or_skip()
    with pytest.raises(mx.errors.BackendUnavailableError, match="does not exist"):
        mx.nd.zeros(1, ctx=mx.gpu(backend.num_devices()))


@pytest.mark.gpu
def test_seeding_is_reproducible_on_gpu():
    _cupy_or_skip()
    mx.random.seed(42)
    first = mx.nd.random.uniform(shape=(100,), ctx=mx.gpu(0)).asnumpy()
    mx.random.seed(42)
    second = mx.nd.random.uniform(shape=(100,), ctx=mx.gpu(0)).asnumpy()
    np.testing.assert_array_equal(first, second)
    assert first.dtype == np.float32 and 0 <= first.min() and first.max() < 1


@pytest.mark.gpu
def test_synchronize_and_memory_pool():
    _cupy_or_skip()
    mib = 2**20
    before = mx.context.gpu_memory_report(0)
    array = mx.nd.ones((1024, 1024), ctx=mx.gpu(0))  # 4 MiB
    array.wait_to_read()
    mx.nd.waitall()
    during = mx.context.gpu_memory_report(0)
    assert during["pool_used"] >= before["pool_used"] + 4 * mib
    assert during["pool_held"] >= during["pool_used"]
    assert 0 < during["device_free"] < during["device_total"]
    del array
    mx.gpu(0).empty_cache()  # the freed block goes back to the device
    after = mx.context.gpu_memory_report(0)
    assert after["pool_used"] <= during["pool_used"] - 4 * mib
    assert after["pool_held"] < during["pool_held"]


@pytest.mark.gpu
def test_save_and_load_from_gpu(tmp_path):
    _cupy_or_skip()
    array = mx.nd.array(np.arange(5, dtype=np.float32), ctx=mx.gpu(0))
    mx.nd.save(tmp_path / "g.params", {"a": array})
    loaded = mx.nd.load(tmp_path / "g.params")["a"]
    assert loaded.context == mx.cpu(0)
    np.testing.assert_array_equal(loaded.asnumpy(), array.asnumpy())


@pytest.mark.gpu
def test_host_to_device_copies_stage_through_pinned_memory():
    """Copies of every size go through the pinned ring, around it and growing it."""
    backend = _cupy_or_skip()
    rows = 1 << 16  # (rows, 4) float32: 1 MiB, so the 4 MiB ring wraps every 4 copies
    target = mx.nd.zeros((rows, 4), ctx=mx.gpu(0))
    for value in range(1, 10):
        source = np.full((rows, 4), value, np.float32)
        mx.nd.array(source).copyto(target)
        np.testing.assert_array_equal(target.asnumpy(), source)
    wider = np.arange(rows * 8, dtype=np.float64).reshape(rows, 8)[:, ::2]  # strided, float64
    mx.nd.array(wider, dtype="float64").copyto(target)
    np.testing.assert_array_equal(target.asnumpy(), wider.astype(np.float32))
    small = mx.nd.array([[1, 2, 3, 4]]).copyto(mx.nd.zeros((1, 4), ctx=mx.gpu(0)))
    np.testing.assert_array_equal(small.asnumpy(), [[1, 2, 3, 4]])
    labels = mx.nd.array([3, 1, 2], ctx=mx.gpu(0))  # asarray: staged too
    np.testing.assert_array_equal(labels.asnumpy(), [3, 1, 2])
    big = np.arange(3 << 20, dtype=np.float32)  # 12 MiB: the ring grows to 64 MiB
    np.testing.assert_array_equal(mx.nd.array(big, ctx=mx.gpu(0)).asnumpy(), big)
    assert backend._stagings[0].capacity == 1 << 26


def _is_pinned(cupy, array):
    attributes = cupy.cuda.runtime.pointerGetAttributes(array.ctypes.data)
    kind = getattr(attributes, "type", getattr(attributes, "memoryType", None))
    return kind == cupy.cuda.runtime.memoryTypeHost


@pytest.mark.gpu
def test_device_to_host_copies_land_in_the_host_array():
    """copyto a host NDArray writes its NumPy array in place, contiguous or not."""
    _cupy_or_skip()
    values = np.arange(24, dtype=np.float32).reshape(4, 6)
    device = mx.nd.array(values, ctx=mx.gpu(0))
    target = mx.nd.zeros((4, 6))
    memory = target.data
    device.copyto(target)
    assert target.data is memory
    np.testing.assert_array_equal(memory, values)
    as_float64 = mx.nd.zeros((4, 6), dtype="float64")
    device.copyto(as_float64)  # another dtype: through a host copy
    np.testing.assert_array_equal(as_float64.asnumpy(), values)


@pytest.mark.gpu
def test_host_zeros_are_pinned_and_counted_while_they_live():
    backend = _cupy_or_skip()
    cupy = backend.xp
    before = backend._pinned_host_bytes
    array = backend.host_zeros((256, 256), np.float32)
    assert array.shape == (256, 256) and array.dtype == np.float32 and not array.any()
    assert _is_pinned(cupy, array)
    assert backend._pinned_host_bytes == before + array.nbytes
    del array
    import gc

    gc.collect()
    assert backend._pinned_host_bytes == before


@pytest.mark.gpu
def test_a_gpu_modules_host_parameters_are_pinned_and_refreshed_in_place():
    backend = _cupy_or_skip()
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    mod = mx.mod.Module(net, context=mx.gpu(0))
    mod.bind([("data", (8, 5))], [("softmax_label", (8,))])
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    arg_params, _ = mod.get_params()
    memory = {name: array.data for name, array in arg_params.items()}
    assert all(_is_pinned(backend.xp, host) for host in memory.values())
    batch = mx.io.DataBatch([mx.nd.ones((8, 5))], [mx.nd.zeros((8,))])
    mod.forward_backward(batch)
    mod.update()
    refreshed, _ = mod.get_params()
    for name, array in refreshed.items():
        assert array.data is memory[name]
        device = mod._exec_group.param_arrays[mod._exec_group.param_names.index(name)][0]
        np.testing.assert_array_equal(array.asnumpy(), device.asnumpy())
