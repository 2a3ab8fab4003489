"""Contexts: construction, equality, scoping, defaults and backend choice."""

import threading

import pytest

import rebind as mx
from rebind import registry
from rebind.errors import BackendUnavailableError


def test_constructors_and_repr():
    assert repr(mx.cpu()) == "cpu(0)"
    assert str(mx.gpu(2)) == "gpu(2)"
    assert mx.Context("cpu", 3) == mx.cpu(3)
    assert mx.Context(mx.gpu(1)) == mx.gpu(1)
    assert mx.Context(2, 0) == mx.gpu(0)
    assert mx.cpu_pinned(0).device_type == "cpu_pinned"


@pytest.mark.parametrize(
    "ctx, typeid",
    [(mx.cpu(), 1), (mx.gpu(), 2), (mx.cpu_pinned(), 3), (mx.Context("cpu_shared"), 5)],
)
def test_device_typeid_matches_mxnet(ctx, typeid):
    assert ctx.device_typeid == typeid
    assert mx.Context.devtype2str[typeid] == ctx.device_type


def test_equality_and_hashing():
    assert mx.cpu(0) != mx.cpu(1)
    assert mx.cpu(0) != mx.gpu(0)
    assert mx.cpu(0) != "cpu(0)"
    assert len({mx.cpu(0), mx.Context("cpu", 0), mx.cpu(1)}) == 2


@pytest.mark.parametrize("args", [("cpu", -1), ("cpu", 1.5), ("", 0), (None, 0), (9, 0)])
def test_bad_arguments(args):
    with pytest.raises((TypeError, ValueError)):
        mx.Context(*args)


def test_with_scoping_nests_and_restores():
    base = mx.current_context()
    with mx.cpu(1) as outer:
        assert outer == mx.cpu(1)
        assert mx.current_context() == mx.cpu(1)
        with mx.cpu(2):
            assert mx.current_context() == mx.cpu(2)
            assert mx.nd.zeros(1).context == mx.cpu(2)
        assert mx.current_context() == mx.cpu(1)
    assert mx.current_context() == base


def test_same_context_object_reentered():
    ctx = mx.cpu(3)
    with ctx:
        with ctx:
            assert mx.current_context() == ctx
        assert mx.current_context() == ctx
    assert mx.current_context() == mx.Context.default_ctx


def test_scope_is_per_thread():
    seen = []
    with mx.cpu(5):
        worker = threading.Thread(target=lambda: seen.append(mx.current_context()))
        worker.start()
        worker.join()
    assert seen == [mx.Context.default_ctx]


def test_default_ctx_is_settable(fresh_registry):
    assert mx.Context.default_ctx == mx.cpu(0)
    mx.Context.default_ctx = mx.cpu(4)
    try:
        assert mx.current_context() == mx.cpu(4)
        assert mx.nd.ones(2).context == mx.cpu(4)
    finally:
        mx.Context.default_ctx = None
    assert mx.current_context() == mx.cpu(0)


def test_default_ctx_is_per_thread(fresh_registry):
    # MXNet keeps Context.default_ctx in a threading.local: a thread's setting
    # stays in that thread, and a new thread starts from cpu(0)
    seen = []

    def worker():
        seen.append(mx.Context.default_ctx)
        mx.test_utils.set_default_context(mx.gpu(11))
        seen.append(mx.Context.default_ctx)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [mx.cpu(0), mx.gpu(11)]
    assert mx.Context.default_ctx == mx.cpu(0)


def test_default_ctx_inside_with_is_the_with_context():
    ready, status = threading.Event(), []

    def worker():
        with mx.cpu(10):
            ready.wait()
            status.append(mx.Context.default_ctx)

    thread = threading.Thread(target=worker)
    thread.start()
    mx.Context.default_ctx = mx.cpu(11)  # another thread's setting: no effect there
    try:
        ready.set()
        thread.join()
        assert status == [mx.cpu(10)]
        with mx.cpu(3):
            assert mx.Context.default_ctx == mx.cpu(3)
            mx.Context.default_ctx = mx.cpu(7)  # as MXNet: lasts until the block ends
            assert mx.current_context() == mx.cpu(7)
        assert mx.current_context() == mx.cpu(11)
    finally:
        mx.Context.default_ctx = None
    assert mx.current_context() == mx.cpu(0)


def test_pinned_and_shared_memory_use_the_cpu_backend():
    assert mx.cpu_pinned().backend is mx.cpu().backend
    array = mx.nd.ones(3, ctx=mx.cpu_pinned())
    assert array.context == mx.cpu_pinned()


def test_gpu_without_cupy_or_device_is_a_clear_error(fresh_registry):
    reason = registry.lookup("backends", "cupy").unavailable_reason()
    if reason is None:
        pytest.skip("a GPU is present: this test covers machines without one")
    assert mx.num_gpus() == 0
    with pytest.raises(BackendUnavailableError) as info:
        mx.nd.zeros((2, 2), ctx=mx.gpu(0))
    message = str(info.value)
    assert message.startswith("gpu(0) cannot be used:")
    assert "numpy [cpu, ready]" in message and "cupy [gpu, unavailable]" in message
    assert isinstance(info.value, RuntimeError)


def test_rebind_backend_numpy_explicitly(fresh_registry, monkeypatch):
    monkeypatch.setenv("REBIND_BACKEND", "numpy")
    registry.reset()
    assert mx.current_context() == mx.cpu(0)


def test_rebind_backend_cupy_without_gpu_fails_at_use(fresh_registry, monkeypatch):
    if registry.lookup("backends", "cupy").unavailable_reason() is None:
        pytest.skip("a GPU is present: this test covers machines without one")
    monkeypatch.setenv("REBIND_BACKEND", "cupy")
    registry.reset()
    assert mx.current_context() == mx.gpu(0)
    with pytest.raises(BackendUnavailableError, match="gpu\\(0\\) cannot be used"):
        mx.nd.zeros(1)


def test_numpy_backend_single_device_ids_are_all_usable():
    # cpu(i) names a logical device; all are served by the one host backend
    assert mx.nd.zeros(1, ctx=mx.cpu(7)).context == mx.cpu(7)
