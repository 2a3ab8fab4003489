"""N-d indexing operators (core/ops/tensor_index.py): golden replay, gradients,
NumPy references and shape inference."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

INDEX_OPS = (
    "gather_nd", "scatter_nd", "_scatter_set_nd", "_ravel_multi_index", "_unravel_index",
    "batch_take", "fill_element_0index", "_onehot_encode",
)  # fmt: skip


@pytest.mark.parametrize("case_id", case_ids(*INDEX_OPS))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _run(ctx, name, attrs, inputs):
    op = opdef(name)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(OpContext(False, ctx.backend, ctx.device_id), op.parse(attrs), arrays, [])
    return [np.asarray(ctx.backend.to_host(o)) for o in outs]


def test_gather_nd_gradient_accumulates_repeats(ctx):
    data = np.random.default_rng(1).standard_normal((3, 4))
    indices = np.array([[0, 2, 0], [1, 3, 1]], dtype=np.float32)
    check_numeric_gradient("gather_nd", {}, [data, indices], ctx, grad_args=[0])


def test_scatter_nd_gradient(ctx):
    data = np.random.default_rng(2).standard_normal((2, 3))
    indices = np.array([[2, 0]], dtype=np.float32)
    check_numeric_gradient("scatter_nd", {"shape": "(4, 3)"}, [data, indices], ctx, grad_args=[0])


def test_gather_nd_wraps_negative_and_rejects_out_of_bounds(ctx):
    data = np.arange(12.0).reshape(3, 4)
    (out,) = _run(ctx, "gather_nd", {}, [data, np.array([[-1, 0], [-4, 3]], dtype=np.float32)])
    np.testing.assert_array_equal(out, [data[2, 0], data[0, 3]])
    with pytest.raises(IndexError, match="axis 0"):
        _run(ctx, "gather_nd", {}, [data, np.array([[3], [0]], dtype=np.float32)])


def test_scatter_set_nd_keeps_other_elements(ctx):
    lhs = np.arange(12.0).reshape(3, 4)
    rhs = np.array([-1.0, -2.0])
    indices = np.array([[0, 2], [1, 3]], dtype=np.float32)
    (out,) = _run(ctx, "_scatter_set_nd", {"shape": "(3, 4)"}, [lhs, rhs, indices])
    expected = lhs.copy()
    expected[[0, 2], [1, 3]] = rhs
    np.testing.assert_array_equal(out, expected)


def test_ravel_and_unravel_are_inverse(ctx):
    coords = np.array([[1, 0, 2], [3, 1, 0]], dtype=np.float32)
    (flat,) = _run(ctx, "ravel_multi_index", {"shape": "(3, 4)"}, [coords])
    np.testing.assert_array_equal(flat, np.ravel_multi_index(coords.astype(int), (3, 4)))
    (back,) = _run(ctx, "unravel_index", {"shape": "(3, 4)"}, [flat])
    np.testing.assert_array_equal(back, coords)


def test_leading_size_may_be_left_open(ctx):
    # MXNet's test_ravel: shape=(-1, 4) ravels and unravels as (3, 4) would; the
    # first coordinate is whatever the flat index leaves after the others
    coords = np.array([[1, 0, 2, 7], [3, 1, 0, 2]], dtype=np.float32)
    (flat,) = _run(ctx, "ravel_multi_index", {"shape": "(-1, 4)"}, [coords])
    np.testing.assert_array_equal(flat, coords[0] * 4 + coords[1])
    (back,) = _run(ctx, "unravel_index", {"shape": "(-1, 4)"}, [flat])
    np.testing.assert_array_equal(back, coords)


def test_batch_take_clips_and_legacy_functions(ctx):
    a = np.arange(8.0).reshape(4, 2)
    (out,) = _run(ctx, "batch_take", {}, [a, np.array([1, -3, 0, 9], dtype=np.int32)])
    np.testing.assert_array_equal(out, [1, 2, 4, 7])
    lhs = np.zeros((3, 4))
    (out,) = _run(
        ctx, "fill_element_0index", {}, [lhs, np.array([5.0, 6, 7]), np.array([0, 2, 3.0])]
    )
    np.testing.assert_array_equal(out[[0, 1, 2], [0, 2, 3]], [5, 6, 7])
    assert out.sum() == 18
    (out,) = _run(ctx, "_onehot_encode", {}, [np.array([1.0, 0, 3]), np.zeros((3, 4))])
    np.testing.assert_array_equal(out, np.eye(4)[[1, 0, 3]])


@pytest.mark.parametrize(
    "name, attrs, shapes, expected",
    [
        ("gather_nd", {}, [(3, 4, 5), (2, 7)], [(7, 5)]),
        ("scatter_nd", {"shape": "(3, 4, 5)"}, [None, (2, 7)], [(3, 4, 5)]),
        ("_ravel_multi_index", {"shape": "(3, 4)"}, [(2, 6)], [(6,)]),
        ("_unravel_index", {"shape": "(3, 4)"}, [(6,)], [(2, 6)]),
        ("batch_take", {}, [(4, 3), (4,)], [(4,)]),
        ("_onehot_encode", {}, [(3,), (3, 5)], [(3, 5)]),
    ],
)
def test_infer_shape(name, attrs, shapes, expected):
    _, out_shapes, _ = infer(name, attrs, shapes)
    assert [tuple(s) for s in out_shapes] == expected


def test_scatter_nd_infers_data():
    in_shapes, _, _ = infer("scatter_nd", {"shape": "(3, 4, 5)"}, [None, (2, 7)])
    assert tuple(in_shapes[0]) == (7, 5)


@pytest.mark.parametrize(
    "name, attrs, shapes, argument",
    [
        ("gather_nd", {}, [(3, 4), (3, 2)], "indices"),
        ("scatter_nd", {"shape": "(3, 4)"}, [(5,), (2, 7)], "data"),
        ("_ravel_multi_index", {"shape": "(3, 4)"}, [(3, 6)], "data"),
        ("_unravel_index", {"shape": "(3, 4)"}, [(2, 6)], "data"),
        ("batch_take", {}, [(4, 3), (5,)], "indices"),
        ("fill_element_0index", {}, [(3, 4), (2,), (3,)], "mhs"),
    ],
)
def test_bad_shapes_name_the_argument(name, attrs, shapes, argument):
    with pytest.raises(ShapeError, match=f"argument '{argument}'"):
        infer(name, attrs, shapes)
