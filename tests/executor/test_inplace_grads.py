"""Activation gradients written into the gradient they receive (executor/inplace_grads.py).

Each case binds a symbol with the rewrite and without it (every other rewrite
on in both) and compares gradients for equality: the products are the same,
only where they are written changes.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.executor import inplace_grads


def _bind(symbol, ctx, monkeypatch, marked, **shapes):
    if not marked:
        monkeypatch.setattr(inplace_grads, "mark", lambda plan: [])
    executor = symbol.simple_bind(ctx, **shapes)
    monkeypatch.undo()
    rng = np.random.default_rng(3)
    for name, array in executor.arg_dict.items():
        if name == "softmax_label":
            array[:] = rng.integers(0, 3, array.shape)
        else:
            array[:] = rng.uniform(-1, 1, array.shape)
    executor.forward(is_train=True)
    executor.backward()
    return executor, {n: g.asnumpy() for n, g in executor.grad_dict.items()}


def _marked(executor):
    found = executor._plan.optimizations
    return [name for kind, name, _ in found if kind == "inplace_activation_gradient"]


@pytest.mark.parametrize("act_type", ["relu", "sigmoid", "tanh", "softrelu", "softsign"])
def test_activation_gradients_in_place_are_the_same(ctx, monkeypatch, act_type):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=6, name="fc1")
    net = mx.sym.Activation(net, act_type=act_type, name="act1")
    net = mx.sym.FullyConnected(net, num_hidden=5, name="fc2")
    net = mx.sym.Activation(net, act_type=act_type, name="act2")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc3")
    symbol = mx.sym.SoftmaxOutput(net, mx.sym.Variable("softmax_label"), name="softmax")
    shapes = {"data": (4, 7)}
    marked, grads = _bind(symbol, ctx, monkeypatch, True, **shapes)
    plain, plain_grads = _bind(symbol, ctx, monkeypatch, False, **shapes)
    assert _marked(marked) == ["act1", "act2"] and _marked(plain) == []
    for name, value in grads.items():
        np.testing.assert_array_equal(value, plain_grads[name], err_msg=name)


def test_an_output_read_twice_keeps_its_own_gradient(ctx, monkeypatch):
    data = mx.sym.Variable("data")
    hidden = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=6), act_type="tanh")
    left = mx.sym.FullyConnected(hidden, num_hidden=3, name="left")
    right = mx.sym.FullyConnected(hidden, num_hidden=3, name="right")
    symbol = mx.sym.MakeLoss(mx.sym.sum(left * right))
    marked, grads = _bind(symbol, ctx, monkeypatch, True, data=(4, 5))
    _, plain_grads = _bind(symbol, ctx, monkeypatch, False, data=(4, 5))
    assert _marked(marked) == []  # two readers: the summed gradient is not the activation's
    for name, value in grads.items():
        np.testing.assert_array_equal(value, plain_grads[name], err_msg=name)
