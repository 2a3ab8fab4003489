"""Convolution on PyTorch's kernels (ops/conv_torch.py) against the NumPy kernels and MXNet.

torch is an optional heavy extra (``pip install 'rebind[torch-kernels]'``),
not part of the ``test`` extra: without it these tests are skipped, and the
tests at the end check that a plain install never imports it.
"""

import sys

import numpy as np
import pytest

from rebind.ops import OpContext, conv_ort, conv_torch
from tests.conftest import BACKEND_CONTEXTS
from tests.ops.harness import assert_close, case_ids, opdef, replay_golden

CPU = BACKEND_CONTEXTS["numpy"]
# (data shape, num_filter, attributes): strides, padding, dilation, groups,
# depthwise, 1x1, batch 1, 1-D and 3-D
SHAPES = [
    ((2, 3, 9, 9), 4, {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)}),
    ((1, 4, 10, 11), 6, {"kernel": (3, 2), "stride": (2, 3), "dilate": (2, 1), "pad": (1, 0)}),
    ((2, 4, 8, 7), 6, {"kernel": (3, 3), "pad": (2, 1), "num_group": 2}),
    ((3, 6, 8, 8), 6, {"kernel": (3, 3), "pad": (1, 1), "num_group": 6}),
    ((2, 8, 7, 7), 16, {"kernel": (1, 1), "stride": (2, 2)}),
    ((2, 5, 13), 3, {"kernel": (4,), "stride": (3,), "dilate": (2,), "pad": (1,)}),
    ((2, 2, 5, 6, 7), 3, {"kernel": (2, 3, 2), "stride": (2, 1, 2), "pad": (1, 0, 1)}),
    ((1, 3, 30, 30), 8, {"kernel": (7, 7), "stride": (2, 2), "pad": (3, 3)}),
]


@pytest.fixture
def kernels(monkeypatch):
    """Sets ``REBIND_CONV_KERNELS`` for the test (the setting is otherwise read once)."""

    def use(setting):
        monkeypatch.setenv(conv_ort.KERNELS_VARIABLE, setting)
        conv_ort.kernels_setting.cache_clear()

    yield use
    conv_ort.kernels_setting.cache_clear()


@pytest.fixture
def torch_calls(monkeypatch):
    """The names of the conv_torch kernels called during the test."""
    calls = []
    for name in ("forward", "backward"):
        kernel = getattr(conv_torch, name)
        monkeypatch.setattr(conv_torch, name, _recording(calls, name, kernel))
    return calls


def _recording(calls, name, kernel):
    def run(*args):
        calls.append(name)
        return kernel(*args)

    return run


def _run(shape, filters, attrs, no_bias, transposed=False, dtype=np.float32, need=None):
    """Forward (training) and the asked gradients of one Convolution on the CPU."""
    rng = np.random.default_rng(31)
    op = opdef("Convolution")
    params = op.parse({**attrs, "num_filter": filters, "no_bias": no_bias})
    groups = attrs.get("num_group", 1)
    x = rng.standard_normal(shape).astype(dtype)
    if transposed:  # a view whose strides are not (N, C, *spatial)'s
        x = np.ascontiguousarray(np.swapaxes(x, -1, -2)).swapaxes(-1, -2)
    w = rng.standard_normal((filters, shape[1] // groups, *attrs["kernel"])).astype(dtype)
    inputs = [x, w] + ([] if no_bias else [rng.standard_normal(filters).astype(dtype)])
    op_ctx = OpContext(True, CPU.backend, CPU.device_id)
    outs, saved = op.forward(op_ctx, params, inputs, [])
    head = rng.standard_normal(outs[0].shape).astype(dtype)
    need = [True] * len(inputs) if need is None else need
    grads = op.backward(op_ctx, params, saved, [head], need)
    return [outs[0], *grads]


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
    shape, filters, attrs = SHAPES[2]
    kernels("numpy")
    expected = _run(shape, filters, attrs, False, need=need)
    kernels("torch")
    actual = _run(shape, filters, attrs, False, need=need)
    for asked, a, e in zip([True, *need], actual, expected, strict=True):
        assert (a is None) == (not asked)
        if asked:
            assert_close(a, e, "gradient")


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
    shape, filters, attrs = SHAPES[0]
    kernels("numpy")
    expected = _run(shape, filters, attrs, False, dtype=dtype)
    kernels("torch")
    actual = _run(shape, filters, attrs, False, dtype=dtype)
    assert torch_calls == []
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_array_equal(a, e)


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
    conv_torch._warn_missing.cache_clear()
    try:
        kernels("torch")
        with pytest.warns(RuntimeWarning, match="torch is not installed"):
            actual = _run(shape, filters, attrs, False)
    finally:
        conv_torch._torch.cache_clear()
        conv_torch._warn_missing.cache_clear()
    assert torch_calls == []
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_array_equal(a, e)
