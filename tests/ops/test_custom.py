"""mx.operator (CustomOp, CustomOpProp, register), the Custom operator, and plugin operators."""

import json

import attrs
import numpy as np
import pytest

import rebind as mx
from rebind import registry
from rebind.ops import OpDef, param
from rebind.ops.custom import CustomOpError
from rebind.ops.params import ParamError
from tests.ops.harness import check_numeric_gradient, opdef

# -- custom operators used below ----------------------------------------------------


class _Softmax(mx.operator.CustomOp):
    """MXNet's classic example: softmax forward, y - onehot(label) backward."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        y = np.exp(x - x.max(axis=1, keepdims=True))
        y /= y.sum(axis=1, keepdims=True)
        self.assign(out_data[0], req[0], mx.nd.array(y))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        label = in_data[1].asnumpy().ravel().astype(np.int64)
        y = out_data[0].asnumpy()
        y[np.arange(label.shape[0]), label] -= 1.0
        self.assign(in_grad[0], req[0], mx.nd.array(y))


@mx.operator.register("test_softmax")
class _SoftmaxProp(mx.operator.CustomOpProp):
    created = []

    def __init__(self):
        super().__init__(need_top_grad=False)

    def list_arguments(self):
        return ["data", "label"]

    def infer_shape(self, in_shape):
        return [in_shape[0], (in_shape[0][0],)], [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        _SoftmaxProp.created.append((ctx, shapes, dtypes))
        return _Softmax()


class _SumDiff(mx.operator.CustomOp):
    """Two outputs (lhs + rhs, lhs - rhs) and an aux state counting training passes."""

    def forward(self, is_train, req, in_data, out_data, aux):
        lhs, rhs = in_data
        self.assign(out_data[0], req[0], lhs + rhs)
        self.assign(out_data[1], req[1], lhs - rhs)
        if is_train:
            self.assign(aux[0], "add", 1.0)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.backward_reqs = list(req)
        self.assign(in_grad[0], req[0], out_grad[0] + out_grad[1])
        self.assign(in_grad[1], req[1], out_grad[0] - out_grad[1])


@mx.operator.register("test_sumdiff")
class _SumDiffProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ["lhs", "rhs"]

    def list_outputs(self):
        return ["sum", "diff"]

    def list_auxiliary_states(self):
        return ["count"]

    def infer_shape(self, in_shape):
        return [in_shape[0], in_shape[0]], [in_shape[0], in_shape[0]], [[1]]

    def create_operator(self, ctx, shapes, dtypes):
        return _SumDiff()


class _Cube(mx.operator.CustomOp):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0]
        self.assign(out_data[0], req[0], x * x * x * self.scale)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        x = in_data[0]
        self.assign(in_grad[0], req[0], x * x * out_grad[0] * (3 * self.scale))


@mx.operator.register("test_cube")
class _CubeProp(mx.operator.CustomOpProp):
    """scale * x**3 with the defaults of CustomOpProp (one input, same shape and type)."""

    def __init__(self, scale="1.0"):
        super().__init__()
        self.raw_scale = scale
        self.scale = float(scale)

    def create_operator(self, ctx, shapes, dtypes):
        return _Cube(self.scale)


# -- helpers ---------------------------------------------------------------------


def _nd(ctx, values, dtype=np.float32):
    return mx.nd.array(np.asarray(values, dtype=dtype), ctx=ctx)


def _softmax_net(head):
    data, label = mx.sym.Variable("data"), mx.sym.Variable("label")
    fc = mx.sym.FullyConnected(data=data, num_hidden=3, name="fc")
    if head == "custom":
        return mx.sym.Custom(data=fc, label=label, op_type="test_softmax", name="sm")
    return mx.sym.SoftmaxOutput(data=fc, label=label, name="sm")


# -- tests -----------------------------------------------------------------------


def test_custom_softmax_trains_like_softmax_output(ctx):
    rng = np.random.default_rng(0)
    data = rng.standard_normal((8, 5)).astype(np.float32)
    label = rng.integers(0, 3, size=8).astype(np.float32)
    weight = (rng.standard_normal((3, 5)) * 0.1).astype(np.float32)
    executors = {}
    for head in ("custom", "builtin"):
        args = {
            "data": _nd(ctx, data),
            "label": _nd(ctx, label),
            "fc_weight": _nd(ctx, weight),
            "fc_bias": _nd(ctx, np.zeros(3)),
        }
        grads = {"fc_weight": _nd(ctx, np.zeros((3, 5))), "fc_bias": _nd(ctx, np.zeros(3))}
        executors[head] = _softmax_net(head).bind(ctx, args, args_grad=grads)
    for _ in range(5):
        for ex in executors.values():
            ex.forward(is_train=True)
            ex.backward()
            for name in ("fc_weight", "fc_bias"):
                ex.arg_dict[name][:] = ex.arg_dict[name] - ex.grad_dict[name] * 0.5
        custom, builtin = executors["custom"], executors["builtin"]
        np.testing.assert_allclose(
            custom.outputs[0].asnumpy(), builtin.outputs[0].asnumpy(), rtol=1e-5, atol=1e-6
        )
        for name in ("fc_weight", "fc_bias"):
            np.testing.assert_allclose(
                custom.grad_dict[name].asnumpy(),
                builtin.grad_dict[name].asnumpy(),
                rtol=1e-5,
                atol=1e-6,
            )
    # training changed the weights, and the loss went down
    assert not np.allclose(custom.arg_dict["fc_weight"].asnumpy(), weight)
    # need_top_grad=False: a head gradient given to backward is ignored
    before = custom.grad_dict["fc_weight"].asnumpy()
    custom.forward(is_train=True)
    custom.backward(out_grads=[mx.nd.ones((8, 3), ctx=ctx) * 5])
    after_fwd = custom.grad_dict["fc_weight"].asnumpy()
    builtin.forward(is_train=True)
    builtin.backward()
    np.testing.assert_allclose(
        after_fwd, builtin.grad_dict["fc_weight"].asnumpy(), rtol=1e-5, atol=1e-6
    )
    assert before.shape == after_fwd.shape


def test_operator_is_created_once_per_bound_node(ctx):
    _SoftmaxProp.created.clear()
    net = _softmax_net("custom")
    ex = net.simple_bind(ctx, data=(4, 5))
    for _ in range(3):
        ex.forward(is_train=True)
        ex.backward()
    assert len(_SoftmaxProp.created) == 1
    created_ctx, shapes, dtypes = _SoftmaxProp.created[0]
    assert created_ctx == str(ctx)
    assert shapes == [[4, 3], [4]]
    assert dtypes == [np.float32, np.float32]


def test_two_outputs_and_aux_state(ctx):
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    sd = mx.sym.Custom(lhs=a, rhs=b, op_type="test_sumdiff", name="sd")
    assert sd.list_arguments() == ["a", "b"]
    assert sd.list_outputs() == ["sd_sum", "sd_diff"]
    assert sd.list_auxiliary_states() == ["sd_count"]
    arg_shapes, out_shapes, aux_shapes = sd.infer_shape(a=(2, 3))
    assert arg_shapes == [(2, 3), (2, 3)] and out_shapes == [(2, 3), (2, 3)]
    assert aux_shapes == [(1,)]
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    count = _nd(ctx, [0.0])
    ex = sd.bind(
        ctx,
        {"a": _nd(ctx, x), "b": _nd(ctx, y)},
        args_grad={"a": _nd(ctx, np.zeros((2, 3)))},
        aux_states={"sd_count": count},
    )
    ex.forward(is_train=False)
    assert count.asnumpy()[0] == 0
    ex.forward(is_train=True)
    ex.forward(is_train=True)
    assert count.asnumpy()[0] == 2
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), x + y, rtol=1e-6)
    np.testing.assert_allclose(ex.outputs[1].asnumpy(), x - y, rtol=1e-6)
    g_sum, g_diff = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    ex.backward(out_grads=[_nd(ctx, g_sum), _nd(ctx, g_diff)])
    np.testing.assert_allclose(ex.grad_dict["a"].asnumpy(), g_sum + g_diff, rtol=1e-5)
    assert "b" not in ex.grad_dict
    # only the first output is a head: the other's gradient is zeros
    first = sd[0].bind(
        ctx,
        {"a": _nd(ctx, x), "b": _nd(ctx, y)},
        args_grad={"a": _nd(ctx, np.zeros((2, 3)))},
        aux_states=[count],
    )
    first.forward(is_train=True)
    first.backward(out_grads=[_nd(ctx, g_sum)])
    np.testing.assert_allclose(first.grad_dict["a"].asnumpy(), g_sum, rtol=1e-5)
    assert count.asnumpy()[0] == 3


def test_backward_reqs_follow_need_grad(ctx):
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    sd = mx.sym.Custom(lhs=a, rhs=b, op_type="test_sumdiff", name="sd")
    ex = sd.simple_bind(ctx, grad_req={"a": "null", "b": "write"}, a=(2, 2))
    ex.forward(is_train=True)
    ex.backward(out_grads=[mx.nd.ones((2, 2), ctx=ctx), mx.nd.ones((2, 2), ctx=ctx)])
    op = next(iter(ex._plan.steps[0].params.operators.values()))[0]
    assert op.backward_reqs == ["null", "write"]
    np.testing.assert_allclose(ex.grad_dict["b"].asnumpy(), np.zeros((2, 2)))


def test_assign_honours_req(ctx):
    op = mx.operator.CustomOp()
    dst = _nd(ctx, [1.0, 2.0])
    op.assign(dst, "null", _nd(ctx, [5.0, 5.0]))
    np.testing.assert_array_equal(dst.asnumpy(), [1, 2])
    op.assign(dst, "write", _nd(ctx, [3.0, 4.0]))
    np.testing.assert_array_equal(dst.asnumpy(), [3, 4])
    op.assign(dst, "inplace", np.array([5.0, 6.0]))
    np.testing.assert_array_equal(dst.asnumpy(), [5, 6])
    op.assign(dst, "add", _nd(ctx, [1.0, 1.0]))
    op.assign(dst, "add", mx.nd.array([1.0, 2.0]))  # from another context: moved
    op.assign(dst, "add", 0.5)
    np.testing.assert_array_equal(dst.asnumpy(), [7.5, 9.5])
    with pytest.raises(ValueError, match="req"):
        op.assign(dst, "append", 1.0)


def test_grad_req_add_accumulates_through_custom(ctx):
    x = mx.sym.Variable("x")
    cube = mx.sym.Custom(data=x, op_type="test_cube", scale=2)
    values = np.array([[1.0, -2.0, 0.5]])
    ex = cube.simple_bind(ctx, grad_req="add", x=(1, 3))
    ex.arg_dict["x"][:] = values
    ex.grad_dict["x"][:] = 1.0
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward()
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), 2 * values**3, rtol=1e-6)
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), 1 + 2 * 6 * values**2, rtol=1e-6)


def test_inference_through_a_symbol(ctx):
    net = _softmax_net("custom")
    assert net.list_arguments() == ["data", "fc_weight", "fc_bias", "label"]
    arg_shapes, out_shapes, aux_shapes = net.infer_shape(data=(4, 5))
    assert arg_shapes == [(4, 5), (3, 5), (3,), (4,)]  # the label from the prop
    assert out_shapes == [(4, 3)] and aux_shapes == []
    partial = net.infer_shape_partial()
    assert partial[1] == [()]
    arg_types, out_types, _ = net.infer_type(data="float64")
    assert out_types == [np.float64] and arg_types[1] == np.float64
    ex = net.simple_bind(ctx, data=(4, 5))
    assert ex.arg_dict["label"].shape == (4,)
    out = ex.forward()[0].asnumpy()
    np.testing.assert_allclose(out.sum(axis=1), np.ones(4), rtol=1e-5)
    assert mx.sym.Custom(data=mx.sym.Variable("d"), op_type="test_cube").name.startswith("custom")


def test_json_round_trip(ctx):
    x = mx.sym.Variable("x")
    net = mx.sym.Custom(data=x, op_type="test_cube", scale=0.5, name="cube") * 2
    text = net.tojson()
    nodes = json.loads(text)["nodes"]
    cube = next(n for n in nodes if n["op"] == "Custom")
    assert cube["name"] == "cube" and cube["attrs"] == {"op_type": "test_cube", "scale": "0.5"}
    loaded = mx.sym.load_json(text)
    assert loaded.tojson() == text
    assert loaded.get_internals()["cube_output"].attr("scale") == "0.5"
    values = np.array([[1.0, 2.0], [-1.0, 3.0]], dtype=np.float32)
    out = loaded.eval(ctx=ctx, x=_nd(ctx, values))[0].asnumpy()
    np.testing.assert_allclose(out, values**3, rtol=1e-6)


def test_kwargs_reach_the_prop_as_strings():
    params = opdef("Custom").parse({"op_type": "test_cube", "scale": 3, "__lr_mult__": "2"})
    assert params.prop.raw_scale == "3" and params.kwargs == (("scale", "3"),)
    with pytest.raises(ParamError, match="test_cube.*unexpected keyword"):
        opdef("Custom").parse({"op_type": "test_cube", "power": "2"})


def test_unknown_op_type_lists_registered_ones():
    x = mx.sym.Variable("x")
    with pytest.raises(ParamError) as info:
        mx.sym.Custom(data=x, op_type="no_such_custom_op")
    message = str(info.value)
    assert "no_such_custom_op" in message
    assert "test_softmax" in message and "test_cube" in message
    assert isinstance(info.value, ValueError)
    with pytest.raises(ParamError, match="op_type"):
        mx.sym.Custom(data=x)


def test_reregistering_replaces():
    @mx.operator.register("test_replaced")
    class First(mx.operator.CustomOpProp):
        pass

    @mx.operator.register("test_replaced")
    class Second(mx.operator.CustomOpProp):
        def list_outputs(self):
            return ["out"]

    s = mx.sym.Custom(data=mx.sym.Variable("x"), op_type="test_replaced", name="r")
    assert s.list_outputs() == ["r_out"]
    with pytest.raises(TypeError):
        mx.operator.register("bad")(object)


def test_malformed_prop_results_are_reported():
    @mx.operator.register("test_bad_shape")
    class Bad(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            return [in_shape[0]], []

    s = mx.sym.Custom(data=mx.sym.Variable("x"), op_type="test_bad_shape")
    with pytest.raises(CustomOpError, match="0 output entries, expected 1"):
        s.infer_shape(x=(2, 2))


def test_numeric_gradient_of_custom_op(ctx):
    x = np.random.default_rng(2).standard_normal((2, 3))
    check_numeric_gradient("Custom", {"op_type": "test_cube", "scale": "0.7"}, [x], ctx)


# -- an operator from a third-party plugin -------------------------------------------


@attrs.frozen
class _AxpyParams:
    alpha: float = param("float", 1.0)


def _axpy_forward(ctx, p, inputs, aux):
    return [p.alpha * inputs[0] + inputs[1]], None


def _axpy_backward(ctx, p, saved, out_grads, need_grad):
    grad = out_grads[0]
    return [p.alpha * grad if need_grad[0] else None, grad if need_grad[1] else None]


AXPY = OpDef(
    name="TestPluginAxpy",
    params=_AxpyParams,
    arguments=("x", "y"),
    forward=_axpy_forward,
    backward=_axpy_backward,
    doc="alpha * x + y",
)


class _AxpyPlugin:
    @mx.hookimpl
    def rebind_add_operators(self, registry):
        registry.add("TestPluginAxpy", AXPY)


@pytest.fixture
def axpy_plugin():
    name = registry.register_plugin(_AxpyPlugin(), name="tests.axpy_plugin")
    yield name
    registry.unregister_plugin(name=name)
    mx.sym._functions.pop("TestPluginAxpy", None)


def test_plugin_operator_works_like_a_builtin(axpy_plugin, ctx):
    assert registry.get_registry("operators").owner("TestPluginAxpy") == axpy_plugin
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    net = mx.sym.TestPluginAxpy(x=a, y=b, alpha=2.5, name="axpy")
    assert net.list_arguments() == ["a", "b"] and net.list_outputs() == ["axpy_output"]
    assert net.infer_shape(a=(2, 3))[0] == [(2, 3), (2, 3)]
    rng = np.random.default_rng(3)
    x, y, head = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3))
    ex = net.simple_bind(ctx, a=(2, 3))
    out = ex.forward(is_train=True, a=x, b=y)[0].asnumpy()
    np.testing.assert_allclose(out, 2.5 * x + y, rtol=1e-6)
    ex.backward(out_grads=[_nd(ctx, head)])
    np.testing.assert_allclose(ex.grad_dict["a"].asnumpy(), 2.5 * head, rtol=1e-6)
    np.testing.assert_allclose(ex.grad_dict["b"].asnumpy(), head, rtol=1e-6)
    assert "TestPluginAxpy" in mx.operator.get_all_registered_operators()


def test_plugin_operator_is_gone_after_unregistering(axpy_plugin):
    registry.unregister_plugin(name=axpy_plugin)
    with pytest.raises(AttributeError):
        mx.sym.TestPluginAxpy  # noqa: B018
    registry.register_plugin(_AxpyPlugin(), name=axpy_plugin)  # for the fixture's teardown


def test_an_error_in_the_users_forward_is_an_mxnet_error():
    # MXNet's test_custom_op_exc: assert_raises(MXNetError, ...) around a failing forward
    class Failing(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise AssertionError("the user's check")

    @mx.operator.register("rebind_failing_forward")
    class FailingProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Failing()

    with pytest.raises(mx.base.MXNetError, match="forward raised AssertionError: the user") as info:
        mx.nd.Custom(mx.nd.zeros((2,)), op_type="rebind_failing_forward").wait_to_read()
    assert isinstance(info.value.__cause__, AssertionError)
