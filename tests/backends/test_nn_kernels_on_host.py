"""The GPU backend's activation, Dropout, BatchNorm and label kernels, built for the host.

``HostCupy`` (host_kernels.py) builds each kernel's CUDA C++ body for the host
and the tests run it through the functions the GPU backend calls. The results
must be the CPU kernels' bit for bit where the kernel holds no transcendental
function (relu, every gradient, Dropout, BatchNorm, the labels), and to float
rounding for sigmoid and tanh (the C library's exp and tanh against NumPy's).
"""

import numpy as np
import pytest

from rebind.ops import activation_extra

from .host_kernels import compiler

pytestmark = [
    pytest.mark.skipif(compiler() is None, reason="no C++ compiler to build kernels"),
    pytest.mark.usefixtures("fresh_kernels"),
]


def _rng(seed):
    return np.random.default_rng(seed)


# -- activations ---------------------------------------------------------------------------


class _Act:
    def __init__(self, act_type):
        self.act_type = act_type


class _ActContext:
    xp = np

    def __init__(self, inplace=False, grad_inplace=False):
        self.inplace, self.grad_inplace, self.is_train = inplace, grad_inplace, True
        self.grad_passthrough = False


def _activation_input(seed):
    x = _rng(seed).standard_normal((4, 9)).astype(np.float32) * 3
    x[0, :4] = [0.0, -0.0, np.nan, -np.inf]
    return x


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("act_type", ["relu", "sigmoid", "tanh"])
def test_activation_kernels_equal_the_cpu_kernels(host_cupy, act_type, inplace):
    from rebind.backends import cupy_nn_kernels
    from rebind.ops import nn

    x = _activation_input(13)
    params = _Act(act_type)
    (expected,), _ = nn._act_forward(_ActContext(), params, [x.copy()], [])
    source = x.copy()
    got = cupy_nn_kernels.activation_forward(host_cupy, act_type, source, inplace)
    assert (got is source) == inplace
    # relu has no transcendental: bit for bit, signed zeros and NaN included; exp and
    # tanh are the C library's here, NumPy's on the CPU
    if act_type == "relu":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=2e-7, atol=1e-7)

    grad = _rng(14).standard_normal(x.shape).astype(np.float32)
    (expected_dx,) = nn._act_backward(_ActContext(), params, (x, expected), [grad.copy()], [True])
    received = grad.copy()
    dx = cupy_nn_kernels.activation_backward(host_cupy, act_type, expected, received, inplace)
    assert (dx is received) == inplace
    np.testing.assert_array_equal(dx, expected_dx)  # products only: the same bits


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("drop", [0.3, 1.0])
def test_dropout_kernel_equals_the_cpu_mask_and_product(host_cupy, dtype, drop):
    from rebind.backends import cupy_nn_kernels

    rng = _rng(16)
    x = rng.standard_normal((5, 7)).astype(dtype)
    draws = rng.uniform(0, 1, (5, 7)).astype(np.float32)
    keep = 1 - drop
    scale = 0.0 if keep == 0 else 1 / keep

    class Backend:  # the CPU kernel draws these
        @staticmethod
        def uniform(low, high, shape, dtype, device_id):
            return draws

    class Context:
        xp, backend, device_id, is_train = np, Backend, 0, True

    params = activation_extra.DropoutParams(p=drop)
    (expected,), mask = activation_extra._dropout_forward(Context, params, [x], [])
    out, got_mask = cupy_nn_kernels.dropout_forward(
        host_cupy, x, draws, np.float32(keep), x.dtype.type(scale)
    )
    np.testing.assert_array_equal(got_mask, mask)
    np.testing.assert_array_equal(out, expected)
    assert (got_mask == 0).any() and ((got_mask != 0).any() or drop == 1.0)


def test_batchnorm_kernels_equal_the_cpu_batchnorm(host_cupy, monkeypatch):
    from rebind.backends import cupy_nn_kernels
    from rebind.ops import norm

    # the array-operation branch the GPU kernels replace, bit for bit (norm_cpu's
    # threaded NumPy kernels sum in another order)
    monkeypatch.setattr(norm.norm_cpu, "applies", lambda *args: False)

    rng = _rng(17)
    x = rng.standard_normal((4, 3, 5, 5)).astype(np.float32) * 2 + 1
    gamma, beta = (rng.standard_normal(3).astype(np.float32) for _ in range(2))
    aux = [np.zeros(3, np.float32), np.ones(3, np.float32)]
    params = norm.BatchNormParams(fix_gamma=False)

    class Context:
        xp, is_train = np, True

    (out,), saved = norm._bn_forward(Context, params, [x, gamma, beta], aux)
    xhat_cpu = saved[0]
    axes, view = (0, 2, 3), (1, 3, 1, 1)
    mean, var, centered = norm._moments(np, x, axes)
    invstd = 1 / np.sqrt(var.reshape(-1) + params.eps)
    xhat, got = cupy_nn_kernels.batchnorm_normalize(
        host_cupy, centered, invstd.reshape(view), gamma.reshape(view), beta.reshape(view)
    )
    np.testing.assert_array_equal(xhat, xhat_cpu)
    np.testing.assert_array_equal(got, out)

    grad = rng.standard_normal(x.shape).astype(np.float32)
    dx_cpu, _, _ = norm._bn_backward(Context, params, saved, [grad], [True, True, True])
    factor = (gamma * invstd).reshape(view)
    product = grad * xhat
    dx = cupy_nn_kernels.batchnorm_input_grad(
        host_cupy,
        grad,
        xhat,
        grad.mean(axis=axes, keepdims=True),
        product.mean(axis=axes, keepdims=True),
        factor,
    )
    np.testing.assert_array_equal(dx, dx_cpu)


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")  # the NaN label
@pytest.mark.parametrize("label_dtype", [np.float32, np.int64])
def test_label_kernels_equal_the_cpu_softmax_gradient(host_cupy, label_dtype):
    from rebind.backends import cupy_nn_kernels
    from rebind.executor import fused_ops

    rng = _rng(18)
    prob = rng.random((7, 5)).astype(np.float32)
    labels = (
        [0, 4, 2.7, -0.5, 5, -3, np.nan] if label_dtype == np.float32 else [0, 4, 2, 1, 5, -3, 9]
    )
    label = np.array(labels, dtype=label_dtype)
    # the CPU's fused softmax backward changes prob for its FullyConnected backward:
    # what that backward sees is the gradient to compare with
    seen = []

    class Projection:
        @staticmethod
        def backward(ctx, params, saved, grads, need):
            seen.append(grads[0].copy())
            return [None, None, None]

    class Params:
        fc_op, fc_params = Projection, None

    class Context:
        xp = np

    original = prob.copy()
    fused_ops._numpy_projected_backward(
        Context, Params, None, prob, label.astype(np.float32), [False, True, True, False]
    )
    np.testing.assert_array_equal(prob, original)  # given back
    expected = seen[0]

    got, kept = prob.copy(), np.empty(7, np.float32)
    cupy_nn_kernels.subtract_label_ones(host_cupy, got, label, kept)
    np.testing.assert_array_equal(got, expected)
    cupy_nn_kernels.restore_label_scores(host_cupy, got, label, kept)
    np.testing.assert_array_equal(got, original)
    plain = prob.copy()
    cupy_nn_kernels.subtract_label_ones(host_cupy, plain, label)  # without keeping
    np.testing.assert_array_equal(plain, expected)
