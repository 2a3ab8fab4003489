"""An MXNet operator test file in miniature, as MXNet projects write them.

MXNet users test their networks and custom operators with ``mx.test_utils``:
forward results against NumPy (``check_symbolic_forward``), gradients against
hand-derived ones (``check_symbolic_backward``) and against finite
differences (``check_numeric_gradient``), the same symbol on several dtypes
(``check_consistency``), and arrays compared with ``assert_almost_equal``.
This file is plain MXNet 1.9 test code except for its ``import rebind as mx``
line; with ``import mxnet as mx`` it passes on MXNet as it is.

    python -m pytest examples/test_operators_suite.py
"""

import numpy as np
import pytest

import rebind as mx

assert_almost_equal = mx.test_utils.assert_almost_equal
check_numeric_gradient = mx.test_utils.check_numeric_gradient
check_symbolic_forward = mx.test_utils.check_symbolic_forward
check_symbolic_backward = mx.test_utils.check_symbolic_backward


def np_softmax(x, axis=-1):
    shifted = np.exp(x - x.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def test_fully_connected():
    data, weight, bias = (np.random.uniform(-1, 1, shape) for shape in [(4, 5), (3, 5), (3,)])
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    location = {"data": data, "fc_weight": weight, "fc_bias": bias}
    check_symbolic_forward(net, location, [data.dot(weight.T) + bias], rtol=1e-5, atol=1e-6)
    head = np.random.uniform(-1, 1, (4, 3))
    expected = {"data": head.dot(weight), "fc_weight": head.T.dot(data), "fc_bias": head.sum(0)}
    check_symbolic_backward(net, location, [head], expected, rtol=1e-5, atol=1e-6)
    check_numeric_gradient(net, location, numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax(axis):
    x = np.random.uniform(-2, 2, (3, 4, 5))
    net = mx.sym.softmax(mx.sym.Variable("x"), axis=axis)
    check_symbolic_forward(net, [x], [np_softmax(x, axis)], rtol=1e-5, atol=1e-6)
    check_numeric_gradient(net, [x], numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize(
    "name, np_fn, low",
    [("exp", np.exp, -1), ("tanh", np.tanh, -1), ("sqrt", np.sqrt, 0.5), ("log", np.log, 0.5)],
)
def test_unary_elementwise(name, np_fn, low):
    x = np.random.uniform(low, 2, (2, 3))
    net = getattr(mx.sym, name)(mx.sym.Variable("x"))
    check_symbolic_forward(net, [x], [np_fn(x)], rtol=1e-5, atol=1e-6)
    check_numeric_gradient(net, [x], numeric_eps=1e-4, rtol=1e-2, atol=1e-3)


def test_broadcast_add_backward_sums_over_broadcast_axes():
    a, b = np.random.uniform(-1, 1, (2, 3)), np.random.uniform(-1, 1, (1, 3))
    net = mx.sym.broadcast_add(mx.sym.Variable("a"), mx.sym.Variable("b"))
    head = np.random.uniform(-1, 1, (2, 3))
    check_symbolic_forward(net, [a, b], [a + b])
    check_symbolic_backward(net, [a, b], [head], [head, head.sum(0, keepdims=True)])


def test_convolution_gradient():
    net = mx.sym.Convolution(
        mx.sym.Variable("data"), kernel=(3, 3), num_filter=2, pad=(1, 1), name="conv"
    )
    location = {
        "data": np.random.uniform(-1, 1, (1, 2, 4, 4)),
        "conv_weight": np.random.uniform(-1, 1, (2, 2, 3, 3)),
        "conv_bias": np.random.uniform(-1, 1, (2,)),
    }
    check_numeric_gradient(net, location, numeric_eps=1e-3, rtol=1e-2, atol=1e-2)


def test_float32_and_float64_agree():
    net = mx.sym.Activation(
        mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, name="fc"),
        act_type="sigmoid",
    )
    ctx_list = [
        {"ctx": mx.cpu(0), "data": (3, 5), "type_dict": {"data": np.float32}},
        {"ctx": mx.cpu(0), "data": (3, 5), "type_dict": {"data": np.float64}},
    ]
    mx.test_utils.check_consistency(net, ctx_list)


def test_assert_almost_equal_reports_the_worst_element():
    a = np.zeros((2, 3))
    b = a.copy()
    b[1, 2] = 1.0
    with pytest.raises(AssertionError) as caught:
        assert_almost_equal(a, b, names=("ours", "theirs"))
    assert "ours" in str(caught.value) and "theirs" in str(caught.value)
    assert_almost_equal(mx.nd.array(a), a + 1e-9)


class Square(mx.operator.CustomOp):
    """A custom operator written in NumPy: y = x * x."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        self.assign(out_data[0], req[0], mx.nd.array(x * x))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        x, head = in_data[0].asnumpy(), out_grad[0].asnumpy()
        self.assign(in_grad[0], req[0], mx.nd.array(2 * x * head))


@mx.operator.register("suite_square")
class SquareProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ["data"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return Square()


def test_custom_operator():
    x = np.random.uniform(-1, 1, (3, 4))
    net = mx.sym.Custom(mx.sym.Variable("data"), op_type="suite_square")
    check_symbolic_forward(net, [x], [x * x], rtol=1e-5, atol=1e-6)
    check_numeric_gradient(net, [x], numeric_eps=1e-3, rtol=1e-2, atol=1e-3)
