"""The SGD and Adam rules on each backend against the formulas, computed in float64.

On the GPU the rules run as one fused kernel each (backends/cupy_kernels.py);
on the CPU as NumPy passes. Both must give the formulas' values to float32
rounding, and leave every array they update changed in place.
"""

import numpy as np
import pytest

from rebind.backends.cupy_kernels import fusable
from rebind.optimizer import rules


def _arrays(seed, n=1000):
    rng = np.random.default_rng(seed)
    weight, grad, state = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    return weight, grad, state, np.abs(rng.standard_normal(n)).astype(np.float32)


def _device(ctx, *arrays):
    xp = ctx.backend.xp
    return [xp.array(a) for a in arrays]


def _host(ctx, array):
    return ctx.backend.to_host(array)


@pytest.mark.parametrize(("momentum", "wd"), [(0.9, 1e-3), (0.9, 0.0), (0.0, 1e-3), (0.0, 0.0)])
def test_sgd_rule_follows_the_formula(ctx, momentum, wd):
    weight, grad, mom, _ = _arrays(0)
    lr, rescale = 0.1, 0.5
    with ctx.backend.device(ctx.device_id):
        w, g, m = _device(ctx, weight, grad, mom)
        rules.sgd_step(w, g, m if momentum else None, lr, wd, momentum, rescale)
        got_w, got_m = _host(ctx, w), _host(ctx, m)
    w64, g64, m64 = (a.astype(np.float64) for a in (weight, grad, mom))
    if momentum:
        m64 = momentum * m64 - lr * wd * w64 - lr * rescale * g64
        expected_w = w64 + m64
        np.testing.assert_allclose(got_m, m64, rtol=1e-5, atol=1e-6)
    else:
        expected_w = (1 - lr * wd) * w64 - lr * rescale * g64
        np.testing.assert_array_equal(got_m, mom)  # no momentum: the state is not touched
    np.testing.assert_allclose(got_w, expected_w, rtol=1e-5, atol=1e-6)


def _shifted(ctx, array, by):
    """``array`` on the device, as a view starting ``by`` elements into a buffer."""
    buffer = ctx.backend.xp.zeros(array.size + by, dtype=array.dtype)
    view = buffer[by:]
    view[...] = ctx.backend.xp.asarray(array)
    return view


@pytest.mark.parametrize("shift", [0, 1])
def test_sgd_steps_follow_the_formula_for_several_weights(ctx, shift):
    # on the GPU, weights sharing their rates are updated in one launch (cupy_multi_kernels):
    # four elements a thread, or, with a weight off a 16-byte word (shift 1), one
    sizes, wds = (1000, 1, 37, 0, 4096), (1e-3, 0.0, 1e-3, 1e-3, 0.0)
    rng = np.random.default_rng(3)
    host = [[rng.standard_normal(n).astype(np.float32) for n in sizes] for _ in range(3)]
    lr, momentum, rescale = 0.1, 0.9, 0.5
    with ctx.backend.device(ctx.device_id):
        weights, grads, moms = ([*_device(ctx, *arrays)] for arrays in host)
        weights[2] = _shifted(ctx, host[0][2], shift)
        for _ in range(2):
            rules.sgd_steps(weights, grads, moms, [lr] * 5, wds, momentum, rescale)
        got = [[_host(ctx, a) for a in arrays] for arrays in (weights, moms)]
    for k, wd in enumerate(wds):
        w64, g64, m64 = (arrays[k].astype(np.float64) for arrays in host)
        for _ in range(2):
            m64 = momentum * m64 - lr * wd * w64 - lr * rescale * g64
            w64 = w64 + m64
        np.testing.assert_allclose(got[0][k], w64, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[1][k], m64, rtol=1e-5, atol=1e-6)


def test_adam_rule_follows_the_formula(ctx):
    weight, grad, mean, var = _arrays(1)
    lr, beta1, beta2, epsilon = 0.01, 0.9, 0.999, 1e-8
    with ctx.backend.device(ctx.device_id):
        w, g, m, v = _device(ctx, weight, grad, mean, var)
        rules.adam_step(ctx.backend.xp, w, g, m, v, lr, beta1, beta2, epsilon)
        got = [_host(ctx, a) for a in (w, m, v)]
    w64, g64, m64, v64 = (a.astype(np.float64) for a in (weight, grad, mean, var))
    m64 = beta1 * m64 + (1 - beta1) * g64
    v64 = beta2 * v64 + (1 - beta2) * g64 * g64
    w64 = w64 - lr * m64 / (np.sqrt(v64) + epsilon)
    for value, expected in zip(got, (w64, m64, v64), strict=True):
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6)


def test_the_gpu_runs_the_fused_kernels(ctx):
    """On CuPy float32 arrays of one shape the fused path is the one taken; else not."""
    weight, grad, mom, _ = _arrays(2, n=8)
    with ctx.backend.device(ctx.device_id):
        w, g, m = _device(ctx, weight, grad, mom)
        on_gpu = ctx.device_type == "gpu"
        assert fusable(w, g, m, same_shape=True) is on_gpu
        assert fusable(w, g[:4], m, same_shape=True) is False  # shapes differ
        assert fusable(w.astype("float16"), g, m, same_shape=True) is False
