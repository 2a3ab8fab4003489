"""The GPU backend's optimizer kernels, compiled for the host, against the CPU's updates.

``HostCupy`` (host_kernels.py) builds each rule's CUDA C++ body for the host.
The kernels must give the NumPy rules' values bit for bit (the same float
operations in the same order), called directly and through each optimizer's
own ``update`` with its GPU dispatch; the scatter-add must give NumPy's
``add.at``. These run without a GPU; the GPU suite (``-m gpu``) runs the
kernels themselves.
"""

import numpy as np
import pytest

from rebind.backends import cupy_kernels, cupy_rule_kernels
from rebind.optimizer import rules

from .host_kernels import compiler

pytestmark = [
    pytest.mark.skipif(compiler() is None, reason="no C++ compiler to build kernels"),
    pytest.mark.usefixtures("fresh_kernels"),
]


def _rng(seed):
    return np.random.default_rng(seed)


# -- update rules ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("momentum", "wd"), [(0.9, 1e-3), (0.9, 0.0), (0.0, 1e-3), (0.0, 0.0)])
def test_sgd_kernel_equals_the_numpy_rule(host_cupy, dtype, momentum, wd):
    rng = _rng(0)
    weight, grad, mom = (rng.standard_normal(300).astype(dtype) for _ in range(3))
    kind = np.dtype(dtype).type
    # the rule takes its settings as MXNet's float fields hold them (float32)
    lr, rescale = rules.setting(kind, 0.1), rules.setting(kind, 0.5)
    decay, rate = lr * rules.setting(kind, wd), lr * rescale
    w, m = weight.copy(), mom.copy()
    state = m if momentum else None
    cupy_kernels.sgd_step(host_cupy, w, grad, state, decay, rate, rules.setting(kind, momentum))
    expected_w, expected_m = weight.copy(), mom.copy()
    rules.sgd_step(expected_w, grad, expected_m if momentum else None, 0.1, wd, momentum, 0.5)
    np.testing.assert_array_equal(w, expected_w)
    np.testing.assert_array_equal(m, expected_m)
    assert not np.array_equal(w, weight)


def test_adam_kernel_equals_the_numpy_rule(host_cupy):
    rng = _rng(1)
    weight, grad, mean = (rng.standard_normal(500).astype(np.float32) for _ in range(3))
    var = np.abs(rng.standard_normal(500)).astype(np.float32)
    f32 = np.float32
    got = [a.copy() for a in (weight, mean, var)]
    cupy_kernels.adam_step(
        host_cupy, got[0], grad, got[1], got[2], f32(0.01), f32(0.9), f32(0.999), f32(1e-8)
    )
    expected = [a.copy() for a in (weight, mean, var)]
    rules.adam_step(np, expected[0], grad, expected[1], expected[2], 0.01, 0.9, 0.999, 1e-8)
    for value, reference in zip(got, expected, strict=True):
        np.testing.assert_allclose(value, reference, rtol=2e-7, atol=0)


@pytest.mark.parametrize("width", [1, 7])
def test_ordered_scatter_add_equals_numpy_add_at(host_cupy, width):
    rng = _rng(2)
    rows = rng.integers(0, 5, 40)
    values = rng.standard_normal((40, width)).astype(np.float32) * 1e3
    target = rng.standard_normal((5, width)).astype(np.float32)
    got = target.copy()
    cupy_kernels.ordered_scatter_add(host_cupy, got, rows, values)
    expected = target.copy()
    np.add.at(expected, rows, values)
    np.testing.assert_array_equal(got, expected)  # the same additions in the same order


# -- the other optimizer rules -------------------------------------------------------------


def _rule_arrays(count, seed=15, shape=(257,)):
    rng = _rng(seed)
    arrays = [rng.standard_normal(257).astype(np.float32) for _ in range(count)]
    arrays[0][:3] = [0.0, -0.0, 1e-3]  # the weight: zeros and a small value
    arrays[1][3:6] = [0.0, -0.0, 2.0]  # the gradient: signs of zero
    return [a[: int(np.prod(shape))].reshape(shape) for a in arrays]


def _positive(array):
    return np.abs(array) + np.float32(0.1)


def _run_rmsprop(kernels, arrays, clip):
    weight, grad, acc = arrays
    f32 = np.float32
    if kernels is None:
        rules.rmsprop_step(np, weight, grad, acc, 0.01, 0.9, 1e-8, clip)
    else:
        bound = None if clip is None else f32(clip)
        cupy_rule_kernels.rmsprop_step(
            kernels, weight, grad, acc, f32(0.01), f32(0.9), f32(1e-8), bound
        )


def _rule_cases():
    from rebind.backends import cupy_rule_kernels as k

    f32 = np.float32
    one = f32(1)
    return {
        "nag": (
            3,
            lambda h, w, g, m: k.nag_step(h, w, g, m, f32(0.1), f32(0.01), f32(0.9), False),
            lambda w, g, m: rules.nag_step(w, g, m, 0.1, 0.01, 0.9),
        ),
        "nag, old weight": (
            3,
            lambda h, w, g, m: k.nag_step(h, w, g, m, f32(0.1), f32(0.01), f32(0.9), True),
            lambda w, g, m: rules.nag_step(w, g, m, 0.1, 0.01, 0.9, decay_weight=w.copy()),
        ),
        "signsgd": (
            2,
            lambda h, w, g: k.signsgd_step(h, w, g, f32(0.1), f32(0.01)),
            lambda w, g: rules.signsgd_step(np, w, g, 0.1, 0.01),
        ),
        "signum": (
            3,
            lambda h, w, g, m: k.signum_step(h, w, g, m, f32(0.1), f32(0.01), f32(0.9), f32(0.02)),
            lambda w, g, m: rules.signum_step(np, w, g, m, 0.1, 0.01, 0.9, 0.02),
        ),
        "rmsprop": (
            3,
            lambda h, *a: _run_rmsprop(h, a, None),
            lambda *a: _run_rmsprop(None, a, None),
        ),
        "rmsprop, clipped": (
            3,
            lambda h, *a: _run_rmsprop(h, a, 0.5),
            lambda *a: _run_rmsprop(None, a, 0.5),
        ),
        "rmspropalex": (
            5,
            lambda h, w, g, n_, m, d: k.rmspropalex_step(
                h, w, g, n_, m, d, f32(0.01), f32(0.95), f32(0.9), f32(1e-8), f32(0.5)
            ),
            lambda w, g, n_, m, d: rules.rmspropalex_step(
                np, w, g, n_, m, d, 0.01, 0.95, 0.9, 1e-8, 0.5
            ),
        ),
        "ftrl": (
            4,
            lambda h, w, g, z, n_: k.ftrl_step(
                h, w, g, z, n_, f32(0.1), f32(0.01), f32(1), f32(0.001)
            ),
            lambda w, g, z, n_: rules.ftrl_step(np, w, g, z, n_, 0.1, 0.01, 1, 0.001),
        ),
        "ftml": (
            5,
            lambda h, w, g, d, v, z: k.ftml_step(
                h,
                w,
                g,
                d,
                v,
                z,
                f32(0.01),
                f32(0.6),
                f32(0.999),
                f32(1e-8),
                one - f32(0.6) ** f32(3),
                one - f32(0.999) ** f32(3),
            ),
            lambda w, g, d, v, z: rules.ftml_step(np, w, g, d, v, z, 0.01, 0.6, 0.999, 1e-8, 3),
        ),
        "adamw": (
            4,
            lambda h, w, g, m, v: k.adamw_step(
                h, w, g, m, v, f32(0.01), f32(1.0), f32(0.01), f32(0.9), f32(0.999), f32(1e-8)
            ),
            lambda w, g, m, v: rules.adamw_step(np, w, g, m, v, 0.01, 1.0, 0.01, 0.9, 0.999, 1e-8),
        ),
    }


# states read under a square root must be non-negative: (rule, array positions)
_NON_NEGATIVE = {
    "rmsprop": (2,),
    "rmsprop, clipped": (2,),
    "ftrl": (3,),
    "ftml": (3,),
    "adamw": (3,),
}


@pytest.mark.parametrize("name", list(_rule_cases()))
def test_rule_kernels_equal_the_numpy_rules(host_cupy, name):
    count, kernel, rule = _rule_cases()[name]
    arrays = _rule_arrays(count)
    for position in _NON_NEGATIVE.get(name, ()):
        arrays[position] = _positive(arrays[position])
    if name == "rmspropalex":  # n must exceed mean^2 under the square root
        arrays[2] = arrays[3] * arrays[3] + _positive(arrays[2])
    got, expected = [a.copy() for a in arrays], [a.copy() for a in arrays]
    kernel(host_cupy, *got)
    rule(*expected)
    for position, (value, reference) in enumerate(zip(got, expected, strict=True)):
        if position == 1:
            continue  # the gradient is only read
        np.testing.assert_array_equal(value, reference, err_msg=f"array {position}")
    assert not np.array_equal(got[0], arrays[0])  # the weight moved


@pytest.mark.parametrize("bias_correction", [True, False])
def test_lamb_direction_kernel_equals_the_numpy_rule(host_cupy, bias_correction):
    weight, grad, mean, var = _rule_arrays(4, seed=19)
    var = _positive(var)
    f32 = np.float32
    expected_mean, expected_var = mean.copy(), var.copy()
    expected = rules.lamb_direction(
        np, weight, grad, expected_mean, expected_var, 0.9, 0.999, 1e-6, 3, 0.01, bias_correction
    )
    first, second = (f32(1) - f32(0.9) ** f32(3), f32(1) - f32(0.999) ** f32(3))
    got_mean, got_var = mean.copy(), var.copy()
    step = cupy_rule_kernels.lamb_direction(
        host_cupy,
        weight,
        grad,
        got_mean,
        got_var,
        f32(0.9),
        f32(0.999),
        f32(1e-6),
        first if bias_correction else None,
        second if bias_correction else None,
        f32(0.01),
    )
    np.testing.assert_array_equal(got_mean, expected_mean)
    np.testing.assert_array_equal(got_var, expected_var)
    np.testing.assert_array_equal(step, expected)


@pytest.mark.parametrize(
    ("name", "settings"),
    [
        ("adagrad", {"learning_rate": 0.1, "wd": 0.01}),
        ("adadelta", {"rho": 0.9, "wd": 0.01}),
        ("adamax", {"learning_rate": 0.01, "wd": 0.01}),
        ("nadam", {"learning_rate": 0.01, "wd": 0.01}),
        ("nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}),
        ("signum", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "wd_lh": 0.02}),
        ("rmsprop", {"learning_rate": 0.01, "wd": 0.01, "clip_weights": 0.5}),
        ("rmsprop", {"learning_rate": 0.01, "centered": True, "clip_weights": 0.5}),
        ("ftrl", {"learning_rate": 0.1, "wd": 0.01}),
        ("ftml", {"learning_rate": 0.01, "wd": 0.01}),
        ("lamb", {"learning_rate": 0.01, "wd": 0.01}),
        ("dcasgd", {"learning_rate": 0.1, "wd": 0.01, "lamda": 0.05}),
        ("dcasgd", {"learning_rate": 0.1, "momentum": 0.9, "lamda": 0.05}),
        ("sgld", {"learning_rate": 0.01, "wd": 0.01}),
        ("groupadagrad", {"learning_rate": 0.1}),
    ],
)
def test_plugin_optimizer_kernels_equal_their_cpu_updates(host_cupy, monkeypatch, name, settings):
    # the optimizer's own update, once on NumPy and once through its CuPy kernel on the
    # host (the plugin's dispatch and scalar rounding included), for three steps
    import rebind as mx
    from rebind.plugins import optimizers_adagrad, optimizers_adam, optimizers_sgd

    launched = []

    def run(through_kernel):
        mx.random.seed(11)  # SGLD's noise: the same draws in both runs
        optimizer = mx.optimizer.create(name, rescale_grad=0.5, **settings)
        shape = (16, 16) if name == "groupadagrad" else (257,)  # one rate per row
        weight_values, grad_values = _rule_arrays(2, seed=20, shape=shape)
        weight = mx.nd.array(weight_values)
        state = optimizer.create_state(0, weight)
        with monkeypatch.context() as patch:
            if through_kernel:

                class Redirect:  # the kernels, built by HostCupy instead of CuPy
                    def __getattr__(self, kernel):
                        function = getattr(cupy_rule_kernels, kernel)

                        def launch(_xp, *args):
                            launched.append(kernel)
                            return function(host_cupy, *args)

                        return launch

                for module in (optimizers_adagrad, optimizers_adam, optimizers_sgd):
                    patch.setattr(module, "fusable", lambda *a, **k: True)
                    patch.setattr(module, "cupy_rule_kernels", Redirect())
                # the shared rules (optimizer/rules.py) dispatch the same way
                patch.setattr(rules, "cupy_rule_kernels", Redirect())
                patch.setattr(rules, "_cupy", lambda: None)
                patch.setattr(cupy_kernels, "fusable", lambda *a, **k: True)
            for step in range(3):
                grad = mx.nd.array(grad_values * (step + 1))
                optimizer.update(0, weight, grad, state)
        states = state if isinstance(state, (list, tuple)) else [state]
        return [weight.asnumpy(), *(s.asnumpy() for s in states if s is not None)]

    expected, got = run(False), run(True)
    assert len(launched) == 3  # one kernel per step: the GPU path ran, not the CPU's
    for value, reference in zip(got, expected, strict=True):
        np.testing.assert_array_equal(value, reference)
    assert not np.array_equal(got[0].reshape(-1), _rule_arrays(2, seed=20)[0][: got[0].size])
