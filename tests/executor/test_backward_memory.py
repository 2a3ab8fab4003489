"""What backward keeps: freed step by step in ``fit``'s training step, kept otherwise.

Inside ``single_backward`` (``fit``'s step) an executor's backward drops each
step's saved forward values once that step's backward has run, so that memory
goes to the gradients; a second ``backward()`` then needs a new forward.
Anywhere else (``forward`` + ``backward``, a user's ``Module.forward_backward``)
they are kept and backward may run again, as MXNet's does. Gradients of an
input read several times are summed in place.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.executor.executor import Executor, single_backward


def _executor(ctx):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=5, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    symbol = mx.sym.SoftmaxOutput(net, mx.sym.Variable("softmax_label"), name="softmax")
    executor = symbol.simple_bind(ctx, data=(4, 6))
    rng = np.random.default_rng(0)
    for name, array in executor.arg_dict.items():
        array[:] = (
            rng.integers(0, 3, array.shape)
            if name == "softmax_label"
            else (rng.uniform(-1, 1, array.shape))
        )
    return executor


def _grads(executor):
    return {name: g.asnumpy().copy() for name, g in executor.grad_dict.items()}


def test_single_backward_frees_what_forward_kept(ctx):
    executor = _executor(ctx)
    executor.forward(is_train=True)
    executor.backward()
    expected = _grads(executor)
    executor.forward(is_train=True)
    with single_backward():
        executor.backward()
    assert executor._saved is None  # nothing of the forward pass is held any more
    for name, value in _grads(executor).items():
        np.testing.assert_array_equal(value, expected[name])
    with pytest.raises(RuntimeError, match="frees what forward kept"):
        executor.backward()  # a second backward needs a new forward
    executor.forward(is_train=True)
    executor.backward()
    for name, value in _grads(executor).items():
        np.testing.assert_array_equal(value, expected[name])


def test_a_plain_backward_may_run_again(ctx):
    executor = _executor(ctx)
    executor.forward(is_train=True)
    executor.backward()
    first = _grads(executor)
    executor.backward()
    for name, value in _grads(executor).items():
        np.testing.assert_array_equal(value, first[name])


def _module(ctx):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    symbol = mx.sym.SoftmaxOutput(net, mx.sym.Variable("softmax_label"), name="softmax")
    module = mx.mod.Module(symbol, context=ctx)
    module.bind([("data", (4, 6))], [("softmax_label", (4,))])
    module.init_params()
    return module


def test_a_users_forward_backward_may_backward_again_as_in_mxnet(ctx):
    """MXNet 1.9.1 gives the same gradients from a second backward after forward_backward."""
    module = _module(ctx)
    batch = mx.io.DataBatch([mx.nd.ones((4, 6))], [mx.nd.array([0, 1, 2, 0])])
    module.forward_backward(batch)
    first = [g[0].asnumpy().copy() for g in module._exec_group.grad_arrays]
    module.backward()
    for before, after in zip(first, module._exec_group.grad_arrays, strict=True):
        np.testing.assert_array_equal(after[0].asnumpy(), before)


def test_fit_frees_what_forward_kept_at_every_step(ctx, monkeypatch):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    symbol = mx.sym.SoftmaxOutput(net, mx.sym.Variable("softmax_label"), name="softmax")
    module = mx.mod.Module(symbol, context=ctx)
    kept_after_backward = []
    backward = Executor.backward

    def watched(self, *args, **kwargs):
        backward(self, *args, **kwargs)
        kept_after_backward.append(self._saved)

    monkeypatch.setattr(Executor, "backward", watched)
    x = np.random.default_rng(0).uniform(-1, 1, (8, 6)).astype(np.float32)
    train = mx.io.NDArrayIter(x, np.array([0, 1, 2, 0, 1, 2, 0, 1], np.float32), batch_size=4)
    module.fit(train, num_epoch=2, optimizer_params={"learning_rate": 0.1})
    assert kept_after_backward == [None] * 4  # 2 epochs x 2 batches, nothing kept


def test_an_input_read_by_four_steps_gets_the_sum_of_their_gradients(ctx):
    x = mx.sym.Variable("x")
    parts = [mx.sym.sin(x), mx.sym.cos(x), x * x, mx.sym.exp(x)]
    symbol = mx.sym.MakeLoss(mx.sym.sum(parts[0] + parts[1] + parts[2] + parts[3]))
    executor = symbol.simple_bind(ctx, x=(3, 4))
    values = np.random.default_rng(1).uniform(-1, 1, (3, 4)).astype(np.float32)
    executor.arg_dict["x"][:] = values
    executor.forward(is_train=True)
    executor.backward()
    got = executor.grad_dict["x"].asnumpy()
    terms = [np.cos(values), -np.sin(values), 2 * values, np.exp(values)]
    np.testing.assert_allclose(got, sum(terms), rtol=1e-6, atol=1e-6)
