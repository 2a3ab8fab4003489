"""Unary math, _copy, BlockGrad and Cast: golden cases, finite differences, inference."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

GOLDEN_OPS = (
    "abs",
    "cbrt",
    "erf",
    "exp",
    "expm1",
    "floor",
    "log",
    "log10",
    "log1p",
    "log2",
    "negative",
    "reciprocal",
    "relu",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "softsign",
    "sqrt",
    "square",
    "tanh",
    "_copy",
    "BlockGrad",
    "Cast",
)

# op -> (low, high) of inputs inside its domain and away from kinks
SMOOTH = {
    "abs": (0.2, 2.0),
    "negative": (-2, 2),
    "reciprocal": (0.5, 2),
    "square": (-2, 2),
    "sqrt": (0.5, 2),
    "rsqrt": (0.5, 2),
    "cbrt": (0.5, 2),
    "rcbrt": (0.5, 2),
    "exp": (-2, 2),
    "expm1": (-2, 2),
    "log": (0.5, 2),
    "log10": (0.5, 2),
    "log2": (0.5, 2),
    "log1p": (-0.5, 2),
    "erf": (-2, 2),
    "relu": (0.2, 2),
    "sigmoid": (-3, 3),
    "softsign": (0.2, 2),
    "tanh": (-2, 2),
    "sinh": (-2, 2),
    "cosh": (-2, 2),
    "arcsinh": (-2, 2),
    "arccosh": (1.5, 3),
    "arctanh": (-0.8, 0.8),
    "sin": (-2, 2),
    "cos": (-2, 2),
    "tan": (-1, 1),
    "arcsin": (-0.8, 0.8),
    "arccos": (-0.8, 0.8),
    "arctan": (-2, 2),
    "degrees": (-2, 2),
    "radians": (-2, 2),
}
STEPS = ("sign", "floor", "ceil", "trunc", "fix", "rint", "round")

# ops without golden cases: forward against NumPy's function of the same meaning
NUMPY_EQUIVALENT = {
    "ceil": np.ceil,
    "trunc": np.trunc,
    # towards zero, by its definition (NumPy 2.5 deprecates np.fix)
    "fix": lambda x: np.where(x < 0, np.ceil(x), np.floor(x)),
    "rint": np.rint,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "arcsin": np.arcsin,
    "arccos": np.arccos,
    "arctan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "arcsinh": np.arcsinh,
    "arccosh": np.arccosh,
    "arctanh": np.arctanh,
    "degrees": np.degrees,
    "radians": np.radians,
    "rcbrt": lambda x: 1 / np.cbrt(x),
}


def _run(op_name, attrs, inputs, ctx, is_train=True):
    op = opdef(op_name)
    params = op.parse(attrs)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, saved = op.forward(OpContext(is_train, ctx.backend, ctx.device_id), params, arrays, [])
    return op, params, outs, saved


def _host(ctx, array):
    return np.asarray(ctx.backend.to_host(array))


@pytest.mark.parametrize("case_id", case_ids(*GOLDEN_OPS))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


@pytest.mark.parametrize("op_name", sorted(SMOOTH))
def test_numeric_gradient(op_name, ctx):
    low, high = SMOOTH[op_name]
    data = np.random.default_rng(3).uniform(low, high, (2, 3))
    check_numeric_gradient(op_name, {}, [data], ctx)


@pytest.mark.parametrize("op_name", STEPS)
def test_piecewise_constant_ops_have_zero_gradient(op_name, ctx):
    data = np.array([[-1.7, -0.3, 0.4], [1.2, 2.6, -3.5]])
    op, params, _, saved = _run(op_name, {}, [data], ctx)
    head = ctx.backend.asarray(np.ones((2, 3)), "float64", ctx.device_id)
    grads = op.backward(OpContext(True, ctx.backend, ctx.device_id), params, saved, [head], [True])
    assert np.all(_host(ctx, grads[0]) == 0)


@pytest.mark.parametrize("op_name", sorted(NUMPY_EQUIVALENT))
def test_forward_matches_numpy(op_name, ctx):
    low, high = SMOOTH.get(op_name, (-3, 3))
    data = np.random.default_rng(4).uniform(low, high, (3, 4)).astype(np.float32)
    _, _, outs, _ = _run(op_name, {}, [data], ctx)
    np.testing.assert_allclose(_host(ctx, outs[0]), NUMPY_EQUIVALENT[op_name](data), rtol=1e-6)
    assert outs[0].dtype == np.float32


def test_round_sends_halves_away_from_zero_and_rint_down(ctx):
    data = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -0.49999997], np.float32)
    _, _, outs, _ = _run("round", {}, [data], ctx)
    np.testing.assert_array_equal(_host(ctx, outs[0]), [-3, -2, -1, 1, 2, 3, 0, 0])
    # MXNet's rint takes the floor on a tie (its kernel: x - floor <= ceil - x), not the even
    _, _, outs, _ = _run("rint", {}, [data], ctx)
    np.testing.assert_array_equal(_host(ctx, outs[0]), [-3, -2, -1, 0, 1, 2, 0, 0])


@pytest.mark.parametrize("dtype", ["float16", "float64", "int32"])
def test_results_keep_the_input_dtype(dtype, ctx):
    data = np.array([[0, 1], [4, 9]], dtype=dtype)  # exp stays inside float16
    for op_name in ("sqrt", "square", "abs", "negative", "exp"):
        _, _, outs, _ = _run(op_name, {}, [data], ctx)
        assert outs[0].dtype == np.dtype(dtype), op_name
    _, _, outs, _ = _run("sqrt", {}, [data], ctx)
    np.testing.assert_array_equal(_host(ctx, outs[0]), [[0, 1], [2, 3]])


def test_sigmoid_is_stable_for_large_inputs(ctx):
    data = np.array([-1000.0, -40.0, 0.0, 40.0, 1000.0])
    _, _, outs, _ = _run("sigmoid", {}, [data], ctx)
    out = _host(ctx, outs[0])
    assert np.all(np.isfinite(out)) and out[0] == 0 and out[-1] == 1 and out[2] == 0.5


def test_copy_numeric_gradient(ctx):
    check_numeric_gradient("_copy", {}, [np.random.default_rng(13).standard_normal((2, 3))], ctx)


def test_copy_passes_gradient_as_a_fresh_array(ctx):
    op, params, outs, saved = _run("identity", {}, [np.ones((2, 2))], ctx)
    head = ctx.backend.asarray(np.full((2, 2), 3.0), "float64", ctx.device_id)
    grad = op.backward(OpContext(True, ctx.backend, ctx.device_id), params, saved, [head], [True])
    assert grad[0] is not head
    np.testing.assert_array_equal(_host(ctx, grad[0]), 3.0)


def test_block_grad_stops_the_gradient(ctx):
    op, params, outs, saved = _run("stop_gradient", {}, [np.arange(4.0)], ctx)
    np.testing.assert_array_equal(_host(ctx, outs[0]), np.arange(4.0))
    head = ctx.backend.asarray(np.ones(4), "float64", ctx.device_id)
    grad = op.backward(OpContext(True, ctx.backend, ctx.device_id), params, saved, [head], [True])
    np.testing.assert_array_equal(_host(ctx, grad[0]), 0.0)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cast_numeric_gradient(dtype, ctx):
    # the output in float32 costs precision: compare loosely there
    tolerance = {"rtol": 1e-5} if dtype == "float64" else {"rtol": 1e-2, "eps": 1e-3}
    data = np.random.default_rng(5).standard_normal((2, 3))
    check_numeric_gradient("Cast", {"dtype": dtype}, [data], ctx, **tolerance)


def test_cast_gradient_comes_back_in_the_input_dtype(ctx):
    op, params, outs, saved = _run("cast", {"dtype": "float16"}, [np.ones(3, np.float32)], ctx)
    assert outs[0].dtype == np.float16
    head = ctx.backend.asarray(np.ones(3), "float16", ctx.device_id)
    grad = op.backward(OpContext(True, ctx.backend, ctx.device_id), params, saved, [head], [True])
    assert grad[0].dtype == np.float32


def test_cast_types_fix_only_the_output():
    op = opdef("Cast")
    assert op.infer_types(op.parse({"dtype": "int32"}), ["float64"]) == (["float64"], ["int32"], [])
    assert op.infer_types(op.parse({"dtype": "uint8"}), [None])[1] == ["uint8"]


@pytest.mark.parametrize(
    "attrs, fragment",
    [
        ({}, "required parameter 'dtype'"),
        ({"dtype": "complex64"}, "dtype='complex64' is invalid"),
        ({"dtype": "float32", "scale": "2"}, "unknown parameter 'scale'"),
    ],
)
def test_cast_bad_params(attrs, fragment):
    with pytest.raises(ParamError, match=fragment):
        opdef("Cast").parse(attrs)


def test_shape_flows_both_ways():
    assert infer("exp", {}, [(2, 0)], out_shapes=[(0, 5)]) == ([(2, 5)], [(2, 5)], [])
    assert infer("Cast", {"dtype": "int8"}, [None], out_shapes=[(3,)])[0] == [(3,)]


def test_shape_conflict_names_the_node():
    with pytest.raises(ShapeError, match="node0"):
        infer("sqrt", {}, [(2, 3)], out_shapes=[(3, 2)])


def test_unary_ops_take_no_parameters():
    # MXNet runs exp(x, scalar=2) as exp(x); rebind does too, and says so
    with pytest.warns(UserWarning, match="exp takes no parameters; 'scalar' has no effect"):
        opdef("exp").parse({"scalar": "2"})
