"""Two-input and variadic ops (elemwise_*, broadcast_*, add_n, where): golden cases,
finite differences, broadcasting gradients, shape inference."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

ELEMWISE = (
    "elemwise_add",
    "elemwise_sub",
    "elemwise_mul",
    "elemwise_div",
    "_power",
    "_maximum",
    "_minimum",
    "_hypot",
)
BROADCAST = (
    "broadcast_add",
    "broadcast_sub",
    "broadcast_mul",
    "broadcast_div",
    "broadcast_power",
    "broadcast_maximum",
    "broadcast_minimum",
    "broadcast_hypot",
)


def _run(op_name, attrs, inputs, ctx):
    op = opdef(op_name)
    params = op.parse(attrs)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, saved = op.forward(OpContext(True, ctx.backend, ctx.device_id), params, arrays, [])
    return op, params, outs[0], saved


def _grads(op, params, saved, head, need, ctx):
    head = ctx.backend.asarray(head, head.dtype, ctx.device_id)
    grads = op.backward(OpContext(True, ctx.backend, ctx.device_id), params, saved, [head], need)
    return [None if g is None else np.asarray(ctx.backend.to_host(g)) for g in grads]


def _host(ctx, array):
    return np.asarray(ctx.backend.to_host(array))


@pytest.mark.parametrize("case_id", case_ids(*ELEMWISE, *BROADCAST, "add_n", "where"))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _operands(shape_a, shape_b, seed=8):
    rng = np.random.default_rng(seed)
    # positive, and lhs and rhs drawn from disjoint ranges: no power of a negative
    # base, no division by ~0, no max/min tie
    return [rng.uniform(0.5, 1.0, shape_a), rng.uniform(1.5, 2.5, shape_b)]


@pytest.mark.parametrize("op_name", ELEMWISE)
def test_elemwise_numeric_gradient(op_name, ctx):
    check_numeric_gradient(op_name, {}, _operands((2, 3), (2, 3)), ctx)
    lhs, rhs = _operands((2, 3), (2, 3), seed=9)
    check_numeric_gradient(op_name, {}, [rhs, lhs], ctx)  # the other order of max/min


@pytest.mark.parametrize("op_name", BROADCAST)
@pytest.mark.parametrize("shapes", [((2, 3, 1), (1, 3, 4)), ((3,), (2, 3)), ((2, 3), ())])
def test_broadcast_numeric_gradient(op_name, shapes, ctx):
    check_numeric_gradient(op_name, {}, _operands(*shapes), ctx)


def test_broadcast_gradients_have_the_input_shapes(ctx):
    lhs, rhs = np.ones((4, 1, 3), np.float32), np.ones((5, 1), np.float32)
    op, params, out, saved = _run("broadcast_plus", {}, [lhs, rhs], ctx)
    assert out.shape == (4, 5, 3)
    grad_l, grad_r = _grads(op, params, saved, np.ones((4, 5, 3), np.float32), [True, True], ctx)
    assert grad_l.shape == (4, 1, 3) and grad_r.shape == (5, 1)
    np.testing.assert_array_equal(grad_l, 5.0)
    np.testing.assert_array_equal(grad_r, 12.0)


def test_float16_broadcast_gradient_keeps_dtype(ctx):
    lhs, rhs = np.ones((64, 64), np.float16), np.ones((1, 64), np.float16)
    op, params, _, saved = _run("broadcast_mul", {}, [lhs, rhs], ctx)
    grad_l, grad_r = _grads(op, params, saved, np.ones((64, 64), np.float16), [True, True], ctx)
    assert grad_r.dtype == np.float16
    np.testing.assert_array_equal(grad_r, 64.0)


def test_gradients_only_where_needed(ctx):
    op, params, _, saved = _run("elemwise_mul", {}, _operands((2,), (2,)), ctx)
    grads = _grads(op, params, saved, np.ones(2), [False, True], ctx)
    assert grads[0] is None and grads[1] is not None


def test_pass_through_gradients_are_fresh_arrays(ctx):
    op, params, _, saved = _run("elemwise_add", {}, _operands((2,), (2,)), ctx)
    head = ctx.backend.asarray(np.ones(2), "float64", ctx.device_id)
    grads = op.backward(
        OpContext(True, ctx.backend, ctx.device_id), params, saved, [head], [True, True]
    )
    assert grads[0] is not head and grads[1] is not head and grads[0] is not grads[1]


@pytest.mark.parametrize("op_name", ["_maximum", "broadcast_maximum", "_minimum"])
def test_ties_send_the_gradient_to_lhs(op_name, ctx):
    values = np.array([1.0, 2.0])
    op, params, _, saved = _run(op_name, {}, [values, values.copy()], ctx)
    grad_l, grad_r = _grads(op, params, saved, np.ones(2), [True, True], ctx)
    np.testing.assert_array_equal(grad_l, 1.0)
    np.testing.assert_array_equal(grad_r, 0.0)


def test_integer_inputs_keep_their_dtype(ctx):
    lhs, rhs = np.array([7, -7, 9], np.int32), np.array([2, 2, -4], np.int32)
    expected = {
        "elemwise_add": [9, -5, 5],
        "elemwise_div": [3, -3, -2],
        "broadcast_mul": [14, -14, -36],
        "_maximum": [7, 2, 9],
    }
    for op_name, values in expected.items():
        _, _, out, _ = _run(op_name, {}, [lhs, rhs], ctx)
        assert out.dtype == np.int32, op_name
        np.testing.assert_array_equal(_host(ctx, out), values, err_msg=op_name)


def test_aliases():
    for alias, name in [
        ("_plus", "elemwise_add"),
        ("_Plus", "elemwise_add"),
        ("_add", "elemwise_add"),
        ("_minus", "elemwise_sub"),
        ("_sub", "elemwise_sub"),
        ("_mul", "elemwise_mul"),
        ("_div", "elemwise_div"),
        ("_Power", "_power"),
        ("broadcast_plus", "broadcast_add"),
        ("broadcast_minus", "broadcast_sub"),
        ("ElementWiseSum", "add_n"),
    ]:
        assert opdef(alias).name == name


def test_elemwise_shapes():
    assert infer("elemwise_add", {}, [(2, 0), (0, 3)]) == ([(2, 3), (2, 3)], [(2, 3)], [])
    assert infer("_power", {}, [None, None], out_shapes=[(4,)])[0] == [(4,), (4,)]
    with pytest.raises(ShapeError) as info:
        infer("elemwise_mul", {}, [(2, 3), (3, 2)])
    message = str(info.value)
    assert "node0" in message and "'rhs'" in message and "(3, 2)" in message


def test_broadcast_shapes():
    assert infer("broadcast_add", {}, [(2, 1, 5), (3, 1)])[1] == [(2, 3, 5)]
    assert infer("broadcast_mul", {}, [(0, 1), (1, 4)])[1] == [(0, 4)]
    assert infer("broadcast_mul", {}, [(0, 1), (1, 4)], out_shapes=[(6, 4)])[1] == [(6, 4)]
    assert infer("broadcast_sub", {}, [(2, 3), None])[1] == [None]  # waits for both
    assert infer("broadcast_div", {}, [(2, 3), (2, 3)])[1] == [(2, 3)]
    with pytest.raises(ShapeError, match="could not be broadcast"):
        infer("broadcast_add", {}, [(2, 3), (4, 3)])
    with pytest.raises(ShapeError, match="'output'"):
        infer("broadcast_add", {}, [(2, 1), (1, 3)], out_shapes=[(2, 4)])


@pytest.mark.parametrize("num_args", [1, 2, 4])
def test_add_n(num_args, ctx):
    rng = np.random.default_rng(10)
    inputs = [rng.standard_normal((2, 3)) for _ in range(num_args)]
    attrs = {"num_args": str(num_args)}
    _, _, out, _ = _run("add_n", attrs, inputs, ctx)
    np.testing.assert_allclose(_host(ctx, out), sum(inputs))
    assert out is not inputs[0]
    check_numeric_gradient("add_n", attrs, inputs, ctx)


def test_add_n_arguments_and_shapes():
    op = opdef("add_n")
    assert op.arguments(op.parse({"num_args": "3"})) == ("arg0", "arg1", "arg2")
    assert op.variadic == "num_args"
    ins, outs, _ = infer("add_n", {"num_args": "3"}, [None, (2, 0), None], out_shapes=[(0, 4)])
    assert ins == [(2, 4)] * 3 and outs == [(2, 4)]
    with pytest.raises(ShapeError, match="'arg2'"):
        infer("add_n", {"num_args": "3"}, [(2,), (2,), (3,)])
    with pytest.raises(ParamError, match="num_args must be positive"):
        op.parse({"num_args": "0"})
    with pytest.raises(ParamError, match="required parameter 'num_args'"):
        op.parse({})


@pytest.mark.parametrize(
    "condition", [np.array([[1.0, 0.0, 2.0], [0.0, 0.0, -1.0]]), np.array([0.0, 3.0])]
)
def test_where_numeric_gradient(condition, ctx):
    rng = np.random.default_rng(11)
    inputs = [condition, rng.standard_normal((2, 3)), rng.standard_normal((2, 3))]
    check_numeric_gradient("where", {}, inputs, ctx, grad_args=[1, 2])


def test_where_condition_gets_a_zero_gradient(ctx):
    condition = np.array([1, 0], np.int32)
    op, params, out, saved = _run("where", {}, [condition, np.ones((2, 2)), np.zeros((2, 2))], ctx)
    np.testing.assert_array_equal(_host(ctx, out), [[1, 1], [0, 0]])
    grads = _grads(op, params, saved, np.ones((2, 2)), [True, True, True], ctx)
    assert grads[0].dtype == np.int32 and not grads[0].any()
    np.testing.assert_array_equal(grads[1], [[1, 1], [0, 0]])
    np.testing.assert_array_equal(grads[2], [[0, 0], [1, 1]])


def test_where_shapes_and_types():
    assert infer("where", {}, [(2, 3), (2, 0), None]) == ([(2, 3)] * 3, [(2, 3)], [])
    assert infer("where", {}, [(2,), (2, 3), None])[0] == [(2,), (2, 3), (2, 3)]
    assert infer("where", {}, [None, (2, 3), None])[0][0] is None
    with pytest.raises(ShapeError, match="'condition'"):
        infer("where", {}, [(3,), (2, 3), (2, 3)])
    with pytest.raises(ShapeError, match="'condition'"):
        infer("where", {}, [(2, 3, 1), (2, 3), (2, 3)])
    with pytest.raises(ShapeError, match="'y'"):
        infer("where", {}, [None, (2, 3), (3, 2)])
    op = opdef("where")
    assert op.infer_types(op.parse({}), ["int32", "float16", None]) == (
        ["int32", "float16", "float16"],
        ["float16"],
        [],
    )


@pytest.mark.parametrize(
    ("name", "attrs", "arity"),
    [
        ("_mod", {}, 2),
        ("broadcast_mod", {}, 2),
        ("_mod_scalar", {"scalar": "3"}, 1),
        ("_rmod_scalar", {"scalar": "7"}, 1),
    ],
)
def test_integer_mod_has_no_gradient(ctx, name, attrs, arity):
    # MXNet 1.9.1 gives integer operands of mod a zero gradient (its test_bmod_int)
    op = opdef(name)
    params = op.parse(attrs)
    values = [np.array([7, 9, 5], np.int32), np.array([2, 4, 3], np.int32)][:arity]
    inputs = [ctx.backend.asarray(v, "int32", ctx.device_id) for v in values]
    run = OpContext(True, ctx.backend, ctx.device_id)
    outs, saved = op.forward(run, params, inputs, [])
    # a float head gradient, as MXNet's test_bmod_int passes: the operands decide
    head = ctx.backend.asarray(np.full(3, 3.0, np.float32), "float32", ctx.device_id)
    grads = op.backward(run, params, saved, [head], [True] * arity)
    for grad in grads:
        np.testing.assert_array_equal(ctx.backend.to_host(grad), np.zeros(3))
