"""FullyConnected + activation as one step (core/executor/fused_dense.py), on the host.

The rewrite is made for GPU contexts; ``ANY_DEVICE`` makes it here. Through
the replaced steps (NumPy arrays) and through the GPU branch with every
kernel built for the host (host_kernels.py), an MLP's outputs and gradients
must be the plain plan's, forward and backward, for training and inference,
with few rows (the column kernel) and many (the activation's kernel, then
the FullyConnected's bias sum).
"""

import numpy as np
import pytest

import rebind as mx
from rebind.executor import fused_dense

from .host_kernels import compiler
from .test_gpu_dispatch_on_host import _through_host_kernels

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler to build kernels")


def _mlp(head="softmax"):
    net = mx.sym.Variable("data")
    for k, act in enumerate(("relu", "sigmoid", "tanh")):
        net = mx.sym.FullyConnected(net, num_hidden=6 + k, name=f"fc{k}")
        net = mx.sym.Activation(net, act_type=act, name=f"act{k}")
    net = mx.sym.FullyConnected(net, num_hidden=4, name="out")
    if head == "softmax":
        return mx.sym.SoftmaxOutput(net, name="softmax")
    return mx.sym.MakeLoss(mx.sym.sum(net * net))


def _rewrites(executor):
    return [kind for kind, _, _ in executor._plan.optimizations]


def values(executor, is_train, seed=0):
    """Outputs and gradients after seeded inputs (labels of 4 classes)."""
    rng = np.random.default_rng(seed)
    for name, array in sorted(executor.arg_dict.items()):
        if name == "softmax_label":
            array[:] = rng.integers(0, 4, array.shape)
        else:
            array[:] = rng.standard_normal(array.shape)
    outputs = [o.asnumpy() for o in executor.forward(is_train=is_train)]
    if not is_train:
        return outputs, {}
    executor.backward()
    return outputs, {n: g.asnumpy() for n, g in executor.grad_dict.items() if g is not None}


def _run(symbol, rows, is_train=True):
    executor = symbol.simple_bind(mx.cpu(), data=(rows, 5), softmax_label=(rows,))
    return _rewrites(executor), *values(executor, is_train, seed=rows)


def _assert_close(expected, got, rtol):
    for e, g in zip(expected[1], got[1], strict=True):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol)
    assert sorted(expected[2]) == sorted(got[2])
    for name in expected[2]:
        np.testing.assert_allclose(got[2][name], expected[2][name], rtol=rtol, atol=rtol)


@pytest.mark.parametrize("rows", [3, 300], ids=["few-rows", "many-rows"])
@pytest.mark.parametrize("is_train", [True, False], ids=["training", "inference"])
def test_dense_steps_give_the_plain_plans_values(host_cupy, monkeypatch, rows, is_train):
    symbol = _mlp()
    plain = _run(symbol, rows, is_train)
    assert "dense_activation" not in plain[0]  # made for GPU contexts only
    monkeypatch.setattr(fused_dense, "ANY_DEVICE", True)
    steps = _run(symbol, rows, is_train)  # NumPy arrays: the replaced steps themselves
    assert steps[0].count("dense_activation") == 3
    _assert_close(plain, steps, rtol=1e-6)
    launched = []
    with monkeypatch.context() as patch:
        _through_host_kernels(patch, host_cupy, launched)
        kernels = _run(symbol, rows, is_train)
    assert launched.count("bias_activation_forward") == 3
    assert "activation_forward" not in launched
    in_one = launched.count("activation_backward_with_bias_sums")
    assert in_one == (3 if is_train and rows <= 256 else 0)
    assert launched.count("activation_backward") == (3 if is_train and rows > 256 else 0)
    _assert_close(plain, kernels, rtol=1e-5)


def test_an_activation_read_elsewhere_or_a_head_is_left_alone(monkeypatch):
    monkeypatch.setattr(fused_dense, "ANY_DEVICE", True)
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    act = mx.sym.Activation(fc, act_type="relu", name="act")
    shared = mx.sym.Group([mx.sym.MakeLoss(mx.sym.sum(act)), mx.sym.BlockGrad(fc)])
    softrelu = mx.sym.MakeLoss(mx.sym.sum(mx.sym.Activation(fc, act_type="softrelu", name="soft")))
    no_bias = mx.sym.MakeLoss(
        mx.sym.sum(
            mx.sym.Activation(
                mx.sym.FullyConnected(data, num_hidden=4, no_bias=True, name="nb"),
                act_type="tanh",
            )
        )
    )
    for symbol in (shared, softrelu, no_bias):
        executor = symbol.simple_bind(mx.cpu(), data=(2, 3))
        assert "dense_activation" not in _rewrites(executor)


def test_a_dense_steps_gradient_is_computed_in_place_when_a_dense_step_reads_it(monkeypatch):
    monkeypatch.setattr(fused_dense, "ANY_DEVICE", True)
    executor = _mlp().simple_bind(mx.cpu(), data=(3, 5), softmax_label=(3,))
    optimizations = executor._plan.optimizations
    inplace = [name for kind, name, _ in optimizations if kind == "inplace_activation_gradient"]
    # act0 and act1 are read by the next dense step, act2 by the projected softmax
    assert inplace == ["fc0+act0", "fc1+act1", "fc2+act2"]
