"""MXNet's deprecated PythonOp / NumpyOp / NDArrayOp (rebind.legacy_op, as mx.operator.*)."""

import warnings

import numpy as np
import pytest

import rebind as mx

# -- operators in the style of MXNet's example/numpy-ops (numpy_softmax.py) -----------


def _legacy(cls, *args):
    """An instance made without showing its (expected) deprecation warnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(*args)


class NumpySoftmax(mx.operator.NumpyOp):
    """example/numpy-ops/numpy_softmax.py's loss; records what backward is given."""

    def __init__(self):
        super().__init__(False)
        self.seen = []

    def list_arguments(self):
        return ["data", "label"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        return [in_shape[0], (in_shape[0][0],)], [in_shape[0]]

    def forward(self, in_data, out_data):
        x = in_data[0]
        y = out_data[0]
        y[:] = np.exp(x - x.max(axis=1).reshape((x.shape[0], 1)))
        y /= y.sum(axis=1).reshape((x.shape[0], 1))

    def backward(self, out_grad, in_data, out_data, in_grad):
        self.seen.append((out_grad, [type(a) for a in in_data + out_data + in_grad]))
        label = in_data[1].reshape((in_data[1].size,)).astype(np.int64)
        dx = in_grad[0]
        dx[:] = out_data[0]
        dx[np.arange(label.shape[0]), label] -= 1.0


class NDArraySquare(mx.operator.NDArrayOp):
    """x * x with NDArray arithmetic; backward 2 x dy."""

    def forward(self, in_data, out_data):
        out_data[0][:] = in_data[0] * in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = 2 * in_data[0] * out_grad[0]


class NDArrayScribbler(mx.operator.NDArrayOp):
    """Writes into its input, which MXNet (and rebind) hand over read-only."""

    def forward(self, in_data, out_data):
        in_data[0][:] = 0


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _nd(ctx, values):
    return mx.nd.array(np.asarray(values, dtype=np.float32), ctx=ctx)


# -- tests ------------------------------------------------------------------------------


def test_constructors_warn_as_mxnet():
    with pytest.warns(UserWarning) as record:
        mx.operator.NumpyOp()
        mx.operator.NDArrayOp()
    assert [str(w.message) for w in record] == [
        "PythonOp has been deprecated. Please use CustomOp",
        "NumpyOp has been deprecated. Please use CustomOp",
        "PythonOp has been deprecated. Please use CustomOp",
        "NDArrayOp has been deprecated. Please use CustomOp",
    ]


def test_python_op_base_has_no_symbol():
    op = _legacy(mx.operator.PythonOp)
    with pytest.raises(NotImplementedError, match="Must override this"):
        op(mx.sym.Variable("x"))


def test_symbol_names_arguments_and_shapes():
    # MXNet 1.9.1: _native0 / _ndarray0, outputs <name>_output, a missing input
    # becomes the variable <name>_<argument>
    with mx.name.NameManager():
        plain = _legacy(mx.operator.NumpyOp)(mx.sym.Variable("X"))
        square = _legacy(NDArraySquare)(mx.sym.Variable("X"))
    assert plain.name == "_native0"
    assert square.name == "_ndarray0"
    assert square.list_outputs() == ["_ndarray0_output"]
    loss = _legacy(NumpySoftmax)(data=mx.sym.Variable("data"), name="softmax")
    assert loss.list_arguments() == ["data", "softmax_label"]
    assert loss.infer_shape(data=(4, 10)) == ([(4, 10), (4,)], [(4, 10)], [])


def test_default_numpy_op_copies_forward_and_gives_ones_backward(ctx):
    # MXNet's test_python_op
    s = _legacy(mx.operator.NumpyOp).get_symbol(mx.sym.Variable("X"), name="numpy_op")
    x, dx = mx.nd.ones((10,), ctx=ctx) * 10, mx.nd.zeros((10,), ctx=ctx)
    exe = s.bind(ctx, args=[x], args_grad={"X": dx})
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), np.full(10, 10.0))
    exe.backward(mx.nd.ones((10,), ctx=ctx) * 3)
    np.testing.assert_array_equal(dx.asnumpy(), np.ones(10))


def test_numpy_softmax_forward_and_backward(ctx):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    label = np.array([0, 4, 2, 2], dtype=np.float32)
    op = _legacy(NumpySoftmax)
    s = op(data=mx.sym.Variable("data"), name="softmax")
    grad = mx.nd.zeros((4, 5), ctx=ctx)
    exe = s.bind(
        ctx,
        args={"data": _nd(ctx, x), "softmax_label": _nd(ctx, label)},
        args_grad={"data": grad},
        grad_req={"data": "write", "softmax_label": "null"},
    )
    exe.forward(is_train=True)
    y = _softmax(x.astype(np.float64))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), y, rtol=1e-5, atol=1e-7)
    exe.backward()
    expected = y.copy()
    expected[np.arange(4), label.astype(int)] -= 1.0
    np.testing.assert_allclose(grad.asnumpy(), expected, rtol=1e-5, atol=1e-6)
    out_grad, kinds = op.seen[-1]
    assert out_grad == []  # need_top_grad False: no head gradient, as MXNet
    assert set(kinds) == {np.ndarray}  # host NumPy arrays, on every backend


def test_numpy_softmax_trains_like_softmax_output():
    rng = np.random.default_rng(2)
    data = rng.standard_normal((40, 6)).astype(np.float32)
    label = np.argmax(data[:, :3], axis=1).astype(np.float32)  # linearly separable
    params = {}
    for head in ("numpy_op", "builtin"):
        fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
        if head == "numpy_op":
            net = _legacy(NumpySoftmax)(data=fc, name="softmax")
        else:
            net = mx.sym.SoftmaxOutput(fc, name="softmax")
        mod = mx.mod.Module(net, context=mx.cpu())
        it = mx.io.NDArrayIter(data, label, batch_size=10, label_name="softmax_label")
        mod.bind(it.provide_data, it.provide_label)
        mx.random.seed(7)
        mod.init_params(mx.init.Xavier())
        mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
        for _ in range(5):  # 20 steps
            it.reset()
            for batch in it:
                mod.forward_backward(batch)
                mod.update()
        params[head] = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
        score = mod.score(mx.io.NDArrayIter(data, label, 10), mx.metric.Accuracy())
        assert score[0][1] >= 0.9, (head, score)
    for name, value in params["builtin"].items():
        np.testing.assert_allclose(params["numpy_op"][name], value, rtol=1e-5, atol=1e-6)


def test_ndarray_op_forward_and_backward(ctx):
    # recorded on MXNet 1.9.1: x = arange(6).reshape(2, 3), head gradient 0.5
    s = _legacy(NDArraySquare)(mx.sym.Variable("x"), name="sq")
    assert s.list_outputs() == ["sq_output"]
    assert s.infer_shape(x=(2, 3)) == ([(2, 3)], [(2, 3)], [])
    grad = mx.nd.zeros((2, 3), ctx=ctx)
    exe = s.bind(ctx, args={"x": _nd(ctx, np.arange(6).reshape(2, 3))}, args_grad={"x": grad})
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), [[0, 1, 4], [9, 16, 25]])
    exe.backward(mx.nd.ones((2, 3), ctx=ctx) * 0.5)
    np.testing.assert_array_equal(grad.asnumpy(), [[0, 1, 2], [3, 4, 5]])


def test_ndarray_op_inputs_are_read_only():
    s = _legacy(NDArrayScribbler)(mx.sym.Variable("x"))
    x = mx.nd.ones((3,))
    exe = s.bind(mx.cpu(), args={"x": x})
    with pytest.raises(mx.MXNetError, match="read-only"):
        exe.forward()
    np.testing.assert_array_equal(x.asnumpy(), np.ones(3))


def test_declare_backward_dependency_reaches_the_prop():
    op = _legacy(NDArraySquare)
    op(mx.sym.Variable("x"))
    prop = mx.operator.lookup_prop(op.info_)()
    assert prop.declare_backward_dependency([10], [20], [30]) == [10, 20, 30]
    op.need_top_grad_ = False
    assert op.declare_backward_dependency([10], [20], [30]) == [20, 30]


def test_one_registration_per_operator_object():
    op = _legacy(NDArraySquare)
    first = op(mx.sym.Variable("a"))
    second = op(mx.sym.Variable("b"))
    assert first.attr("op_type") == second.attr("op_type") == op.info_
    assert op in mx.operator.PythonOp._ref_holder
