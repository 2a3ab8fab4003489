"""ONNX export of the reductions (axis, keepdims, exclude), norm, moments, cumsum
and softmax_cross_entropy, run in ONNX Runtime against rebind (converters/reduce.py),
at opset 13 (axes as attributes but ReduceSum's) and 18 (axes as inputs)."""

import numpy as np
import pytest

import rebind as mx

from .harness import check_export, rebind_outputs, run_onnx

RNG = np.random.default_rng(3)
X = mx.sym.var("data")


def data(*shape, dtype="float32"):
    return RNG.uniform(-2, 2, shape).astype(dtype)


def check(sym, inputs, tmp_path, **kwargs):
    check_export(sym, {}, {}, inputs, tmp_path, **kwargs)


AXES = [
    dict(),
    dict(axis=1),
    dict(axis=(0, 2)),
    dict(axis=-1, keepdims=True),
    dict(axis=(0, 1, 2)),
    dict(axis=(0, 1, 2), keepdims=True),
    dict(axis=1, exclude=True),
    dict(axis=(0, -1), exclude=True, keepdims=True),
    dict(axis=(0, 1, 2), exclude=True),
]


@pytest.mark.parametrize("opset", [13, 17, 18])
@pytest.mark.parametrize("kwargs", AXES)
@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min"])
def test_reductions(name, kwargs, opset, tmp_path):
    sym = getattr(mx.sym, name)(X, **kwargs)
    check(sym, {"data": data(2, 3, 4)}, tmp_path, opset_version=opset, rtol=1e-5, atol=1e-5)


def test_aliases_and_integers(tmp_path):
    x = np.array([[1, -2, 3], [4, 5, -6]], dtype="int32")
    for sym in (
        mx.sym.sum_axis(X, axis=1),
        mx.sym.max_axis(X, axis=0),
        mx.sym.min_axis(X),
        mx.sym.prod(X, axis=1),
    ):
        check(sym, {"data": x}, tmp_path)


@pytest.mark.parametrize("name", ["nansum", "nanprod"])
def test_nan_reductions(name, tmp_path):
    x = data(2, 3, 4)
    x[0, 1, 2] = x[1, 0, 0] = np.nan
    for kwargs in (dict(), dict(axis=1), dict(axis=(0, 2), keepdims=True)):
        check(getattr(mx.sym, name)(X, **kwargs), {"data": x}, tmp_path, atol=1e-5)


def test_float16_accumulates_in_float32(tmp_path):
    x = data(4, 64, dtype="float16")
    for name in ("sum", "mean"):
        check(getattr(mx.sym, name)(X, axis=1), {"data": x}, tmp_path, rtol=1e-3, atol=1e-3)


def test_dynamic_batch(tmp_path):
    sym = mx.sym.sum(X, axis=0, exclude=True) + mx.sym.mean(X, axis=(1, 2))
    x = data(2, 3, 4)
    check(sym, {"data": x}, tmp_path, dynamic=True)
    other = {"data": data(5, 3, 4)}
    got = run_onnx(tmp_path / "model.onnx", other)[0]
    np.testing.assert_allclose(got, rebind_outputs(sym, {}, {}, other)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("ord_", [1, 2])
@pytest.mark.parametrize("kwargs", [dict(), dict(axis=1), dict(axis=(0, 2), keepdims=True)])
def test_norm(ord_, kwargs, opset, tmp_path):
    sym = mx.sym.norm(X, ord=ord_, **kwargs)
    check(sym, {"data": data(2, 3, 4)}, tmp_path, opset_version=opset)


def test_norm_dtypes(tmp_path):
    x = np.array([[3, -4], [1, 2]], dtype="int32")
    check(mx.sym.norm(X, axis=1), {"data": x}, tmp_path)
    check(mx.sym.norm(X, ord=1, out_dtype="float64"), {"data": data(2, 3)}, tmp_path)


@pytest.mark.parametrize(
    "kwargs", [dict(axes=(1,)), dict(axes=(0, 2), keepdims=True), dict(axes=(0, 1, 2))]
)
def test_moments(kwargs, tmp_path):
    check(mx.sym.moments(X, **kwargs), {"data": data(2, 3, 4)}, tmp_path, atol=1e-5)


@pytest.mark.parametrize("kwargs", [dict(), dict(axis=1), dict(axis=-1, dtype="float64")])
def test_cumsum(kwargs, tmp_path):
    check(mx.sym.cumsum(X, **kwargs), {"data": data(2, 3, 4)}, tmp_path, atol=1e-5)


def test_softmax_cross_entropy(tmp_path):
    label = mx.sym.var("label")
    inputs = {"data": data(4, 5), "label": np.array([0, 4, 2, 7], dtype="float32")}
    check(mx.sym.softmax_cross_entropy(X, label), inputs, tmp_path, atol=1e-5)
