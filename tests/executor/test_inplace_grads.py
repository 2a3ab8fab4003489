"""Activation gradients written into the gradient they receive (executor/inplace_grads.py).

Each case binds a symbol with the rewrite and without it (every other rewrite
on in both) and compares gradients for equality: the products are the same,
only where they are written changes. The same for the max pooling that applies
the activation's derivative (``fold_into_pooling``): the same products, taken
at the pooled outputs instead of at the activation's.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.executor import inplace_grads


def _bind(symbol, ctx, monkeypatch, marked, rewrite="mark", seed=3, values=None, **shapes):
    """Bind with the rewrite ``inplace_grads.<rewrite>`` on or off, run a training step.

    The fused FullyConnected and Convolution + activation steps of a GPU are off
    (they would take the activations this rewrite marks; test_fused_dense.py and
    test_fused_conv.py test them).
    """
    monkeypatch.setenv("REBIND_GRAPH_OPT", "-dense_activation,-conv_activation")
    if not marked:
        monkeypatch.setattr(inplace_grads, rewrite, lambda plan: [])
    executor = symbol.simple_bind(ctx, **shapes)
    monkeypatch.undo()
    rng = np.random.default_rng(seed)
    for name, array in executor.arg_dict.items():
        if name == "softmax_label":
            array[:] = rng.integers(0, 3, array.shape)
        else:
            array[:] = rng.uniform(-1, 1, array.shape)
    for name, value in (values or {}).items():
        executor.arg_dict[name][:] = value
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


def _run(symbol, ctx, monkeypatch, folded, values=None, **shapes):
    """``_bind`` with ``fold_into_pooling`` on or off."""
    return _bind(symbol, ctx, monkeypatch, folded, "fold_into_pooling", 11, values, **shapes)


# -- activation derivatives applied by the max pooling after them ---------------------------


def _folded(executor):
    found = executor._plan.optimizations
    return [name for kind, name, _ in found if kind == "activation_gradient_in_pooling"]


def _net(act_type="tanh", **pool):
    pool = pool or {"kernel": (2, 2), "stride": (2, 2)}
    pool.setdefault("pool_type", "max")
    net = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=3, name="conv")
    net = mx.sym.Activation(net, act_type=act_type, name="act")
    net = mx.sym.Pooling(net, name="pool", **pool)
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(net, mx.sym.Variable("softmax_label"), name="softmax")


def _expected(ctx):
    """NumPy only: on a GPU the activation's fused backward is one launch."""
    return ["act+pool"] if ctx.device_type == "cpu" else []


def _assert_same(grads, plain_grads):
    assert sorted(grads) == sorted(plain_grads)
    for name, value in grads.items():
        np.testing.assert_array_equal(value, plain_grads[name], err_msg=name)


@pytest.mark.parametrize("act_type", ["relu", "sigmoid", "tanh"])
@pytest.mark.parametrize(
    "pool",
    [
        {"kernel": (2, 2), "stride": (2, 2)},
        {"kernel": (2, 2), "stride": (3, 3)},  # gaps between the windows
        {"kernel": (2, 2), "stride": (2, 2), "pad": (1, 1)},
        {"kernel": (3, 3), "stride": (3, 3), "pooling_convention": "full"},
    ],
)
def test_the_folded_gradients_equal_the_plain_ones(act_type, pool, ctx, monkeypatch):
    symbol = _net(act_type, **dict(pool))
    folded, grads = _run(symbol, ctx, monkeypatch, True, data=(4, 2, 11, 11))
    plain, plain_grads = _run(symbol, ctx, monkeypatch, False, data=(4, 2, 11, 11))
    assert _folded(folded) == _expected(ctx) and _folded(plain) == []
    _assert_same(grads, plain_grads)
    assert np.any(grads["conv_weight"] != 0)


def test_ties_in_a_window_still_send_the_gradient_to_the_first_maximum(ctx, monkeypatch):
    symbol = _net("tanh")
    flat = {"data": np.full((2, 1, 7, 7), 0.3, np.float32)}  # every window: four equal values
    folded, grads = _run(symbol, ctx, monkeypatch, True, values=flat, data=(2, 1, 7, 7))
    _, plain_grads = _run(symbol, ctx, monkeypatch, False, values=flat, data=(2, 1, 7, 7))
    assert _folded(folded) == _expected(ctx)
    _assert_same(grads, plain_grads)
    assert np.any(grads["conv_weight"] != 0)


@pytest.mark.parametrize(
    "build",
    [
        # overlapping windows: an element's gradient sums several windows'
        lambda: _net(kernel=(3, 3), stride=(2, 2)),
        # average pooling, global max pooling
        lambda: _net(pool_type="avg", kernel=(2, 2), stride=(2, 2)),
        lambda: _net(global_pool=True, kernel=(1, 1)),
        # a derivative not from the output
        lambda: _net("softrelu"),
    ],
)
def test_other_poolings_and_activations_are_left_alone(build, ctx, monkeypatch):
    symbol = build()
    folded, grads = _run(symbol, ctx, monkeypatch, True, data=(2, 1, 8, 8))
    assert _folded(folded) == []


def test_an_activation_read_by_another_step_too_is_left_alone(ctx, monkeypatch):
    net = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=2, name="conv")
    act = mx.sym.Activation(net, act_type="relu", name="act")
    pooled = mx.sym.Pooling(act, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool")
    symbol = mx.sym.MakeLoss(mx.sym.sum(pooled) + mx.sym.sum(act * act))
    folded, grads = _run(symbol, ctx, monkeypatch, True, data=(2, 1, 8, 8))
    _, plain_grads = _run(symbol, ctx, monkeypatch, False, data=(2, 1, 8, 8))
    assert _folded(folded) == []
    _assert_same(grads, plain_grads)


def test_a_window_holding_a_nan_gets_nan_gradients_throughout(ctx, monkeypatch):
    """The documented difference: the plain graph puts the NaN at the NaN element only."""
    symbol = mx.sym.MakeLoss(
        mx.sym.sum(
            mx.sym.Pooling(
                mx.sym.Activation(mx.sym.Variable("data"), act_type="tanh", name="act"),
                pool_type="max",
                kernel=(2, 2),
                stride=(2, 2),
                name="pool",
            )
        )
    )
    values = np.zeros((1, 1, 2, 4), np.float32)
    values[0, 0, 0, 0] = np.nan  # the first window holds a NaN, the second not
    folded, grads = _run(symbol, ctx, monkeypatch, True, values={"data": values}, data=(1, 1, 2, 4))
    _, plain = _run(symbol, ctx, monkeypatch, False, values={"data": values}, data=(1, 1, 2, 4))
    assert _folded(folded) == _expected(ctx)
    if ctx.device_type != "cpu":
        return
    assert np.isnan(grads["data"][0, 0, :, :2]).all()
    assert np.isnan(plain["data"][0, 0, 0, 0]) and not np.isnan(plain["data"][0, 0, 1, 1])
    np.testing.assert_array_equal(grads["data"][0, 0, :, 2:], plain["data"][0, 0, :, 2:])
