"""Convolution on PyTorch's kernels (ops/conv_torch.py) against the NumPy kernels and MXNet.

torch is an optional heavy extra (``pip install 'rebind[torch-kernels]'``),
not part of the ``test`` extra: without it these tests are skipped, and the
tests at the end check that a plain install never imports it.
"""

import sys

import numpy as np
import pytest

from rebind.ops import conv_ort, conv_torch
from tests.ops.conv_kernels import (
    CPU,
    SHAPES,
    check_only_the_asked_gradients,
    check_other_dtypes_run_numpy,
    recording,
    run_conv,
)
from tests.ops.harness import assert_close, case_ids, replay_golden


@pytest.fixture
def torch_calls(monkeypatch):
    """The names of the conv_torch kernels called during the test."""
    return recording(monkeypatch, conv_torch, ("forward", "backward"))


def _run(shape, filters, attrs, no_bias, transposed=False, dtype=np.float32, need=None):
    layout = "transposed" if transposed else "plain"
    return run_conv(shape, filters, attrs, no_bias, layout, dtype, need)


@pytest.mark.parametrize("no_bias", [False, True])
@pytest.mark.parametrize(("shape", "filters", "attrs"), SHAPES)
def test_matches_numpy_kernels(shape, filters, attrs, no_bias, kernels, torch_calls):
    pytest.importorskip("torch", reason="the PyTorch kernels need torch (an optional extra)")
    kernels("numpy")
    expected = _run(shape, filters, attrs, no_bias)
    assert torch_calls == []
    kernels("torch")
    for transposed in (False, True):
        actual = _run(shape, filters, attrs, no_bias, transposed)
        for name, a, e in zip(("output", "data", "weight", "bias"), actual, expected, strict=False):
            assert isinstance(a, np.ndarray), name
            assert a.dtype == np.float32, name
            assert_close(a, e, f"{name} (transposed input: {transposed})")
    assert torch_calls == ["forward", "backward"] * 2


@pytest.mark.parametrize("need", [[True, False, False], [False, True, False], [False, False, True]])
def test_only_the_asked_gradients(need, kernels):
    pytest.importorskip("torch", reason="the PyTorch kernels need torch (an optional extra)")
    check_only_the_asked_gradients(kernels, "torch", need)


@pytest.mark.parametrize("case_id", case_ids("Convolution"))
def test_golden_on_torch(case_id, kernels, torch_calls):
    """Every Convolution case recorded from MXNet 1.9.1, float32 ones on torch's kernels."""
    pytest.importorskip("torch", reason="the PyTorch kernels need torch (an optional extra)")
    kernels("torch")
    replay_golden(case_id, CPU)
    if "kernels" in case_id:  # cases/conv_kernels.py: float32 layers
        assert "forward" in torch_calls


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_other_dtypes_run_the_numpy_kernels(dtype, kernels, torch_calls):
    check_other_dtypes_run_numpy(kernels, "torch", dtype, torch_calls)


@pytest.mark.parametrize("setting", ["auto", "numpy", "onnxruntime"])
def test_other_settings_never_import_torch(setting, kernels, monkeypatch, torch_calls):
    shape, filters, attrs = SHAPES[0]
    monkeypatch.setattr(conv_torch, "_torch", _no_torch)
    kernels(setting)
    _run(shape, filters, attrs, False)
    assert torch_calls == []


def _no_torch():
    raise AssertionError("torch was imported for a convolution")


def test_without_torch_the_numpy_kernels_run(kernels, monkeypatch, torch_calls):
    shape, filters, attrs = SHAPES[0]
    kernels("numpy")
    expected = _run(shape, filters, attrs, False)
    monkeypatch.setitem(sys.modules, "torch", None)  # its import fails
    conv_torch._torch.cache_clear()
    conv_ort.warn_missing.cache_clear()
    try:
        kernels("torch")
        with pytest.warns(RuntimeWarning, match="torch is not installed"):
            actual = _run(shape, filters, attrs, False)
    finally:
        conv_torch._torch.cache_clear()
        conv_ort.warn_missing.cache_clear()
    assert torch_calls == []
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_array_equal(a, e)
