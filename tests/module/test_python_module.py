"""PythonModule and PythonLossModule: lifecycle, gradients from grad_func, use in a chain."""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import LifecycleError

from .log_capture import logs_warning

BATCH, FEATURES, CLASSES = 8, 5, 3


def softmax_ce_grad(scores, labels):
    """The gradient of softmax cross-entropy w.r.t. the scores, in NumPy."""
    s = scores.asnumpy().astype(np.float64)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(p)), labels.asnumpy().astype(int)] -= 1
    return p


def squared_grad(scores, labels):
    """``d/ds 0.5 * (s - onehot)^2``, returned as an NDArray (not NumPy)."""
    onehot = mx.nd.one_hot(labels, CLASSES)
    return scores - onehot.as_in_context(scores.context)


def _batch(ctx, seed=0):
    rng = np.random.RandomState(seed)
    scores = rng.randn(BATCH, CLASSES).astype(np.float32)
    labels = rng.randint(0, CLASSES, size=BATCH).astype(np.float32)
    return (
        scores,
        labels,
        mx.io.DataBatch([mx.nd.array(scores, ctx=ctx)], [mx.nd.array(labels, ctx=ctx)]),
    )


def _bound_loss(grad_func=softmax_ce_grad, for_training=True, **kwargs):
    loss = mx.mod.PythonLossModule(grad_func=grad_func, **kwargs)
    loss.bind(
        data_shapes=[("data", (BATCH, CLASSES))],
        label_shapes=[("softmax_label", (BATCH,))],
        for_training=for_training,
    )
    return loss


# -- PythonLossModule on its own ---------------------------------------------------------------
def test_loss_outputs_scores_and_backward_is_grad_func(ctx):
    scores, labels, batch = _batch(ctx)
    loss = _bound_loss()
    loss.forward(batch)
    np.testing.assert_array_equal(loss.get_outputs()[0].asnumpy(), scores)
    loss.backward()
    (grad,) = loss.get_input_grads()
    assert isinstance(grad, mx.nd.NDArray)
    assert grad.context == ctx and grad.dtype == np.float32
    p = np.exp(scores - scores.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    expected = p - np.eye(CLASSES)[labels.astype(int)]
    np.testing.assert_allclose(grad.asnumpy(), expected, rtol=1e-5, atol=1e-6)


def test_loss_grad_func_may_return_an_ndarray(ctx):
    scores, labels, batch = _batch(ctx, seed=1)
    loss = _bound_loss(grad_func=squared_grad)
    loss.forward(batch, is_train=True)
    loss.backward()
    expected = scores - np.eye(CLASSES, dtype=np.float32)[labels.astype(int)]
    np.testing.assert_allclose(loss.get_input_grads()[0].asnumpy(), expected, rtol=1e-6)


def test_loss_shapes_names_and_no_params():
    loss = _bound_loss(name="hinge")
    assert loss.output_names == ["hinge_output"]
    assert loss.output_shapes == [("hinge_output", (BATCH, CLASSES))]
    assert loss.data_names == ["data"]
    assert [tuple(d) for d in loss.data_shapes] == [("data", (BATCH, CLASSES))]
    assert [tuple(d) for d in loss.label_shapes] == [("softmax_label", (BATCH,))]
    assert loss.binded and not loss.params_initialized
    loss.init_params()
    assert loss.params_initialized
    assert loss.get_params() == ({}, {})
    loss.init_optimizer()
    assert loss.optimizer_initialized
    loss.update()  # nothing to update, and no error


def test_loss_predicting_keeps_no_labels_and_refuses_backward(ctx):
    _, _, batch = _batch(ctx)
    loss = _bound_loss(for_training=False)
    loss.forward(mx.io.DataBatch(batch.data, None))
    with pytest.raises(RuntimeError, match="for_training=True"):
        loss.backward()


def test_loss_refusals(ctx):
    _, _, batch = _batch(ctx)
    with pytest.raises(LifecycleError, match="bind"):
        mx.mod.PythonLossModule().forward(batch)
    no_grad = _bound_loss(grad_func=None)
    no_grad.forward(batch)
    with pytest.raises(NotImplementedError, match="grad_func"):
        no_grad.backward()
    loss = _bound_loss()
    loss.forward(batch)
    with pytest.raises(ValueError, match="out_grads"):
        loss.backward(out_grads=[batch.data[0]])
    with pytest.raises(ValueError, match="training needs labels"):
        loss.forward(mx.io.DataBatch(batch.data, None), is_train=True)
    with pytest.raises(ValueError, match="merge_multi_context"):
        loss.get_outputs(merge_multi_context=False)
    with pytest.raises(NotImplementedError, match="monitor"):
        loss.install_monitor(None)
    with pytest.raises(ValueError, match="exactly one name"):
        mx.mod.PythonLossModule(data_names=("a", "b"))
    with pytest.raises(TypeError, match="callable"):
        mx.mod.PythonLossModule(grad_func=3)


def test_bind_checks_names_and_grad_req():
    loss = mx.mod.PythonLossModule()
    with pytest.raises(ValueError, match=r"data_names=\['data'\]"):
        loss.bind(data_shapes=[("scores", (BATCH, CLASSES))])
    with pytest.raises(ValueError, match="label_names"):
        loss.bind(data_shapes=[("data", (BATCH, CLASSES))], label_shapes=[("y", (BATCH,))])
    with pytest.raises(ValueError, match="grad_req"):
        loss.bind(data_shapes=[("data", (BATCH, CLASSES))], grad_req="add")
    assert not loss.binded


def test_bind_twice_warns_and_force_rebind_rebinds():
    loss = _bound_loss()
    loss.init_params()
    with logs_warning(r"^Already bound, ignoring bind\(\)"):  # MXNet logs it
        loss.bind(data_shapes=[("data", (4, CLASSES))])
    assert loss.output_shapes[0][1] == (BATCH, CLASSES)
    loss.bind(data_shapes=[("data", (4, CLASSES))], force_rebind=True)
    assert loss.output_shapes[0][1] == (4, CLASSES)
    assert loss.binded and loss.params_initialized


def test_update_metric_uses_outputs_and_labels(ctx):
    scores, labels, batch = _batch(ctx, seed=3)
    loss = _bound_loss()
    loss.forward(batch)
    metric = mx.metric.create("acc")
    loss.update_metric(metric, batch.label)
    expected = np.mean(scores.argmax(1) == labels)
    assert metric.get()[1] == pytest.approx(expected)
    with pytest.raises(RuntimeError, match="pre_sliced"):
        loss.update_metric(metric, batch.label, pre_sliced=True)


def test_update_metric_without_labels_does_nothing(ctx):
    _, _, batch = _batch(ctx)
    loss = mx.mod.PythonLossModule()
    loss.bind(data_shapes=[("data", (BATCH, CLASSES))], for_training=False)
    loss.forward(batch)
    metric = mx.metric.create("acc")
    loss.update_metric(metric, batch.label)
    assert metric.num_inst == 0


# -- a PythonModule subclass -------------------------------------------------------------------
class Scale(mx.mod.PythonModule):
    """``y = factor * x``, written in Python."""

    def __init__(self, factor):
        super().__init__(data_names=["x"], label_names=None, output_names=["scaled"])
        self.factor = factor

    def _compute_output_shapes(self):
        return [("scaled", self._data_shapes[0].shape)]

    def forward(self, data_batch, is_train=None):
        self._out = data_batch.data[0] * self.factor

    def get_outputs(self, merge_multi_context=True):
        return [self._out]

    def backward(self, out_grads=None):
        self._grad = out_grads[0] * self.factor

    def get_input_grads(self, merge_multi_context=True):
        return [self._grad]


def test_python_module_subclass_records_shapes_and_has_no_params():
    scale = Scale(2.0)
    assert scale.data_names == ["x"] and scale.output_names == ["scaled"]
    scale.bind(data_shapes=[("x", (2, 3))])
    assert scale.output_shapes == [("scaled", (2, 3))]
    assert scale.label_shapes is None
    scale.init_params()
    assert scale.get_params() == ({}, {})
    with pytest.raises(NotImplementedError, match="install_monitor"):
        scale.install_monitor(None)


def test_python_module_without_output_shapes_hook_says_so():
    bare = mx.mod.PythonModule(["data"], None, ["out"])
    with pytest.raises(NotImplementedError, match="_compute_output_shapes"):
        bare.bind(data_shapes=[("data", (2, 3))])


# -- in a chain after a Module -----------------------------------------------------------------
def _fc_chain(ctx, grad_func):
    data = mx.sym.Variable("data")
    net = mx.sym.identity(mx.sym.FullyConnected(data, num_hidden=CLASSES, name="fc"))
    module = mx.mod.Module(net, label_names=None, context=ctx)
    loss = mx.mod.PythonLossModule(grad_func=grad_func)
    return mx.mod.SequentialModule().add(module).add(loss, take_labels=True, auto_wiring=True)


def test_loss_gradient_reaches_the_module_weights(ctx):
    rng = np.random.RandomState(4)
    x = rng.randn(BATCH, FEATURES).astype(np.float32)
    y = rng.randint(0, CLASSES, size=BATCH).astype(np.float32)
    w = rng.randn(CLASSES, FEATURES).astype(np.float32)
    b = rng.randn(CLASSES).astype(np.float32)
    seq = _fc_chain(ctx, softmax_ce_grad)
    seq.bind(data_shapes=[("data", (BATCH, FEATURES))], label_shapes=[("softmax_label", (BATCH,))])
    seq.init_params(arg_params={"fc_weight": mx.nd.array(w), "fc_bias": mx.nd.array(b)})
    seq.forward_backward(mx.io.DataBatch([mx.nd.array(x, ctx=ctx)], [mx.nd.array(y, ctx=ctx)]))

    scores = x @ w.T + b
    p = np.exp(scores - scores.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    g = p - np.eye(CLASSES)[y.astype(int)]
    np.testing.assert_allclose(seq.get_outputs()[0].asnumpy(), scores, rtol=1e-5, atol=1e-5)
    group = seq._modules[0]._exec_group
    grads = {
        name: grad[0].asnumpy()
        for name, grad in zip(group.param_names, group.grad_arrays, strict=True)
    }
    np.testing.assert_allclose(grads["fc_weight"], g.T @ x, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grads["fc_bias"], g.sum(0), rtol=1e-4, atol=1e-5)


def test_fit_learns_a_separable_problem(ctx):
    mx.random.seed(0)  # initializer and shuffling: the same run every time
    np.random.seed(0)
    rng = np.random.RandomState(5)
    centers = rng.randn(CLASSES, FEATURES) * 4
    y = rng.randint(0, CLASSES, size=240)
    x = (centers[y] + rng.randn(240, FEATURES)).astype(np.float32)
    train = mx.io.NDArrayIter(x[:180], y[:180].astype(np.float32), batch_size=20, shuffle=True)
    val = mx.io.NDArrayIter(x[180:], y[180:].astype(np.float32), batch_size=20)
    seq = _fc_chain(ctx, softmax_ce_grad)
    seq.fit(
        train,
        eval_data=val,
        num_epoch=8,
        optimizer_params={"learning_rate": 0.1},
        initializer=mx.init.Xavier(),
    )
    ((name, accuracy),) = seq.score(val, "acc")
    assert name == "accuracy" and accuracy >= 0.95
    predictions = seq.predict(val)
    assert predictions.shape == (60, CLASSES)
    assert np.mean(predictions.asnumpy().argmax(1) == y[180:]) == pytest.approx(accuracy)
