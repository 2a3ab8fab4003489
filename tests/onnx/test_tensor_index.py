"""ONNX export of gathers, selection, sorting and matrix products, run in ONNX
Runtime against rebind (converters/tensor_index.py)."""

import numpy as np
import pytest

import rebind as mx

from .harness import check_export, rebind_outputs, run_onnx

RNG = np.random.default_rng(1)
X = mx.sym.var("data")


def data(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def check(sym, inputs, tmp_path, dynamic=False, **kwargs):
    """check_export; a dynamic export is also run at twice the batch (axis 0 of every input)."""
    check_export(sym, {}, {}, inputs, tmp_path, dynamic=dynamic, **kwargs)
    if dynamic:
        other = {
            name: np.concatenate([value, value[::-1]], axis=0) for name, value in inputs.items()
        }
        expected = rebind_outputs(sym, {}, {}, other)
        got = run_onnx(tmp_path / "model.onnx", other)
        for a, b in zip(got, expected, strict=True):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# -- gathers ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["clip", "wrap", "raise"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_take(mode, axis, tmp_path):
    indices = mx.sym.var("indices")
    wild = mode != "raise"  # out-of-range indices (and negatives) only where mode allows
    values = [[0.0, 2.7, -1.5 if wild else 1.0], [5.0 if wild else 2.0, 1.2, -4.0 if wild else 0]]
    inputs = {"data": data(3, 4, 3), "indices": np.array(values, dtype="float32")}
    check(mx.sym.take(X, indices, axis=axis, mode=mode), inputs, tmp_path)


def test_take_integer_indices_dynamic(tmp_path):
    indices = mx.sym.var("indices")
    # in list_inputs() order: export_model takes in_shapes and in_types by position
    inputs = {"data": data(3, 5), "indices": np.array([[1, 0], [2, 2]], dtype="int32")}
    check(mx.sym.take(X, indices), inputs, tmp_path, dynamic=True)


@pytest.mark.parametrize(
    ("axis", "keepdims", "mode"),
    [(-1, False, "clip"), (1, True, "clip"), (0, False, "wrap"), (1, False, "wrap")],
)
def test_pick(axis, keepdims, mode, tmp_path):
    index = mx.sym.var("index")
    shape = (3, 4)
    size = shape[axis]
    rows = shape[1 - axis % 2]
    picks = RNG.integers(-2, size + 2, rows).astype("float32")
    if keepdims:
        picks = np.expand_dims(picks, axis)
    sym = mx.sym.pick(X, index, axis=axis, keepdims=keepdims, mode=mode)
    check(sym, {"data": data(*shape), "index": picks}, tmp_path)


def test_pick_1d_and_alias(tmp_path):
    index = mx.sym.var("index")
    inputs = {"data": data(5), "index": np.array([3.0], dtype="float32")}
    check(mx.sym.choose_element_0index(X, index), inputs, tmp_path)
    inputs = {"data": data(2, 3, 4), "index": RNG.integers(0, 3, (2, 4)).astype("float32")}
    check(mx.sym.pick(X, index, axis=1), inputs, tmp_path, dynamic=True)


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_one_hot(dtype, tmp_path):
    indices = np.array([[0, 3, -1], [4, 2, 1]], dtype="float32")
    sym = mx.sym.one_hot(X, depth=4, on_value=2.5, off_value=-1, dtype=dtype)
    if dtype == "uint8":
        sym = mx.sym.one_hot(X, depth=4, on_value=7, off_value=1, dtype=dtype)
    check(sym, {"data": indices}, tmp_path, dynamic=True)


def test_where(tmp_path):
    cond, y = mx.sym.var("cond"), mx.sym.var("y")
    x = mx.sym.var("x")
    condition = np.array([[1, 0, 2], [0, np.nan, -1]], dtype="float32")
    inputs = {"cond": condition, "x": data(2, 3), "y": data(2, 3)}
    check(mx.sym.where(cond, x, y), inputs, tmp_path, dynamic=True)
    inputs = {"cond": np.array([0, 3], dtype="float32"), "x": data(2, 3, 2), "y": data(2, 3, 2)}
    check(mx.sym.where(cond, x, y), inputs, tmp_path, dynamic=True)


# -- sorting -------------------------------------------------------------------------------

TIES = np.array([[3, 1, 3, 0, 1], [2, 2, 5, 2, 1]], dtype="float32")


@pytest.mark.parametrize("ret_typ", ["value", "indices", "both", "mask"])
@pytest.mark.parametrize(
    ("axis", "k", "is_ascend"), [(-1, 2, False), (0, 1, True), (None, 3, False), (1, 0, True)]
)
def test_topk(ret_typ, axis, k, is_ascend, tmp_path):
    sym = mx.sym.topk(X, axis=axis, k=k, ret_typ=ret_typ, is_ascend=is_ascend)
    check(sym, {"data": TIES}, tmp_path)


def test_topk_dtype_and_dynamic(tmp_path):
    sym = mx.sym.topk(X, axis=1, k=2, ret_typ="both", dtype="int32")
    check(sym, {"data": data(2, 5)}, tmp_path, dynamic=True)


@pytest.mark.parametrize(("axis", "is_ascend"), [(-1, True), (0, False), (None, True)])
def test_sort_and_argsort(axis, is_ascend, tmp_path):
    inputs = {"data": TIES}
    check(mx.sym.sort(X, axis=axis, is_ascend=is_ascend), inputs, tmp_path)
    check(mx.sym.argsort(X, axis=axis, is_ascend=is_ascend), inputs, tmp_path)
    check(mx.sym.argsort(X, axis=axis, dtype="int64"), inputs, tmp_path)


@pytest.mark.parametrize(("axis", "keepdims"), [(None, False), (None, True), (1, False), (0, True)])
def test_argmax_argmin(axis, keepdims, tmp_path):
    inputs = {"data": TIES}
    check(mx.sym.argmax(X, axis=axis, keepdims=keepdims), inputs, tmp_path)
    check(mx.sym.argmin(X, axis=axis, keepdims=keepdims), inputs, tmp_path)


def test_argmax_1d_and_channel(tmp_path):
    check(mx.sym.argmax(X, axis=0), {"data": TIES[0]}, tmp_path)
    check(mx.sym.argmax_channel(X), {"data": data(2, 4, 3)}, tmp_path, dynamic=True)


# -- matrix products ------------------------------------------------------------------------

DOTS = [
    ((3,), (3,), False, False),
    ((3,), (3, 4), False, False),
    ((2, 3), (3,), False, False),
    ((2, 3), (3, 4), False, False),
    ((3, 2), (3, 4), True, False),
    ((2, 3), (4, 3), False, True),
    ((3, 2), (4, 3), True, True),
    ((2, 5, 3), (3, 4), False, False),
    ((2, 5, 3), (4, 3), False, True),
    ((3, 2, 5), (3, 4), True, False),
    ((2, 3), (3, 2, 2), False, False),
    ((2, 4, 3), (3, 2, 2), False, False),
    ((3, 2, 4), (5, 2, 3), True, True),
    ((3,), (3, 2, 2), False, False),
]


@pytest.mark.parametrize(("lhs", "rhs", "transpose_a", "transpose_b"), DOTS)
def test_dot(lhs, rhs, transpose_a, transpose_b, tmp_path):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    sym = mx.sym.dot(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    inputs = {"a": data(*lhs), "b": data(*rhs)}
    check(sym, inputs, tmp_path, rtol=1e-5, atol=1e-5)


def test_dot_dynamic_batch(tmp_path):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    inputs = {"a": data(2, 5, 3), "b": data(3, 4, 2)}
    sym = mx.sym.dot(a, b)
    check_export(sym, {}, {}, inputs, tmp_path, dynamic=True, atol=1e-5)
    other = {"a": data(4, 5, 3), "b": inputs["b"]}
    got = run_onnx(tmp_path / "model.onnx", other)[0]
    np.testing.assert_allclose(got, rebind_outputs(sym, {}, {}, other)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("transpose_a", "transpose_b"), [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_batch_dot(transpose_a, transpose_b, tmp_path):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    lhs = (2, 4, 3) if transpose_a else (2, 3, 4)
    rhs = (2, 5, 4) if transpose_b else (2, 4, 5)
    sym = mx.sym.batch_dot(a, b, transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))
    check(sym, {"a": data(*lhs), "b": data(*rhs)}, tmp_path, dynamic=True, atol=1e-5)


def test_gather_nd_and_scatter_nd(tmp_path):
    indices = mx.sym.var("indices")
    coordinates = np.array([[0, 1, -1], [2, 0, 1]], dtype="float32")  # (M=2, 3)
    inputs = {"data": data(2, 3, 4), "indices": coordinates}
    check(mx.sym.gather_nd(X, indices), inputs, tmp_path)
    inputs = {"data": data(3, 4), "indices": np.array([[0, 1, 0], [2, 0, 1]], dtype="float32")}
    check(mx.sym.scatter_nd(X, indices, shape=(2, 3, 4)), inputs, tmp_path)


def test_batch_take(tmp_path):
    indices = mx.sym.var("indices")
    inputs = {"data": data(2, 3, 4), "indices": np.array([[0, 3, 9], [-1, 2, 1]], dtype="int32")}
    check(mx.sym.batch_take(X, indices), inputs, tmp_path, dynamic=True)


@pytest.mark.parametrize("axis", [-2, 0])
@pytest.mark.parametrize(("transpose_a", "transpose_b"), [(False, False), (True, True)])
def test_linalg_gemm(axis, transpose_a, transpose_b, tmp_path):
    a, b, c = mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("c")
    flags = dict(transpose_a=transpose_a, transpose_b=transpose_b, axis=axis)
    if axis == -2:  # (batch, rows, cols)
        lhs, rhs, out = (2, 3, 4), (2, 4, 5), (2, 3, 5)
        lhs = (2, 4, 3) if transpose_a else lhs
        rhs = (2, 5, 4) if transpose_b else rhs
    else:  # rows on axis 0: (rows, batch, cols)
        lhs, rhs, out = (3, 2, 4), (4, 2, 5), (3, 2, 5)
        lhs = (4, 2, 3) if transpose_a else lhs
        rhs = (5, 2, 4) if transpose_b else rhs
    inputs = {"a": data(*lhs), "b": data(*rhs)}
    check(mx.sym.linalg_gemm2(a, b, alpha=0.5, **flags), inputs, tmp_path, atol=1e-5)
    inputs["c"] = data(*out)
    sym = mx.sym.linalg_gemm(a, b, c, alpha=2.0, beta=-1.5, **flags)
    check(sym, inputs, tmp_path, atol=1e-5)
