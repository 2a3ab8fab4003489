"""What backward keeps: freed step by step inside ``forward_backward``, kept otherwise.

Inside ``Module.forward_backward`` (and so ``fit``) an executor's backward drops
each step's saved forward values once that step's backward has run, so that
memory goes to the gradients; a second ``backward()`` then needs a new forward.
A bare ``forward`` + ``backward`` keeps them, and backward may run again.
Gradients of an input read several times are summed in place.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.executor.executor import single_backward


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
    with pytest.raises(RuntimeError, match="forward_backward"):
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


def test_module_forward_backward_frees_and_fit_trains(ctx):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    symbol = mx.sym.SoftmaxOutput(net, mx.sym.Variable("softmax_label"), name="softmax")
    module = mx.mod.Module(symbol, context=ctx)
    module.bind([("data", (4, 6))], [("softmax_label", (4,))])
    module.init_params()
    batch = mx.io.DataBatch([mx.nd.ones((4, 6))], [mx.nd.array([0, 1, 2, 0])])
    module.forward_backward(batch)
    assert module._exec_group.execs[0]._saved is None
    with pytest.raises(RuntimeError, match="forward"):
        module.backward()
    module.forward(batch, is_train=True)
    module.backward()
    module.backward()  # outside forward_backward, what forward kept stays


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
