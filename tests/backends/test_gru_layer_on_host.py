"""The fused GRU layer's GPU branch on the host (core/executor/fused_gru_layer.py).

``fusable`` says yes and every kernel is built for the host (host_kernels.py),
so the layer step runs the code a GPU runs: its step kernels forward and
backward with the recurrent products inside, the weight's and bias's
gradients over all steps. Its outputs and gradients must be those of the
fused cells it replaces, on the CPU. A layer wider than
``MAX_HIDDEN_WITH_PRODUCT`` runs the fused cells' steps instead.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.backends import cupy_layer_kernels

from ..executor.test_fused_gru_layer import GRU, _time_major_lm, compare_gru
from ..executor.test_fused_layer import LENGTH, _assert_close, _values
from ..executor.test_fused_lstm import _lm
from .host_kernels import compiler
from .test_gpu_dispatch_on_host import _through_host_kernels
from .test_layer_on_host import _runner

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler to build kernels")


@pytest.fixture(params=["threads", "warps"])
def kernel_names(request, monkeypatch):
    """The layer's forward and backward kernel names: each unit's products by a thread or
    split over a warp (whose 32 lanes are host threads here)."""
    over_warps = request.param == "warps"
    monkeypatch.setattr(cupy_layer_kernels, "PRODUCTS_OVER_WARPS", over_warps)
    if over_warps:
        return "gru_layer_forward_over_warps", "gru_layer_backward_over_warps"
    return "gru_layer_forward_with_product", "gru_layer_backward_with_product"


@pytest.mark.parametrize("states_out", [False, True], ids=["outputs", "outputs-and-states"])
def test_the_gpu_path_gives_the_fused_cells_values(
    host_cupy, monkeypatch, kernel_names, states_out
):
    forward, backward = kernel_names
    launched = []
    symbol = _lm(LENGTH, states_out=states_out, cell=GRU)
    expected, got = compare_gru(
        symbol, monkeypatch, run_layer=_runner(monkeypatch, host_cupy, launched)
    )
    assert "gru_cell_forward" not in launched  # every cell ran inside the layers
    # one kernel a time step each way (two layers)
    assert launched.count(forward) == 2 * LENGTH
    assert launched.count(backward) == 2 * LENGTH
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)


def test_begin_states_that_learn_through_the_gpu_path(host_cupy, monkeypatch, kernel_names):
    """The begin state's gradient: the first step's direct term and its projection's."""
    launched = []
    begin = [mx.sym.Variable(f"begin{k}") for k in range(2)]
    shapes = {
        "data": (3, LENGTH),
        "softmax_label": (3, LENGTH),
        **{f"begin{k}": (3, 7) for k in range(2)},
    }
    expected, got = compare_gru(
        _lm(LENGTH, begin_state=begin, cell=GRU),
        monkeypatch,
        run_layer=_runner(monkeypatch, host_cupy, launched),
        **shapes,
    )
    assert launched.count(kernel_names[1]) == 2 * LENGTH
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)
    assert all(np.abs(got[1][f"begin{k}"]).max() > 0 for k in range(2))


def test_time_major_steps_through_the_gpu_path(host_cupy, monkeypatch, kernel_names):
    launched = []
    expected, got = compare_gru(
        _time_major_lm(4),
        monkeypatch,
        run_layer=_runner(monkeypatch, host_cupy, launched),
        data=(2, 4),
        softmax_label=(2, 4),
    )
    assert launched.count(kernel_names[1]) == 2 * 4
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)


def test_a_wide_layer_runs_the_fused_cells_steps(host_cupy, monkeypatch):
    monkeypatch.setattr(cupy_layer_kernels, "MAX_HIDDEN_WITH_PRODUCT", 0)
    launched = []
    expected, got = compare_gru(
        _lm(LENGTH, cell=GRU), monkeypatch, run_layer=_runner(monkeypatch, host_cupy, launched)
    )
    assert "gru_layer_forward_with_product" not in launched
    assert launched.count("gru_cell_forward") == 2 * LENGTH
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)


def test_a_float64_layer_through_the_gpu_path(host_cupy, monkeypatch, kernel_names):
    """The kernels built for doubles: the fused cells' values to double rounding."""
    from rebind.executor import fused_layer

    begin = [mx.sym.Variable(f"begin{k}") for k in range(2)]
    symbol = _lm(LENGTH, states_out=True, begin_state=begin, cell=GRU)
    shapes = {
        "data": (3, LENGTH),
        "softmax_label": (3, LENGTH),
        **{f"begin{k}": (3, 7) for k in range(2)},
    }
    types = {name: np.float64 for name in symbol.list_arguments()}
    runs, launched = [], []
    for layers in (False, True):
        monkeypatch.setattr(fused_layer, "ANY_DEVICE", layers)
        executor = symbol.simple_bind(mx.cpu(), type_dict=types, **shapes)
        if not layers:
            runs.append(_values(executor))
            continue
        with monkeypatch.context() as patch:
            _through_host_kernels(patch, host_cupy, launched)
            runs.append(_values(executor))
    assert launched.count(kernel_names[0]) == 2 * LENGTH
    _assert_close(*runs, rtol=1e-12, atol=1e-13)


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
