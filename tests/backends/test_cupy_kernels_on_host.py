"""The GPU backend's recurrent and sliding-window kernels, built for the host, against the CPU.

``HostCupy`` (host_kernels.py) runs each kernel's CUDA C++ body in a C++ loop
on NumPy arrays, through the same Python functions the GPU backend calls.
col2im and max pooling must give the CPU's values bit for bit (the same float
operations in the same order; CUDA may contract a multiply-add, the host
build does not); the recurrent steps and the transcendental activations the
CPU's values to float rounding (libm's tanh and exp against NumPy's); the
cells' backward kernels the finite differences of their forward kernels, in
float64. The activations', Dropout's, BatchNorm's and the labels' kernels
are in test_nn_kernels_on_host.py, the optimizers' in
test_rule_kernels_on_host.py. These
run without a GPU; the GPU suite (``-m gpu``) runs the kernels themselves.
"""

import numpy as np
import pytest

from rebind.backends import cupy_rnn_kernels
from rebind.ops import rnn_cells

from .host_kernels import compiler

pytestmark = [
    pytest.mark.skipif(compiler() is None, reason="no C++ compiler to build kernels"),
    pytest.mark.usefixtures("fresh_kernels"),
]


def _rng(seed):
    return np.random.default_rng(seed)


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
def test_max_pool_kernels_equal_the_cpu_pooling(host_cupy, name, ties, monkeypatch):
    from rebind.backends import cupy_window_kernels
    from rebind.ops import pooling
    from rebind.ops.conv_utils import crop_spatial

    # the array-operation branch the GPU kernels replace (pooling_cpu keeps stride
    # phases, not the padded array, for its backward)
    monkeypatch.setattr(pooling.pooling_cpu, "applies", lambda *args: False)

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
