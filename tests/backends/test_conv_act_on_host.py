"""Convolution + activation as one step (core/executor/fused_conv.py), on the host.

The rewrite is made for GPU contexts; ``ANY_DEVICE`` makes it here. Through
the replaced steps (NumPy arrays) and through the GPU branch with every
kernel built for the host (host_kernels.py), a LeNet-like network's outputs
and gradients must be the plain plan's, for training and inference, over
both working layouts of a convolution (batch last for short output rows,
batch second for long ones).
"""

import pytest

import rebind as mx
from rebind.executor import fused_conv

from .host_kernels import compiler
from .test_dense_on_host import _assert_close, _rewrites, values
from .test_gpu_dispatch_on_host import _through_host_kernels

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler to build kernels")


def _lenet():
    net = mx.sym.Variable("data")
    # 20 x 20 out (rows of 20: batch second), then 8 x 8 (batch last)
    net = mx.sym.Convolution(net, kernel=(3, 3), num_filter=3, name="conv0")
    net = mx.sym.Activation(net, act_type="tanh", name="act0")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool0")
    net = mx.sym.Convolution(net, kernel=(3, 3), num_filter=4, name="conv1")
    net = mx.sym.Activation(net, act_type="relu", name="act1")
    net = mx.sym.Convolution(net, kernel=(1, 1), num_filter=2, name="conv2")
    net = mx.sym.Activation(net, act_type="sigmoid", name="act2")
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=4, name="out")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _run(is_train):
    executor = _lenet().simple_bind(mx.cpu(), data=(3, 2, 22, 22), softmax_label=(3,))
    return _rewrites(executor), *values(executor, is_train, seed=5)


@pytest.mark.parametrize("is_train", [True, False], ids=["training", "inference"])
def test_conv_activation_steps_give_the_plain_plans_values(host_cupy, monkeypatch, is_train):
    plain = _run(is_train)
    assert "conv_activation" not in plain[0]  # made for GPU contexts only
    monkeypatch.setattr(fused_conv, "ANY_DEVICE", True)
    steps = _run(is_train)  # NumPy arrays: the replaced steps themselves
    assert steps[0].count("conv_activation") == 3
    _assert_close(plain, steps, rtol=1e-6)
    launched = []
    with monkeypatch.context() as patch:
        _through_host_kernels(patch, host_cupy, launched)
        kernels = _run(is_train)
    assert launched.count("bias_activation_from_work") == 3
    assert "activation_forward" not in launched
    assert launched.count("activation_grad_to_work") == (3 if is_train else 0)
    assert "activation_backward" not in launched
    _assert_close(plain, kernels, rtol=1e-5)
