"""Convolution on ONNX Runtime's kernels (ops/conv_ort.py) against the NumPy kernels and MXNet."""

import sys

import numpy as np
import pytest

from rebind.ops import conv_ort, dnnl_lib
from rebind.ops.conv import _conv_window
from tests.ops.conv_kernels import CPU, SHAPES, run_conv, use_kernels
from tests.ops.harness import assert_close, case_ids, opdef, replay_golden

pytest.importorskip("onnxruntime", reason="the ONNX Runtime kernels need onnxruntime")


@pytest.fixture
def kernels(monkeypatch):
    """Sets ``REBIND_CONV_KERNELS``; ``auto`` chooses as without oneDNN (which it prefers)."""
    monkeypatch.setattr(dnnl_lib, "_loaded", lambda: (None, "hidden by the test"))
    yield lambda setting: use_kernels(monkeypatch, setting)
    conv_ort.kernels_setting.cache_clear()


@pytest.mark.parametrize("case_id", case_ids("Convolution"))
def test_golden_on_onnxruntime(case_id, kernels, ctx):
    kernels("onnxruntime")
    replay_golden(case_id, ctx)


@pytest.mark.parametrize("case_id", [c for c in case_ids("Convolution") if "kernels" in c])
def test_golden_large_layers_run_onnxruntime_by_default(case_id, kernels, monkeypatch):
    """Cases recorded from MXNet (cases/conv_kernels.py) that ``auto`` gives ONNX Runtime."""
    kernels("auto")
    calls = []
    session = conv_ort._session
    monkeypatch.setattr(conv_ort, "_session", lambda *key: calls.append(key[0]) or session(*key))
    replay_golden(case_id, CPU)
    assert {"Conv", "ConvTranspose"} <= set(calls)


# a layer ``auto`` runs on ONNX Runtime (its images are large enough)
LARGE = ((2, 4, 32, 32), 8, {"kernel": (3, 3), "pad": (1, 1)})


def _run(shape, filters, attrs, no_bias, transposed=False, dtype=np.float32, ctx=CPU):
    layout = "transposed" if transposed else "plain"
    return run_conv(shape, filters, attrs, no_bias, layout, dtype, ctx=ctx)


@pytest.mark.parametrize("no_bias", [False, True])
@pytest.mark.parametrize(("shape", "filters", "attrs"), SHAPES)
def test_matches_numpy_kernels(shape, filters, attrs, no_bias, kernels, ctx):
    kernels("numpy")
    expected = _run(shape, filters, attrs, no_bias, ctx=ctx)
    kernels("onnxruntime")
    for transposed in (False, True):
        actual = _run(shape, filters, attrs, no_bias, transposed, ctx=ctx)
        for name, a, e in zip(("output", "data", "weight", "bias"), actual, expected, strict=False):
            assert_close(a, e, f"{name} (transposed input: {transposed})")


def _window(shape, filters, attrs):
    params = opdef("Convolution").parse({**attrs, "num_filter": filters})
    return _conv_window(params, shape[2:])


def test_auto_takes_large_images_only(kernels):
    kernels("auto")
    small, large = (16, 64, 14, 14), (16, 64, 56, 56)
    attrs = {"kernel": (3, 3), "pad": (1, 1)}
    x = {s: np.zeros(s, np.float32) for s in (small, large)}
    w = np.zeros((64, 64, 3, 3), np.float32)
    assert conv_ort.takes_forward(np, x[large], w, _window(large, 64, attrs))
    assert conv_ort.takes_data_gradient(np, x[large], w, _window(large, 64, attrs))
    assert not conv_ort.takes_forward(np, x[small], w, _window(small, 64, attrs))
    assert not conv_ort.takes_data_gradient(np, x[small], w, _window(small, 64, attrs))
    kernels("onnxruntime")
    assert conv_ort.takes_forward(np, x[small], w, _window(small, 64, attrs))


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_other_dtypes_run_the_numpy_kernels(dtype, kernels, monkeypatch, ctx):
    shape, filters, attrs = SHAPES[0]
    kernels("numpy")
    expected = _run(shape, filters, attrs, False, dtype=dtype, ctx=ctx)
    kernels("onnxruntime")
    monkeypatch.setattr(conv_ort, "_session", _no_session)
    actual = _run(shape, filters, attrs, False, dtype=dtype, ctx=ctx)
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_array_equal(a, e)


def _no_session(*args):
    raise AssertionError("ONNX Runtime was loaded or asked to run a convolution")


def test_gpu_arrays_never_reach_onnxruntime(kernels, ctx):
    kernels("onnxruntime")
    shape, filters, attrs = SHAPES[0]
    x = ctx.backend.asarray(np.zeros(shape, np.float32), np.float32, ctx.device_id)
    w = np.zeros((filters, shape[1], 3, 3), np.float32)
    taken = conv_ort.takes_forward(ctx.backend.xp, x, w, _window(shape, filters, attrs))
    assert taken == (ctx.backend.xp is np)


def test_auto_leaves_small_layers_without_loading_onnxruntime(kernels, monkeypatch):
    shape, filters, attrs = SHAPES[0]
    kernels("numpy")
    expected = _run(shape, filters, attrs, False, ctx=CPU)
    kernels("auto")
    monkeypatch.setattr(conv_ort, "_runtime", _no_session)
    for a, e in zip(_run(shape, filters, attrs, False, ctx=CPU), expected, strict=True):
        np.testing.assert_array_equal(a, e)


def test_auto_runs_onnxruntime_on_large_images(kernels, monkeypatch):
    shape, filters, attrs = LARGE
    kernels("numpy")
    expected = _run(shape, filters, attrs, False, ctx=CPU)
    calls = []
    session = conv_ort._session
    monkeypatch.setattr(conv_ort, "_session", lambda *key: calls.append(key[0]) or session(*key))
    kernels("auto")
    for a, e in zip(_run(shape, filters, attrs, False, ctx=CPU), expected, strict=True):
        assert_close(a, e, "auto setting")
    assert calls == ["Conv", "ConvTranspose"]


def test_numpy_setting_never_calls_onnxruntime(kernels, monkeypatch):
    shape, filters, attrs = LARGE
    kernels("onnxruntime")
    expected = _run(shape, filters, attrs, False, ctx=CPU)
    kernels("numpy")
    monkeypatch.setattr(conv_ort, "_session", _no_session)
    for a, e in zip(_run(shape, filters, attrs, False, ctx=CPU), expected, strict=True):
        assert_close(a, e, "numpy setting")


def test_bad_setting_names_the_choices(kernels):
    kernels("fastest")
    with pytest.raises(ValueError, match="REBIND_CONV_KERNELS='fastest'.*auto, onnxruntime, numpy"):
        conv_ort.kernels_setting()


def test_without_onnxruntime_the_numpy_kernels_run(kernels, monkeypatch):
    shape, filters, attrs = LARGE
    kernels("numpy")
    expected = _run(shape, filters, attrs, False, ctx=CPU)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # its import fails
    monkeypatch.setattr(conv_ort, "_session", _no_session)
    conv_ort._runtime.cache_clear()
    conv_ort.warn_missing.cache_clear()
    try:
        kernels("auto")
        auto = _run(shape, filters, attrs, False, ctx=CPU)
        kernels("onnxruntime")
        with pytest.warns(RuntimeWarning, match="onnxruntime or onnx is not installed"):
            forced = _run(shape, filters, attrs, False, ctx=CPU)
    finally:
        conv_ort._runtime.cache_clear()
        conv_ort.warn_missing.cache_clear()
    for run in (auto, forced):
        for a, e in zip(run, expected, strict=True):
            np.testing.assert_array_equal(a, e)


def test_a_layer_onnxruntime_refuses_runs_the_numpy_kernels(kernels, monkeypatch):
    import onnxruntime  # noqa: PLC0415 (the test module skips without it)

    shape, filters, attrs = LARGE
    kernels("numpy")
    expected = _run(shape, filters, attrs, False, ctx=CPU)

    def refuse(*args, **kwargs):
        raise onnxruntime.capi.onnxruntime_pybind11_state.Fail("no kernel for this node")

    monkeypatch.setattr(onnxruntime, "InferenceSession", refuse)
    conv_ort._session.cache_clear()
    try:
        kernels("onnxruntime")
        actual = _run(shape, filters, attrs, False, ctx=CPU)
    finally:
        conv_ort._session.cache_clear()
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_array_equal(a, e)
