"""Reductions (sum, mean, prod, max, min, nansum, nanprod, norm): golden, gradients, shapes."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

REDUCTIONS = ("sum", "mean", "prod", "max", "min", "nansum", "nanprod")


@pytest.mark.parametrize("case_id", case_ids(*REDUCTIONS, "norm"))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def run(op_name, attrs, inputs, ctx, head=None):
    """Forward on host arrays; with ``head``, also backward: (outputs, gradient)."""
    op = opdef(op_name)
    params = op.parse(attrs)
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    on = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, saved = op.forward(op_ctx, params, on, [])
    host = [np.asarray(ctx.backend.to_host(o)) for o in outs]
    if head is None:
        return host, None
    heads = [ctx.backend.asarray(head, head.dtype, ctx.device_id)]
    grads = op.backward(op_ctx, params, saved, heads, [True] * len(inputs))
    return host, np.asarray(ctx.backend.to_host(grads[0]))


AXES_VARIANTS = [
    {},
    {"axis": "1"},
    {"axis": "(0, 2)", "keepdims": "True"},
    {"axis": "1", "exclude": "True"},
    {"axis": "-1", "keepdims": "True", "exclude": "True"},
]


@pytest.mark.parametrize("op_name", REDUCTIONS)
@pytest.mark.parametrize("attrs", AXES_VARIANTS)
def test_numeric_gradient(op_name, attrs, ctx):
    rng = np.random.default_rng(3)
    # distinct values away from 0: no max/min ties, no prod kinks
    data = rng.permutation(np.linspace(0.5, 1.5, 24)).reshape(2, 3, 4)
    data *= rng.choice([-1.0, 1.0], size=data.shape)
    check_numeric_gradient(op_name, attrs, [data], ctx)


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"ord": "1"},
        {"axis": "1"},
        {"axis": "(0, 2)", "ord": "2", "keepdims": "True"},
        {"axis": "-1", "ord": "1"},
    ],
)
def test_norm_numeric_gradient(attrs, ctx):
    rng = np.random.default_rng(4)
    data = rng.uniform(0.2, 1.0, (2, 3, 4)) * rng.choice([-1.0, 1.0], size=(2, 3, 4))
    check_numeric_gradient("norm", attrs, [data], ctx)


def test_max_and_min_ties_give_every_extreme_the_whole_gradient(ctx):
    data = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 0.0]], dtype=np.float32)
    head = np.array([2.0, 5.0], dtype=np.float32)
    (out,), grad = run("max", {"axis": "1"}, [data], ctx, head)
    np.testing.assert_array_equal(out, [3.0, 2.0])
    np.testing.assert_array_equal(grad, [[0, 2, 2], [5, 0, 0]])
    (out,), grad = run("min", {"axis": "1"}, [data], ctx, head)
    np.testing.assert_array_equal(grad, [[2, 0, 0], [0, 5, 5]])


def test_prod_gradient_is_exact_with_zeros(ctx):
    data = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 5.0]])
    (out,), grad = run("prod", {"axis": "1"}, [data], ctx, np.ones(3))
    np.testing.assert_array_equal(out, [0, 0, 10])
    # one zero: only it has a gradient (the product of the others); two zeros: none
    np.testing.assert_array_equal(grad, [[0, 6, 0], [0, 0, 0], [10, 5, 2]])


def test_nan_reductions_skip_nan(ctx):
    data = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 2.0]], dtype=np.float32)
    (out,), grad = run("nansum", {"axis": "1"}, [data], ctx, np.ones(2, np.float32))
    np.testing.assert_array_equal(out, [4, 2])
    np.testing.assert_array_equal(grad, [[1, 0, 1], [0, 0, 1]])
    (out,), grad = run("nanprod", {"axis": "1"}, [data], ctx, np.ones(2, np.float32))
    np.testing.assert_array_equal(out, [3, 2])
    np.testing.assert_array_equal(grad, [[3, 0, 1], [0, 0, 1]])


def test_float16_sum_accumulates_in_float32(ctx):
    data = np.full(4096, 0.1, dtype=np.float16)
    (out,), _ = run("sum", {}, [data], ctx)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, [4096 * np.float32(np.float16(0.1))], rtol=1e-3)


def test_norm_matches_numpy_and_takes_out_dtype(ctx):
    data = np.arange(-6, 6, dtype=np.float32).reshape(3, 4)
    (out,), _ = run("norm", {"axis": "1", "ord": "1", "out_dtype": "float64"}, [data], ctx)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, np.abs(data).sum(axis=1))
    (out,), _ = run("norm", {}, [data], ctx)
    np.testing.assert_allclose(out, [np.sqrt((data.astype(np.float64) ** 2).sum())], rtol=1e-6)
    assert opdef("norm").infer_types(opdef("norm").parse({"out_dtype": "float16"}), ["float32"])[
        1
    ] == ["float16"]


def test_norm_gradient_of_zero_vector_is_zero(ctx):
    (out,), grad = run("norm", {"axis": "1"}, [np.zeros((2, 3))], ctx, np.ones(2))
    np.testing.assert_array_equal(out, [0, 0])
    np.testing.assert_array_equal(grad, np.zeros((2, 3)))


@pytest.mark.parametrize(
    "attrs, expected",
    [
        ({}, (1,)),
        ({"axis": "()"}, (1,)),
        ({"keepdims": "True"}, (1, 1, 1, 1)),
        ({"axis": "(0, 1, 2, 3)"}, (1,)),
        ({"axis": "(1, -1)"}, (2, 4)),
        ({"axis": "(1, -1)", "keepdims": "True"}, (2, 1, 4, 1)),
        ({"axis": "(1, -1)", "exclude": "True"}, (3, 5)),
        ({"axis": "(1, 3)", "exclude": "True", "keepdims": "True"}, (1, 3, 1, 5)),
        ({"axis": "()", "exclude": "True"}, (1,)),
    ],
)
def test_reduce_output_shapes(attrs, expected):
    for op_name in ("sum", "max", "nanprod"):
        _, outs, _ = infer(op_name, attrs, [(2, 3, 4, 5)])
        assert outs == [expected]


def test_reduce_shapes_with_unknown_dimensions_and_input():
    assert infer("mean", {"axis": "1"}, [(0, 3, 4)])[1] == [(0, 4)]
    assert infer("mean", {"axis": "1"}, [None])[1] == [None]
    assert infer("norm", {"axis": "(1, 2)", "keepdims": "True"}, [(2, 3, 4)])[1] == [(2, 1, 1)]


@pytest.mark.parametrize("attrs", [{"axis": "3"}, {"axis": "-4"}, {"axis": "(0, -3)"}])
def test_bad_axis_is_a_shape_error_naming_the_node(attrs):
    with pytest.raises(ShapeError) as info:
        infer("sum", attrs, [(2, 3, 4)])
    assert "node0" in str(info.value) and "(2, 3, 4)" in str(info.value)


def test_output_shape_conflict():
    with pytest.raises(ShapeError):
        infer("sum", {"axis": "0"}, [(2, 3)], out_shapes=[(2,)])


@pytest.mark.parametrize(
    "op_name, attrs, fragment",
    [
        ("sum", {"keepdims": "maybe"}, "keepdims='maybe' is invalid"),
        ("sum", {"axis": "x"}, "axis='x' is invalid"),
        ("mean", {"axes": "1"}, "unknown parameter 'axes'"),
        ("norm", {"ord": "3"}, "only ord=1 and ord=2"),
        ("norm", {"out_dtype": "uint8"}, "out_dtype='uint8' is invalid"),
    ],
)
def test_bad_params(op_name, attrs, fragment):
    with pytest.raises(ParamError, match=fragment):
        opdef(op_name).parse(attrs)


@pytest.mark.parametrize("ord_", [1, 2])
def test_norm_over_three_axes_is_the_elementwise_norm(ctx, ord_):
    # MXNet 1.9.1: norm(x, ord, axis=(0, 1, 2)) is the vector norm of all the elements
    x = np.arange(24.0).reshape(2, 3, 4) - 11
    op = opdef("norm")
    params = op.parse({"ord": str(ord_), "axis": "(0, 1, 2)"})
    (out,), _ = op.forward(
        OpContext(True, ctx.backend, ctx.device_id),
        params,
        [ctx.backend.asarray(x, "float64", ctx.device_id)],
        [],
    )
    expected = np.abs(x).sum() if ord_ == 1 else np.sqrt((x * x).sum())
    np.testing.assert_allclose(np.asarray(ctx.backend.to_host(out)).reshape(()), expected)
    check_numeric_gradient("norm", {"ord": "2", "axis": "(0, 2)"}, [x + 0.5], ctx)


def test_aliases():
    assert opdef("sum_axis") is opdef("sum")
    assert opdef("max_axis") is opdef("max")
    assert opdef("min_axis") is opdef("min")
