"""The GPU backend's CuPy kernels, compiled for the host, against the CPU's kernels.

``HostCupy`` (host_kernels.py) runs each kernel's CUDA C++ body in a C++ loop
on NumPy arrays, through the same Python functions the GPU backend calls. The
update rules and the scatter-add must give the CPU's values bit for bit (the
same float operations in the same order; CUDA may contract a multiply-add,
the host build does not); the recurrent steps the CPU's values to float
rounding (libm's tanh against NumPy's); the cells' backward kernels the
finite differences of their forward kernels, in float64. These run without a
GPU; the GPU suite (``-m gpu``) runs the kernels themselves.
"""

import numpy as np
import pytest

from rebind.backends import cupy_kernels, cupy_rnn_kernels, cupy_rule_kernels
from rebind.ops import activation_extra, rnn_cells
from rebind.optimizer import rules

from .host_kernels import HostCupy, compiler

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler to build kernels")


@pytest.fixture(scope="module")
def host_cupy(tmp_path_factory):
    return HostCupy(tmp_path_factory.mktemp("kernels"))


@pytest.fixture(autouse=True)
def _fresh_kernel_cache(monkeypatch):
    # the module caches compiled kernels by name; a real CuPy kernel must not be reused here
    monkeypatch.setattr(cupy_kernels, "_KERNELS", {})


def _rng(seed):
    return np.random.default_rng(seed)


# -- update rules ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("momentum", "wd"), [(0.9, 1e-3), (0.9, 0.0), (0.0, 1e-3), (0.0, 0.0)])
def test_sgd_kernel_equals_the_numpy_rule(host_cupy, dtype, momentum, wd):
    rng = _rng(0)
    weight, grad, mom = (rng.standard_normal(300).astype(dtype) for _ in range(3))
    kind = np.dtype(dtype).type
    lr, rescale = kind(0.1), kind(0.5)
    decay, rate = lr * kind(wd), lr * kind(rescale)
    w, m = weight.copy(), mom.copy()
    state = m if momentum else None
    cupy_kernels.sgd_step(host_cupy, w, grad, state, decay, rate, kind(momentum))
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


# -- the RNN operator's steps -----------------------------------------------------------

ROWS, HIDDEN = 3, 4


def _lstm_case(seed):
    rng = _rng(seed)
    xg = rng.standard_normal((1, ROWS, 4 * HIDDEN)).astype(np.float32)
    wh = rng.standard_normal((4 * HIDDEN, HIDDEN)).astype(np.float32) * 0.5
    h0, c0 = (rng.standard_normal((ROWS, HIDDEN)).astype(np.float32) for _ in range(2))
    return xg, wh, h0, c0


def test_lstm_step_kernels_equal_the_cpu_step(host_cupy):
    xg, wh, h0, c0 = _lstm_case(3)
    y = np.empty((1, ROWS, HIDDEN), np.float32)
    _, c_cpu, saved = rnn_cells.LSTMCell.forward(np, xg.copy(), wh, None, h0, c0, y, False, None)
    gates_cpu, cells_cpu, tanh_cpu, _ = saved

    g = xg[0] + h0 @ wh.T  # the step's gates before activation, as the GPU step gets them
    c, tanh_c, y_gpu = (np.empty((ROWS, HIDDEN), np.float32) for _ in range(3))
    cupy_rnn_kernels.lstm_step_forward(host_cupy, g, c0, c, tanh_c, y_gpu)
    close = {"rtol": 1e-5, "atol": 1e-6}
    np.testing.assert_allclose(g, gates_cpu[0], **close)  # activated in place
    np.testing.assert_allclose(c, cells_cpu[0], **close)
    np.testing.assert_allclose(tanh_c, tanh_cpu[0], **close)
    np.testing.assert_allclose(y_gpu, y[0], **close)

    rng = _rng(4)
    dy, dh, dc = (rng.standard_normal((ROWS, HIDDEN)).astype(np.float32) for _ in range(3))
    dxg = np.empty_like(xg)
    _, dh_cpu, dc_cpu = rnn_cells.LSTMCell.backward(
        np, saved, wh, h0, c0, y, dy[None], dh, dc, False, dxg
    )
    d = np.empty((ROWS, 4 * HIDDEN), np.float32)
    dc_prev = cupy_rnn_kernels.lstm_step_backward(host_cupy, g, tanh_c, c0, dy, dh, dc, d)
    np.testing.assert_allclose(d, dxg[0], **close)
    np.testing.assert_allclose(dc_prev, dc_cpu, **close)
    np.testing.assert_allclose(d @ wh, dh_cpu, **close)
    assert np.abs(d).sum() > 0


def test_gru_step_kernels_equal_the_cpu_step(host_cupy):
    rng = _rng(5)
    xg = rng.standard_normal((1, ROWS, 3 * HIDDEN)).astype(np.float32)
    wh = rng.standard_normal((3 * HIDDEN, HIDDEN)).astype(np.float32) * 0.5
    bh = rng.standard_normal(3 * HIDDEN).astype(np.float32)
    h0 = rng.standard_normal((ROWS, HIDDEN)).astype(np.float32)
    y = np.empty((1, ROWS, HIDDEN), np.float32)
    _, _, saved = rnn_cells.GRUCell.forward(np, xg.copy(), wh, bh, h0, None, y, False, None)
    gates_cpu, hidden_n_cpu = saved

    g = xg[0].copy()
    hh = h0 @ wh.T + bh
    hidden_n, y_gpu = (np.empty((ROWS, HIDDEN), np.float32) for _ in range(2))
    cupy_rnn_kernels.gru_step_forward(host_cupy, g, hh, h0, hidden_n, y_gpu)
    close = {"rtol": 1e-5, "atol": 1e-6}
    np.testing.assert_allclose(g, gates_cpu[0], **close)
    np.testing.assert_allclose(hidden_n, hidden_n_cpu[0], **close)
    np.testing.assert_allclose(y_gpu, y[0], **close)

    dy, dh = (rng.standard_normal((ROWS, HIDDEN)).astype(np.float32) for _ in range(2))
    dxg = np.empty_like(xg)
    dhg, dh_cpu, _ = rnn_cells.GRUCell.backward(
        np, saved, wh, h0, None, y, dy[None], dh, None, False, dxg
    )
    d, d_hidden = (np.empty((ROWS, 3 * HIDDEN), np.float32) for _ in range(2))
    carry = cupy_rnn_kernels.gru_step_backward(host_cupy, g, hidden_n, h0, dy, dh, d, d_hidden)
    np.testing.assert_allclose(d, dxg[0], **close)
    np.testing.assert_allclose(d_hidden, dhg[0], **close)
    np.testing.assert_allclose(d_hidden @ wh + carry, dh_cpu, **close)


# -- the fused cells of unrolled LSTMCell / GRUCell graphs ------------------------------


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _lstm_cell_reference(i2h, h2h, c_prev):
    """MXNet's LSTMCell: gates in, forget, transform, out along the 4H axis."""
    gates = i2h + h2h
    a, b, z, d = np.split(gates, 4, axis=1)
    c = _sigmoid(b) * c_prev + _sigmoid(a) * np.tanh(z)
    return c, _sigmoid(d) * np.tanh(c)


def _gru_cell_reference(i2h, h2h, h_prev):
    """MXNet's GRUCell: reset, update, candidate along the 3H axis."""
    ir, iz, i_n = np.split(i2h, 3, axis=1)
    hr, hz, h_n = np.split(h2h, 3, axis=1)
    reset, update = _sigmoid(ir + hr), _sigmoid(iz + hz)
    candidate = np.tanh(i_n + reset * h_n)
    return (1 - update) * candidate + update * h_prev


def _numeric_gradient(loss, arrays, eps=1e-6):
    grads = []
    for array in arrays:
        grad = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            keep = array[index]
            array[index] = keep + eps
            up = loss()
            array[index] = keep - eps
            down = loss()
            array[index] = keep
            grad[index] = (up - down) / (2 * eps)
        grads.append(grad)
    return grads


def test_lstm_cell_kernels_follow_the_cell_and_its_gradient(host_cupy):
    rng = _rng(6)
    i2h, h2h = (rng.standard_normal((ROWS, 4 * HIDDEN)) for _ in range(2))
    c_prev = rng.standard_normal((ROWS, HIDDEN))
    c, h, saved = cupy_rnn_kernels.lstm_cell_forward(host_cupy, i2h, h2h, c_prev)
    expected_c, expected_h = _lstm_cell_reference(i2h, h2h, c_prev)
    np.testing.assert_allclose(c, expected_c, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(h, expected_h, rtol=1e-12, atol=1e-13)

    weight_c, weight_h = (rng.standard_normal((ROWS, HIDDEN)) for _ in range(2))

    def loss():
        c, h, _ = cupy_rnn_kernels.lstm_cell_forward(host_cupy, i2h, h2h, c_prev)
        return float((weight_c * c).sum() + (weight_h * h).sum())

    d_gates, d_c_prev = cupy_rnn_kernels.lstm_cell_backward(
        host_cupy, saved, c_prev, weight_c, weight_h
    )
    numeric_gates, numeric_c_prev = _numeric_gradient(loss, [i2h, c_prev])
    np.testing.assert_allclose(d_gates, numeric_gates, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(d_c_prev, numeric_c_prev, rtol=1e-6, atol=1e-8)
    # no gradient for c (None): the kernel reads zeros
    only_h, _ = cupy_rnn_kernels.lstm_cell_backward(host_cupy, saved, c_prev, None, weight_h)
    zeros_c, _ = cupy_rnn_kernels.lstm_cell_backward(
        host_cupy, saved, c_prev, np.zeros_like(c_prev), weight_h
    )
    np.testing.assert_array_equal(only_h, zeros_c)


def test_gru_cell_kernels_follow_the_cell_and_its_gradient(host_cupy):
    rng = _rng(7)
    i2h, h2h = (rng.standard_normal((ROWS, 3 * HIDDEN)) for _ in range(2))
    h_prev = rng.standard_normal((ROWS, HIDDEN))
    h, saved = cupy_rnn_kernels.gru_cell_forward(host_cupy, i2h, h2h, h_prev)
    np.testing.assert_allclose(h, _gru_cell_reference(i2h, h2h, h_prev), rtol=1e-12, atol=1e-13)
    weight = rng.standard_normal((ROWS, HIDDEN))

    def loss():
        h, _ = cupy_rnn_kernels.gru_cell_forward(host_cupy, i2h, h2h, h_prev)
        return float((weight * h).sum())

    d_i2h, d_h2h, d_h_prev = cupy_rnn_kernels.gru_cell_backward(host_cupy, saved, h_prev, weight)
    numeric = _numeric_gradient(loss, [i2h, h2h, h_prev])
    for got, expected in zip((d_i2h, d_h2h, d_h_prev), numeric, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def test_a_wrong_index_in_a_kernel_body_is_caught(host_cupy, monkeypatch):
    # the harness is only worth its checks if a kernel with a slip fails them
    body = cupy_rnn_kernels._LSTM_FORWARD_BODY.replace("gates + 2 * H]", "gates + H]", 1)
    monkeypatch.setattr(cupy_rnn_kernels, "_LSTM_FORWARD_BODY", body)
    rng = _rng(8)
    i2h, h2h = (rng.standard_normal((ROWS, 4 * HIDDEN)) for _ in range(2))
    c_prev = rng.standard_normal((ROWS, HIDDEN))
    c, _, _ = cupy_rnn_kernels.lstm_cell_forward(host_cupy, i2h, h2h, c_prev)
    expected_c, _ = _lstm_cell_reference(i2h, h2h, c_prev)
    assert not np.allclose(c, expected_c, rtol=1e-3)


# -- sliding windows: col2im and max pooling --------------------------------------------

WINDOWS = {
    # name: (kernel, stride, dilate, pad, spatial size)
    "lenet 5x5": ((5, 5), (1, 1), (1, 1), (0, 0), (12, 12)),
    "2x2 tiles": ((2, 2), (2, 2), (1, 1), (0, 0), (8, 6)),
    "3x3 s2 padded": ((3, 3), (2, 2), (1, 1), (1, 1), (7, 9)),
    "dilated 1-D": ((3,), (1,), (2,), (1,), (11,)),
    "3-D": ((2, 3, 2), (1, 2, 2), (1, 1, 1), (0, 1, 0), (4, 5, 4)),
}


def _window(kernel, stride, dilate, pad, size):
    from rebind.ops.conv_utils import Window, conv_out_size

    out = tuple(conv_out_size(*g) for g in zip(size, kernel, stride, dilate, pad, strict=True))
    return Window(kernel, stride, dilate, pad, size, out)


@pytest.mark.parametrize("batch_last", [True, False])
@pytest.mark.parametrize("name", list(WINDOWS))
def test_col2im_kernel_equals_the_cpu_sums(host_cupy, name, batch_last):
    from rebind.backends import cupy_window_kernels
    from rebind.ops.conv_utils import col2im, crop_spatial

    window = _window(*WINDOWS[name])
    channels, batch = 2, 3
    rows = channels * int(np.prod(window.kernel))
    cols = _rng(9).standard_normal((rows, int(np.prod(window.out)) * batch)).astype(np.float32)
    expected = col2im(np, cols, window, channels, batch, batch_last)
    padded = cupy_window_kernels.col2im(host_cupy, cols, window, channels, batch, batch_last)
    got = crop_spatial(padded, window, 1 if batch_last else 2)
    np.testing.assert_array_equal(got, expected)  # the same sums in the same order


class _MaxPool:
    pool_type = "max"


class _Host:
    xp = np


def _pool_input(seed, window, ties):
    rng = _rng(seed)
    shape = (2, 3, *window.size)
    if ties:  # few distinct values: windows hold several maxima
        return rng.integers(0, 3, shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("name", ["2x2 tiles", "3x3 s2 padded", "dilated 1-D", "3-D"])
def test_max_pool_kernels_equal_the_cpu_pooling(host_cupy, name, ties):
    from rebind.backends import cupy_window_kernels
    from rebind.ops import pooling
    from rebind.ops.conv_utils import crop_spatial

    window = _window(*WINDOWS[name])
    x = _pool_input(10, window, ties)
    out, padded = pooling._window_forward(_Host, _MaxPool, x, window, np.float32)
    got_out = cupy_window_kernels.max_pool_forward(host_cupy, np.ascontiguousarray(padded), window)
    np.testing.assert_array_equal(got_out, out)

    grad = _rng(11).standard_normal(out.shape).astype(np.float32)
    expected = pooling._window_backward(_Host, _MaxPool, padded, out, grad, window, np.float32)
    dx = cupy_window_kernels.max_pool_backward(host_cupy, padded, out, grad, window)
    got = crop_spatial(dx, window, 2)
    np.testing.assert_array_equal(got, expected)
    # each window's gradient reaches exactly one element: the totals agree
    np.testing.assert_allclose(got.sum(), grad.sum(), rtol=1e-5)


def test_max_pool_kernel_propagates_nan_as_maximum_does(host_cupy):
    from rebind.backends import cupy_window_kernels

    window = _window(*WINDOWS["2x2 tiles"])
    x = _pool_input(12, window, False)
    x[0, 0, 0, 1] = np.nan
    got = cupy_window_kernels.max_pool_forward(host_cupy, x, window)
    assert np.isnan(got[0, 0, 0, 0]) and not np.isnan(got[0, 0, 0, 1])


# -- activations ---------------------------------------------------------------------------


class _Act:
    def __init__(self, act_type):
        self.act_type = act_type


class _ActContext:
    xp = np

    def __init__(self, inplace=False, grad_inplace=False):
        self.inplace, self.grad_inplace, self.is_train = inplace, grad_inplace, True


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


def test_batchnorm_kernels_equal_the_cpu_batchnorm(host_cupy):
    from rebind.backends import cupy_nn_kernels
    from rebind.ops import norm

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
