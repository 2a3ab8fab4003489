"""Array-and-number ops, clip and smooth_l1: golden cases, finite differences, dtypes."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

SCALAR_OPS = (
    "_plus_scalar",
    "_minus_scalar",
    "_rminus_scalar",
    "_mul_scalar",
    "_div_scalar",
    "_rdiv_scalar",
    "_power_scalar",
    "_rpower_scalar",
    "_maximum_scalar",
    "_minimum_scalar",
    "_hypot_scalar",
)


def _forward(op_name, attrs, data, ctx):
    op = opdef(op_name)
    params = op.parse(attrs)
    array = ctx.backend.asarray(data, data.dtype, ctx.device_id)
    outs, saved = op.forward(OpContext(True, ctx.backend, ctx.device_id), params, [array], [])
    return op, params, outs[0], saved


def _backward(op, params, saved, head, ctx):
    head = ctx.backend.asarray(head, head.dtype, ctx.device_id)
    grads = op.backward(OpContext(True, ctx.backend, ctx.device_id), params, saved, [head], [True])
    return np.asarray(ctx.backend.to_host(grads[0]))


@pytest.mark.parametrize("case_id", case_ids(*SCALAR_OPS, "smooth_l1", "clip"))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


@pytest.mark.parametrize("op_name", SCALAR_OPS)
@pytest.mark.parametrize("scalar", ["2", "-0.7", "3.5"])
def test_numeric_gradient(op_name, scalar, ctx):
    if op_name == "_rpower_scalar" and float(scalar) < 0:
        scalar = "0.7"  # a negative base has no real power
    # positive inputs keep x ** s real; 1.3..2 keeps max/min away from a tie with s
    data = np.random.default_rng(7).uniform(1.3, 2.0, (2, 3))
    check_numeric_gradient(op_name, {"scalar": scalar}, [data], ctx)


@pytest.mark.parametrize(
    "op_name, data, scalar, expected",
    [
        ("_plus_scalar", [1, -2], 3, [4, 1]),
        ("_minus_scalar", [1, -2], 3, [-2, -5]),
        ("_rminus_scalar", [1, -2], 3, [2, 5]),
        ("_mul_scalar", [1, -2], 3, [3, -6]),
        ("_div_scalar", [7, -7], 2, [3.5, -3.5]),
        ("_rdiv_scalar", [4, -8], 2, [0.5, -0.25]),
        ("_power_scalar", [2, 3], 3, [8, 27]),
        ("_rpower_scalar", [2, 3], 3, [9, 27]),
        ("_maximum_scalar", [1, 5], 3, [3, 5]),
        ("_minimum_scalar", [1, 5], 3, [1, 3]),
        ("_hypot_scalar", [3, 5], 4, [5, np.hypot(5, 4)]),
    ],
)
def test_forward_values(op_name, data, scalar, expected, ctx):
    _, _, out, _ = _forward(op_name, {"scalar": str(scalar)}, np.array(data, np.float32), ctx)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(ctx.backend.to_host(out)), expected, rtol=1e-6)


def test_integer_input_stays_integer_and_truncates(ctx):
    data = np.array([7, -7, 3], np.int32)
    _, _, out, _ = _forward("_div_scalar", {"scalar": "2"}, data, ctx)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(ctx.backend.to_host(out)), [3, -3, 1])
    # the scalar becomes an int32 first (MXNet's DType(scalar)): 2.9 -> 2
    _, _, out, _ = _forward("_mul_scalar", {"scalar": "2.9"}, data, ctx)
    np.testing.assert_array_equal(np.asarray(ctx.backend.to_host(out)), [14, -14, 6])


def test_float_scalar_on_integer_input_gives_float64(ctx):
    op = opdef("_mul_scalar")
    params = op.parse({"scalar": "0.5", "is_int": "False"})
    assert op.infer_types(params, ["int32"])[1] == ["float64"]
    assert op.infer_types(op.parse({"scalar": "2"}), ["int32"])[1] == ["int32"]
    assert op.infer_types(op.parse({"scalar": "2"}), [None], ["float16"])[0] == ["float16"]
    _, _, out, _ = _forward(
        "_mul_scalar", {"scalar": "0.5", "is_int": "False"}, np.array([3], np.int32), ctx
    )
    assert out.dtype == np.float64 and float(ctx.backend.to_host(out)[0]) == 1.5


def test_float16_keeps_dtype(ctx):
    data = np.array([1.0, 2.0], np.float16)
    for op_name in SCALAR_OPS:
        _, _, out, _ = _forward(op_name, {"scalar": "0.5"}, data, ctx)
        assert out.dtype == np.float16, op_name


@pytest.mark.parametrize(
    "op_name, expected", [("_maximum_scalar", [1, 0, 1]), ("_minimum_scalar", [1, 1, 0])]
)
def test_ties_send_the_gradient_to_the_input(op_name, expected, ctx):
    # x = [1, 0, 2] against scalar 1: the first element is a tie
    op, params, _, saved = _forward(op_name, {"scalar": "1"}, np.array([1.0, 0.0, 2.0]), ctx)
    np.testing.assert_array_equal(_backward(op, params, saved, np.ones(3), ctx), expected)


def test_plus_scalar_gradient_is_a_fresh_array(ctx):
    op, params, _, saved = _forward("_plus_scalar", {"scalar": "1"}, np.zeros(2), ctx)
    head = ctx.backend.asarray(np.ones(2), "float64", ctx.device_id)
    grads = op.backward(OpContext(True, ctx.backend, ctx.device_id), params, saved, [head], [True])
    assert grads[0] is not head


@pytest.mark.parametrize("sigma", ["1.0", "2.0", "0.5"])
def test_smooth_l1_numeric_gradient(sigma, ctx):
    data = np.array([[-3.1, -0.9, -0.2], [0.1, 0.35, 2.7]])  # both branches, off the joints
    check_numeric_gradient("smooth_l1", {"scalar": sigma}, [data], ctx)


def test_smooth_l1_values(ctx):
    data = np.array([-2.0, -0.5, 0.0, 0.1, 1.0, 3.0])
    _, _, out, _ = _forward("smooth_l1", {}, data, ctx)
    expected = [1.5, 0.125, 0.0, 0.005, 0.5, 2.5]
    np.testing.assert_allclose(np.asarray(ctx.backend.to_host(out)), expected)
    _, _, out, _ = _forward("smooth_l1", {"scalar": "2"}, data, ctx)
    np.testing.assert_allclose(
        np.asarray(ctx.backend.to_host(out)), [1.875, 0.375, 0.0, 0.02, 0.875, 2.875]
    )


@pytest.mark.parametrize("attrs", [{"a_min": "-0.5", "a_max": "0.5"}, {"a_min": "0", "a_max": "3"}])
def test_clip_numeric_gradient(attrs, ctx):
    data = np.array([[-1.2, -0.3, 0.2], [0.45, 0.8, 2.0]])  # no point on a bound
    check_numeric_gradient("clip", attrs, [data], ctx)


def test_clip_keeps_the_gradient_on_the_bounds(ctx):
    data = np.array([-1.0, -0.5, 0.0, 0.5, 1.0], np.float32)
    op, params, out, saved = _forward("clip", {"a_min": "-0.5", "a_max": "0.5"}, data, ctx)
    np.testing.assert_array_equal(np.asarray(ctx.backend.to_host(out)), [-0.5, -0.5, 0, 0.5, 0.5])
    grad = _backward(op, params, saved, np.ones(5, np.float32), ctx)
    np.testing.assert_array_equal(grad, [0, 1, 1, 1, 0])


def test_clip_integer_input(ctx):
    data = np.array([-5, 0, 5], np.int32)
    _, _, out, _ = _forward("clip", {"a_min": "-2", "a_max": "3"}, data, ctx)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(ctx.backend.to_host(out)), [-2, 0, 3])


@pytest.mark.parametrize(
    "op_name, attrs, fragment",
    [
        ("_mul_scalar", {"scalar": "abc"}, "scalar='abc' is invalid"),
        ("_mul_scalar", {"scalar": "2", "is_int": "maybe"}, "is_int='maybe' is invalid"),
        ("_plus_scalar", {"value": "2"}, "unknown parameter 'value'"),
        ("clip", {"a_min": "0"}, "required parameter 'a_max'"),
        ("smooth_l1", {"sigma": "1"}, "unknown parameter 'sigma'"),
    ],
)
def test_bad_params(op_name, attrs, fragment):
    with pytest.raises(ParamError, match=fragment):
        opdef(op_name).parse(attrs)


def test_scalar_defaults():
    assert opdef("_plus_scalar").parse({}).scalar == 1.0
    assert opdef("smooth_l1").parse({}).scalar == 1.0


def test_shapes():
    assert infer("_mul_scalar", {"scalar": "2"}, [None], out_shapes=[(4, 2)])[0] == [(4, 2)]
    assert infer("clip", {"a_min": "0", "a_max": "1"}, [(3, 0)], out_shapes=[(0, 2)])[1] == [(3, 2)]
    with pytest.raises(ShapeError, match="node0"):
        infer("smooth_l1", {}, [(2, 3)], out_shapes=[(2, 4)])


def test_aliases():
    assert opdef("_MulScalar") is opdef("_mul_scalar")
    assert opdef("_RPowerScalar") is opdef("_rpower_scalar")
