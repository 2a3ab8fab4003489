"""The GRU layer's and the RNN operator's GRU kernels on the host (host_kernels.py).

test_layer_on_host.py runs the layer's GPU branch for both kinds of layer
against the fused cells; these are the GRU's own: a layer wider than
``MAX_HIDDEN_WITH_PRODUCT`` runs the fused cells' steps instead, and the
warp kernels give the thread kernels' values at widths where every exchange
counts.
"""

import numpy as np
import pytest

from rebind.backends import cupy_layer_kernels

from ..executor.test_fused_gru_layer import GRU, compare_gru
from ..executor.test_fused_layer import LENGTH, _assert_close
from ..executor.test_fused_lstm import _lm
from .host_kernels import compiler
from .test_layer_on_host import _runner

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler to build kernels")


def test_a_wide_layer_runs_the_fused_cells_steps(host_cupy, monkeypatch):
    monkeypatch.setattr(cupy_layer_kernels, "MAX_HIDDEN_WITH_PRODUCT", 0)
    launched = []
    expected, got = compare_gru(
        _lm(LENGTH, cell=GRU), monkeypatch, run_layer=_runner(monkeypatch, host_cupy, launched)
    )
    assert not {"gru_layer_forward_with_product", "gru_layer_forward_over_warps"} & set(launched)
    assert launched.count("gru_cell_forward") == 2 * LENGTH
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)


def _directions(host_cupy, forward, backward, weights, steps, rows, hidden, seed):
    """Run ``forward`` and ``backward`` over a layer's buffers, as fused_gru_layer does."""
    rng = np.random.default_rng(seed)
    bias = rng.uniform(-0.3, 0.3, 3 * hidden)
    i2h = rng.uniform(-1, 1, (steps, rows, 3 * hidden))
    outputs, kept = np.zeros((steps + 1, rows, hidden)), np.zeros((steps, rows, 4 * hidden))
    outputs[0] = rng.uniform(-1, 1, (rows, hidden))
    dh_out = rng.uniform(-1, 1, (steps, rows, hidden))
    for t in range(steps):
        forward(host_cupy, t, i2h[t], weights[0], bias, outputs, kept)
    d_i2h, d_h2h = np.zeros((2, steps, rows, 3 * hidden))
    carried = np.zeros((2, rows, hidden))
    for t in range(steps - 1, -1, -1):
        backward(
            host_cupy, t, t == steps - 1, kept, outputs, dh_out[t], weights[1], d_i2h, d_h2h,
            carried,
        )  # fmt: skip
    return outputs, kept, d_i2h, d_h2h, carried[0]


@pytest.mark.parametrize("hidden", [70, 33])
def test_warps_give_the_thread_kernels_values_across_a_wide_layer(host_cupy, hidden):
    """Layers wider than a warp: lanes take two or three terms, every exchange counts."""
    from rebind.backends import cupy_gru_layer_kernels as threads
    from rebind.backends import cupy_gru_warp_kernels as warps

    weight = np.random.default_rng(hidden).uniform(-0.3, 0.3, (3 * hidden, hidden))
    transposed = np.ascontiguousarray(weight.T)
    by_threads = _directions(
        host_cupy, threads.gru_layer_forward_with_product,
        threads.gru_layer_backward_with_product, (transposed, weight), 3, 2, hidden, 5,
    )  # fmt: skip
    by_warps = _directions(
        host_cupy, warps.gru_layer_forward_over_warps, warps.gru_layer_backward_over_warps,
        (weight, transposed), 3, 2, hidden, 5,
    )  # fmt: skip
    for got, expected in zip(by_warps, by_threads, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-13)
    assert np.abs(by_warps[0][-1]).min() > 0 and np.abs(by_warps[3][0]).min() > 0


@pytest.mark.parametrize("hidden", [70, 33])
def test_rnn_operator_warps_give_the_thread_kernels_values(host_cupy, hidden):
    """The RNN operator's GRU steps over warps, at widths where every exchange counts."""
    from rebind.backends import cupy_gru_layer_kernels as threads
    from rebind.backends import cupy_gru_warp_kernels as warps

    rng = np.random.default_rng(hidden + 2)
    steps, rows = 3, 2
    wh = rng.uniform(-0.3, 0.3, (3 * hidden, hidden))
    bh = rng.uniform(-0.3, 0.3, 3 * hidden)
    h0 = rng.uniform(-1, 1, (rows, hidden))
    xg = rng.uniform(-1, 1, (steps, rows, 3 * hidden))  # the input projections with biases
    dys = rng.uniform(-1, 1, (steps, rows, hidden))
    dh_in = rng.uniform(-1, 1, (rows, hidden))
    runs = []
    for over_warps in (False, True):
        gates, hidden_ns, ys = xg.copy(), np.zeros((steps, rows, hidden)), np.zeros(dys.shape)
        if over_warps:
            forward, backward = warps.rnn_gru_forward_over_warps, warps.rnn_gru_backward_over_warps
            forward_weight, backward_weight = wh, np.ascontiguousarray(wh.T)
        else:
            forward = threads.rnn_gru_forward_with_product
            backward = threads.rnn_gru_backward_with_product
            forward_weight, backward_weight = np.ascontiguousarray(wh.T), wh
        for t in range(steps):
            forward(host_cupy, t, t - 1, forward_weight, bh, h0, gates, hidden_ns, ys)
        d_gates, d_hidden = np.zeros((2, steps, rows, 3 * hidden))
        carried = np.zeros((2, rows, hidden))
        for k, t in enumerate(range(steps - 1, -1, -1)):
            backward(
                host_cupy, t, t - 1, t + 1 if k else -1, (gates, hidden_ns), h0, ys, dys,
                dh_in, backward_weight, d_gates, d_hidden, carried,
                ((k - 1) % 2 if k else -1, k % 2),
            )  # fmt: skip
        runs.append((gates, hidden_ns, ys, d_gates, d_hidden, carried[(steps - 1) % 2]))
    for threads_run, warps_run in zip(*runs, strict=True):
        np.testing.assert_allclose(warps_run, threads_run, rtol=1e-12, atol=1e-13)
    assert np.abs(runs[1][2][-1]).min() > 0 and np.abs(runs[1][4][0]).min() > 0
