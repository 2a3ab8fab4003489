"""FullyConnected or Convolution + activation as one step on a GPU (fused_dense, fused_conv).

The CPU checks (the replaced steps, and the GPU branch on kernels built for
the host) are in tests/backends/test_dense_on_host.py; here a real GPU runs
the step's kernels against the plain plan on the same GPU.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.executor import fused_dense

from ..backends.test_dense_on_host import _mlp, values


@pytest.mark.gpu
@pytest.mark.parametrize("rows", [3, 300], ids=["few-rows", "many-rows"])
@pytest.mark.parametrize("is_train", [True, False], ids=["training", "inference"])
def test_gpu_dense_steps_give_the_plain_plans_values(monkeypatch, rows, is_train):
    reason = mx.registry.lookup("backends", "cupy").unavailable_reason()
    if reason is not None:
        pytest.skip(f"cupy backend unavailable: {reason}")
    shapes = {"data": (rows, 5), "softmax_label": (rows,)}
    with monkeypatch.context() as patch:
        patch.setattr(fused_dense, "find", lambda plan: [])
        plain = _mlp().simple_bind(mx.gpu(0), **shapes)
    dense = _mlp().simple_bind(mx.gpu(0), **shapes)
    kinds = [kind for kind, _, _ in dense._plan.optimizations]
    assert kinds.count("dense_activation") == 3
    (out_e, grads_e), (out_g, grads_g) = values(plain, is_train), values(dense, is_train)
    for e, g in zip(out_e, out_g, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    assert sorted(grads_e) == sorted(grads_g)
    for name in grads_e:
        np.testing.assert_allclose(grads_g[name], grads_e[name], rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("is_train", [True, False], ids=["training", "inference"])
def test_gpu_conv_activation_steps_give_the_plain_plans_values(monkeypatch, is_train):
    from rebind.executor import fused_conv

    from ..backends.test_conv_act_on_host import _lenet

    reason = mx.registry.lookup("backends", "cupy").unavailable_reason()
    if reason is not None:
        pytest.skip(f"cupy backend unavailable: {reason}")
    shapes = {"data": (3, 2, 22, 22), "softmax_label": (3,)}
    with monkeypatch.context() as patch:
        patch.setattr(fused_conv, "find", lambda plan: [])
        plain = _lenet().simple_bind(mx.gpu(0), **shapes)
    fused = _lenet().simple_bind(mx.gpu(0), **shapes)
    kinds = [kind for kind, _, _ in fused._plan.optimizations]
    assert kinds.count("conv_activation") == 3
    (out_e, grads_e), (out_g, grads_g) = values(plain, is_train), values(fused, is_train)
    for e, g in zip(out_e, out_g, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    assert sorted(grads_e) == sorted(grads_g)
    for name in grads_e:
        np.testing.assert_allclose(grads_g[name], grads_e[name], rtol=1e-5, atol=1e-6)
