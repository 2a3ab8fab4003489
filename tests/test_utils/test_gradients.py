"""check_numeric_gradient, check_symbolic_forward/backward and simple_forward."""

import numpy as np
import pytest

import rebind as mx
from rebind import test_utils as tu


class _Cube(mx.operator.CustomOp):
    """y = x**3, with a backward that is right (3x^2) or deliberately wrong (2x^2)."""

    factor = 3.0

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] ** 3)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        x = in_data[0]
        self.assign(in_grad[0], req[0], out_grad[0] * x * x * self.factor)


class _WrongCube(_Cube):
    factor = 2.0


def _prop(op_cls):
    class _Prop(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return op_cls()

    return _Prop


mx.operator.register("tu_cube")(_prop(_Cube))
mx.operator.register("tu_wrong_cube")(_prop(_WrongCube))


def _location(*shapes):
    return [np.random.uniform(0.5, 1.5, size=s) for s in shapes]


def test_numeric_gradient_passes_on_builtin_ops(ctx):
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    sym = mx.sym.FullyConnected(mx.sym.tanh(x), weight=w, num_hidden=3, no_bias=True)
    tu.check_numeric_gradient(
        sym, _location((2, 4), (3, 4)), numeric_eps=1e-3, rtol=1e-2, atol=1e-3, ctx=ctx
    )


def test_numeric_gradient_float64_and_grad_nodes(ctx):
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    loc = {"x": np.random.rand(3), "y": np.random.rand(3)}
    tu.check_numeric_gradient(x * y, loc, grad_nodes=["x"], dtype=np.float64, ctx=ctx)
    tu.check_numeric_gradient(
        x * y, loc, grad_nodes={"x": "add", "y": "null"}, dtype=np.float64, ctx=ctx
    )


def test_numeric_gradient_accepts_a_correct_custom_op():
    sym = mx.sym.Custom(mx.sym.Variable("x"), op_type="tu_cube")
    tu.check_numeric_gradient(sym, _location((2, 3)), rtol=1e-2, atol=1e-3)


def test_numeric_gradient_rejects_a_wrong_custom_op():
    sym = mx.sym.Custom(mx.sym.Variable("x"), op_type="tu_wrong_cube")
    with pytest.raises(AssertionError, match="NUMERICAL_x=.*BACKWARD_x="):
        tu.check_numeric_gradient(sym, _location((2, 3)), rtol=1e-2, atol=1e-3)


def test_location_keys_must_match_arguments():
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    with pytest.raises(ValueError, match="do not match"):
        tu.check_symbolic_forward(x + y, {"x": np.ones(2)}, [np.ones(2)])


def test_symbolic_forward_against_numpy(ctx):
    a, b = np.random.rand(2, 3), np.random.rand(3, 4)
    sym = mx.sym.dot(mx.sym.Variable("a"), mx.sym.Variable("b"))
    outs = tu.check_symbolic_forward(sym, [a, b], [a @ b], ctx=ctx)
    assert outs[0].shape == (2, 4)
    with pytest.raises(AssertionError, match="EXPECTED_dot0_output"):
        tu.check_symbolic_forward(sym, [a, b], [a @ b + 1], ctx=ctx)
    tu.check_symbolic_forward(sym, {"a": a, "b": b}, {"dot0_output": a @ b}, ctx=ctx)


@pytest.mark.parametrize("req", ["write", "add", "null"])
def test_symbolic_backward_each_grad_req(ctx, req):
    a, b, og = np.random.rand(2, 3), np.random.rand(2, 3), np.random.rand(2, 3)
    sym = mx.sym.Variable("a") * mx.sym.Variable("b")
    # 'add' checks (buffer after) - (buffer before), two float32 values near the random
    # start's magnitude (about 1): their difference carries about 1e-7 of absolute rounding
    # whatever the gradient's size (a GPU's fused multiply-add rounds once, not twice)
    tol = {"rtol": 1e-5, "atol": 1e-6}
    grads = tu.check_symbolic_backward(
        sym, [a, b], [og], [og * b, og * a], grad_req=req, ctx=ctx, **tol
    )
    assert set(grads) == {"a", "b"}
    wrong = [og * b + 1, og * a]
    if req == "null":
        # 'null' leaves the buffers alone, so MXNet checks them unchanged, not `expected`
        tu.check_symbolic_backward(sym, [a, b], [og], wrong, grad_req=req, ctx=ctx, **tol)
        return
    with pytest.raises(AssertionError, match="BACKWARD_a"):
        tu.check_symbolic_backward(sym, [a, b], [og], wrong, grad_req=req, ctx=ctx, **tol)


def test_symbolic_backward_with_aux_states():
    data = mx.sym.Variable("data")
    sym = mx.sym.BatchNorm(data, fix_gamma=False, use_global_stats=True, eps=1e-5, name="bn")
    x = np.random.rand(4, 3)
    gamma, beta = np.random.rand(3) + 0.5, np.random.rand(3)
    mean, var = np.random.rand(3), np.random.rand(3) + 0.5
    og = np.random.rand(4, 3)
    expected_y = (x - mean) / np.sqrt(var + 1e-5) * gamma + beta
    tu.check_symbolic_forward(
        sym, [x, gamma, beta], [expected_y], aux_states=[mean, var], rtol=1e-4, atol=1e-4
    )
    grad_x = og * gamma / np.sqrt(var + 1e-5)
    tu.check_symbolic_backward(
        sym,
        [x, gamma, beta],
        [og],
        {"data": grad_x},
        aux_states={"bn_moving_mean": mean, "bn_moving_var": var},
        rtol=1e-4,
        atol=1e-4,
    )


def test_simple_forward():
    sym = mx.sym.Variable("x") + mx.sym.Variable("y")
    assert tu.simple_forward(sym, x=np.ones(2), y=np.full(2, 2.0)).tolist() == [3.0, 3.0]


def test_numeric_grad_matches_analytic():
    x = mx.sym.Variable("x")
    exe = mx.sym.square(x).simple_bind(mx.cpu(), x=(3,), type_dict={"x": np.float64})
    point = np.array([0.5, -1.0, 2.0])
    got = tu.numeric_grad(exe, {"x": point.copy()}, eps=1e-4, dtype=np.float64)
    np.testing.assert_allclose(got["x"], 2 * point, rtol=1e-6)


def test_numeric_gradient_with_aux_states():
    sym = mx.sym.BatchNorm(mx.sym.Variable("data"), fix_gamma=False, name="bn")
    location = [np.random.rand(4, 3), np.random.rand(3) + 0.5, np.random.rand(3)]
    tu.check_numeric_gradient(
        sym, location, aux_states=[np.zeros(3), np.ones(3)], numeric_eps=1e-3, rtol=5e-2, atol=5e-3
    )
    with pytest.raises(ValueError, match="aux_states names"):
        tu.check_numeric_gradient(sym, location, aux_states={"bn_moving_mean": np.zeros(3)})
