"""The tensor family: golden replay, numeric gradients and shape inference of the
*_like operators, diag, cumsum, moments, khatri_rao, split_v2, histogram, creators
and MXNet's internal operators (core/ops/tensor_*.py, core/ops/internal_ops.py)."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

TENSOR_OPS = (
    "slice_like", "reshape_like", "broadcast_like", "diag", "_np_cumsum", "khatri_rao",
    "moments", "shape_array", "size_array", "_eye", "_linspace", "_histogram", "_split_v2",
    "_slice_assign", "_slice_assign_scalar", "_identity_with_attr_like_rhs", "_grad_add",
    "cast_storage", "_scatter_elemwise_div", "_scatter_plus_scalar", "_scatter_minus_scalar",
    "_rnn_param_concat",
)  # fmt: skip


@pytest.mark.parametrize("case_id", case_ids(*TENSOR_OPS))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _run(ctx, name, attrs, inputs, out_shapes=None):
    op = opdef(name)
    op_ctx = OpContext(False, ctx.backend, ctx.device_id, out_shapes)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(op_ctx, op.parse(attrs), arrays, [])
    return [np.asarray(ctx.backend.to_host(o)) for o in outs]


@pytest.mark.parametrize(
    "name, attrs, shapes",
    [
        ("slice_like", {"axes": "(0, -1)"}, [(3, 2, 4), (2, 5, 3)]),
        ("reshape_like", {"lhs_begin": "1", "rhs_begin": "1"}, [(2, 6), (5, 3, 2)]),
        ("broadcast_like", {}, [(1, 3, 1), (2, 3, 4)]),
        ("broadcast_like", {"lhs_axes": "(0,)", "rhs_axes": "(1,)"}, [(1, 3), (2, 4)]),
        ("diag", {"k": "1"}, [(3, 4)]),
        ("diag", {"k": "-1", "axis1": "2", "axis2": "0"}, [(3, 2, 4)]),
        ("diag", {"k": "-1"}, [(3,)]),
        ("cumsum", {}, [(2, 3)]),
        ("cumsum", {"axis": "1"}, [(2, 3, 2)]),
        ("moments", {"axes": "(0, 2)"}, [(3, 2, 4)]),
        ("moments", {"axes": "(1,)", "keepdims": "True"}, [(2, 5)]),
        ("_split_v2", {"indices": "(0, 1, 3)", "axis": "1"}, [(2, 4)]),
        (
            "_split_v2",
            {"indices": "()", "sections": "2", "axis": "0", "squeeze_axis": "1"},
            [(2, 3)],
        ),
        ("_square_sum", {"axis": "(1,)"}, [(2, 3)]),
        ("_identity_with_attr_like_rhs", {}, [(2, 3), (2, 3)]),
        ("_CrossDeviceCopy", {}, [(3,)]),
        ("_rnn_param_concat", {"num_args": "2", "dim": "0"}, [(3,), (2,)]),
        ("_scatter_elemwise_div", {}, [(2, 2), (2, 2)]),
    ],
)
def test_numeric_gradient(name, attrs, shapes, ctx):
    rng = np.random.default_rng(len(name) + len(shapes))
    inputs = [rng.uniform(0.5, 1.5, s) for s in shapes]
    grad_args = [0, 1] if name in ("_scatter_elemwise_div", "_rnn_param_concat") else [0]
    check_numeric_gradient(name, attrs, inputs, ctx, grad_args=grad_args)


def test_numpy_references(ctx):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4, 5))
    mean, var = _run(ctx, "moments", {"axes": "(0, 2)"}, [x])
    np.testing.assert_allclose(mean, x.mean(axis=(0, 2)))
    np.testing.assert_allclose(var, x.var(axis=(0, 2)))
    (out,) = _run(ctx, "diag", {"k": "2", "axis1": "1", "axis2": "2"}, [x])
    np.testing.assert_array_equal(out, np.diagonal(x, 2, 1, 2))
    (out,) = _run(ctx, "cumsum", {"axis": "1", "dtype": "float32"}, [x])
    np.testing.assert_allclose(out, np.cumsum(x, axis=1).astype(np.float32), rtol=1e-6)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((4, 3))
    (out,) = _run(ctx, "khatri_rao", {"num_args": "2"}, [a, b])
    np.testing.assert_allclose(out, np.einsum("ir,jr->ijr", a, b).reshape(8, 3))
    (out,) = _run(ctx, "_square_sum", {"axis": "(0,)", "keepdims": "1"}, [x])
    np.testing.assert_allclose(out, (x * x).sum(axis=0, keepdims=True))
    (out,) = _run(ctx, "_broadcast_backward", {"axis": "(1,)"}, [x])
    np.testing.assert_allclose(out, x.sum(axis=1))


def test_creators_and_internal_copies(ctx):
    (eye,) = _run(ctx, "_eye", {"N": "3", "M": "4", "k": "-1", "dtype": "int64"}, [])
    np.testing.assert_array_equal(eye, np.eye(3, 4, -1, dtype=np.int64))
    (line,) = _run(ctx, "_linspace", {"start": "1", "stop": "2", "num": "3"}, [])
    np.testing.assert_allclose(line, [1, 1.5, 2])
    (zeros,) = _run(ctx, "_zeros_without_dtype", {"shape": "(2, 2)", "dtype": "6"}, [])
    assert zeros.dtype == np.int64 and not zeros.any()
    (filled,) = _run(ctx, "_set_value", {"src": "2.5"}, [], out_shapes=((2, 3),))
    np.testing.assert_array_equal(filled, np.full((2, 3), 2.5, np.float32))
    with pytest.raises(ValueError, match="out="):
        _run(ctx, "_set_value", {"src": "1"}, [])
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(_run(ctx, "_copyto", {}, [x])[0], x)
    np.testing.assert_array_equal(_run(ctx, "cast_storage", {"stype": "default"}, [x])[0], x)
    # on the dense buffers a kernel receives, a cast to a sparse storage keeps the values
    np.testing.assert_array_equal(_run(ctx, "cast_storage", {"stype": "row_sparse"}, [x])[0], x)


def test_histogram_edges_follow_numpy(ctx):
    data = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, -1.0, 3.0], dtype=np.float32)
    counts, edges = _run(ctx, "_histogram", {"bin_cnt": "4", "range": "(0, 2)"}, [data])
    want_counts, want_edges = np.histogram(data, bins=4, range=(0, 2))
    np.testing.assert_array_equal(counts, want_counts)
    np.testing.assert_allclose(edges, want_edges)
    bins = np.array([0, 1, 2.5], dtype=np.float32)
    counts, _ = _run(ctx, "_histogram", {}, [data, bins])
    np.testing.assert_array_equal(counts, np.histogram(data, bins=bins)[0])


@pytest.mark.parametrize(
    "name, attrs, shapes, expected",
    [
        ("slice_like", {"axes": "(1,)"}, [(3, 4), (9, 2)], [(3, 2)]),
        ("slice_like", {}, [(3, 4), None], [None]),
        ("reshape_like", {"lhs_begin": "-1", "rhs_end": "2"}, [(2, 6), (3, 2, 9)], [(2, 3, 2)]),
        ("broadcast_like", {}, [(1, 3), (4, 0)], [(4, 3)]),
        ("diag", {}, [(5,)], [(5, 5)]),
        ("diag", {"k": "-2"}, [(2, 3)], [(0,)]),
        ("cumsum", {}, [(2, 3)], [(6,)]),
        ("moments", {"axes": "(1,)"}, [(2, 3)], [(2,), (2,)]),
        ("shape_array", {}, [(2, 3, 4)], [(3,)]),
        ("size_array", {}, [(2, 3, 4)], [(1,)]),
        ("khatri_rao", {"num_args": "2"}, [(2, 3), (5, 3)], [(10, 3)]),
        ("_split_v2", {"indices": "(0, 2)"}, [(3, 5)], [(3, 2), (3, 3)]),
        ("_histogram", {"bin_cnt": "3", "range": "(0, 1)"}, [(7,)], [(3,), (4,)]),
        ("_histogram", {}, [(7,), (5,)], [(4,), (5,)]),
        ("_slice_assign", {"begin": "(1,)", "end": "(3,)"}, [(4, 2), None], [(4, 2)]),
    ],
)
def test_infer_shape(name, attrs, shapes, expected):
    _, out_shapes, _ = infer(name, attrs, shapes)
    assert [None if s is None else tuple(s) for s in out_shapes] == expected


@pytest.mark.parametrize(
    "name, attrs, shapes, argument",
    [
        ("slice_like", {}, [(3, 4), (2, 5)], "shape_like"),
        ("slice_like", {}, [(3, 4), (2, 3, 1)], "shape_like"),
        ("reshape_like", {}, [(2, 3), (4, 2)], "rhs"),
        ("broadcast_like", {}, [(2, 3), (4, 3)], "lhs"),
        ("broadcast_like", {}, [(2, 3), (4, 3, 1)], "rhs"),
        ("diag", {"axis1": "1", "axis2": "1"}, [(2, 3)], "data"),
        ("moments", {}, [(2, 3)], "data"),
        ("khatri_rao", {"num_args": "2"}, [(2, 3), (5, 4)], "arg1"),
        ("_split_v2", {"indices": "()", "sections": "2"}, [(3, 5)], "data"),
        ("_split_v2", {"indices": "(0, 1)", "squeeze_axis": "1"}, [(3, 5)], "data"),
        ("_histogram", {}, [(7,), (3, 2)], "bins"),
        ("_slice_assign", {"begin": "(1,)", "end": "(3,)"}, [(4, 2), (3, 2)], "rhs"),
    ],
)
def test_bad_shapes_name_the_argument(name, attrs, shapes, argument):
    with pytest.raises(ShapeError, match=f"argument '{argument}'"):
        infer(name, attrs, shapes)


def test_int_outputs_and_dtypes():
    op = opdef("shape_array")
    assert op.infer_types(op.parse({}), ["float32"])[1] == ["int64"]
    op = opdef("cumsum")
    assert op.infer_types(op.parse({"dtype": "float64"}), ["float32"])[1] == ["float64"]
    op = opdef("_histogram")
    assert op.infer_types(op.parse({}), ["float16", "float16"])[1] == ["int64", "float16"]


def test_split_v2_backward_joins_pieces(ctx):
    pieces = [np.ones((2, 3)), np.zeros((2, 3))]
    attrs = {"indices": "(0, 1)", "axis": "1", "squeeze_axis": "1"}
    (out,) = _run(ctx, "_split_v2_backward", attrs, pieces)
    np.testing.assert_array_equal(out, np.stack(pieces, axis=1))


@pytest.mark.parametrize(("k", "size"), [(4, 0), (-3, 0), (5, None), (-4, None)])
def test_diag_offset_past_the_matrix(k, size):
    # MXNet: an empty diagonal at the edge, "Diagonal does not exist" beyond it
    if size is None:
        with pytest.raises(ShapeError, match="does not exist"):
            infer("diag", {"k": str(k)}, [(3, 4)])
    else:
        assert infer("diag", {"k": str(k)}, [(3, 4)])[1] == [(size,)]
