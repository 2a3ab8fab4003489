"""FullyConnected or Convolution + activation as one step on a GPU (fused_dense, fused_conv).

The CPU checks (the replaced steps, and the GPU branch on kernels built for
the host) are in tests/backends/test_dense_on_host.py and
test_conv_act_on_host.py; here a real GPU runs the steps' kernels against
the plain plan on the same GPU.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.executor import fused_conv, fused_dense

from ..backends.test_conv_act_on_host import _lenet
from ..backends.test_dense_on_host import _mlp, values


def _compare_on_a_gpu(monkeypatch, module, kind, make, shapes, is_train):
    """The plan with ``module``'s rewrite against the plan without it, on the GPU."""
    reason = mx.registry.lookup("backends", "cupy").unavailable_reason()
    if reason is not None:
        pytest.skip(f"cupy backend unavailable: {reason}")
    with monkeypatch.context() as patch:
        patch.setattr(module, "find", lambda plan: [])
        plain = make().simple_bind(mx.gpu(0), **shapes)
    fused = make().simple_bind(mx.gpu(0), **shapes)
    kinds = [found for found, _, _ in fused._plan.optimizations]
    assert kinds.count(kind) == 3
    (out_e, grads_e), (out_g, grads_g) = values(plain, is_train), values(fused, is_train)
    for e, g in zip(out_e, out_g, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    assert sorted(grads_e) == sorted(grads_g)
    for name in grads_e:
        np.testing.assert_allclose(grads_g[name], grads_e[name], rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("rows", [3, 300], ids=["few-rows", "many-rows"])
@pytest.mark.parametrize("is_train", [True, False], ids=["training", "inference"])
def test_gpu_dense_steps_give_the_plain_plans_values(monkeypatch, rows, is_train):
    shapes = {"data": (rows, 5), "softmax_label": (rows,)}
    _compare_on_a_gpu(monkeypatch, fused_dense, "dense_activation", _mlp, shapes, is_train)


@pytest.mark.gpu
@pytest.mark.parametrize("is_train", [True, False], ids=["training", "inference"])
def test_gpu_conv_activation_steps_give_the_plain_plans_values(monkeypatch, is_train):
    shapes = {"data": (3, 2, 22, 22), "softmax_label": (3,)}
    _compare_on_a_gpu(monkeypatch, fused_conv, "conv_activation", _lenet, shapes, is_train)
