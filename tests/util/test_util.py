"""mx.util: environment variables, GPU facts and the NumPy-mode switches."""

import os

import pytest

import rebind as mx
from rebind.errors import BackendUnavailableError


def test_getenv_setenv_round_trip(monkeypatch):
    monkeypatch.delenv("REBIND_UTIL_T", raising=False)
    assert mx.util.getenv("REBIND_UTIL_T") is None
    mx.util.setenv("REBIND_UTIL_T", "1")
    assert os.environ["REBIND_UTIL_T"] == "1" and mx.util.getenv("REBIND_UTIL_T") == "1"
    mx.util.setenv("REBIND_UTIL_T", None)
    assert "REBIND_UTIL_T" not in os.environ


def test_gpu_count_agrees_with_the_context_module():
    assert mx.util.get_gpu_count() == mx.context.num_gpus()


def test_gpu_memory_without_a_gpu_names_what_is_missing():
    if mx.util.get_gpu_count() > 0:
        pytest.skip("a GPU is present: the error path cannot be taken")
    with pytest.raises(BackendUnavailableError, match="CuPy|device"):
        mx.util.get_gpu_memory(0)
    with pytest.raises(BackendUnavailableError):
        mx.context.gpu_memory_info()


@pytest.mark.gpu
def test_gpu_memory_and_compute_capability_on_a_gpu():
    if mx.util.get_gpu_count() == 0:
        pytest.skip("no GPU (or no CuPy) on this machine")
    free, total = mx.util.get_gpu_memory(0)
    assert 0 < free <= total and mx.context.gpu_memory_info(0)[1] == total
    assert mx.util.get_cuda_compute_capability(mx.gpu(0)) >= 30


def test_compute_capability_needs_a_gpu_context():
    with pytest.raises(ValueError, match="not a GPU context"):
        mx.util.get_cuda_compute_capability(mx.cpu())


def test_set_module_renames_the_module():
    @mx.util.set_module("mxnet.ndarray")
    def f():
        return 1

    assert f.__module__ == "mxnet.ndarray" and f() == 1


def test_numpy_mode_is_off_and_cannot_be_switched_on():
    assert mx.util.is_np_array() is False and mx.util.is_np_shape() is False
    assert mx.util.set_np_shape(False) is False
    mx.util.reset_np()
    mx.util.set_np(shape=False, array=False)
    with mx.util.np_shape(False), mx.util.np_array(False):
        pass
    with pytest.raises(NotImplementedError, match="NumPy-compatible mode"):
        mx.util.set_np_shape(True)
    with pytest.raises(NotImplementedError, match="NumPy-compatible mode"):
        mx.util.set_np()
    with pytest.raises(NotImplementedError, match="NumPy-compatible mode"), mx.util.np_shape():
        pass


def test_use_np_decorates_at_import_and_refuses_when_run():
    @mx.util.use_np
    def uses_numpy_mode():
        return "ran"

    with pytest.raises(NotImplementedError, match="use_np"):
        uses_numpy_mode()
