"""The fused LSTM layer's GPU branch on the host (core/executor/fused_layer.py).

``fusable`` says yes and every kernel is built for the host (host_kernels.py),
so the layer step runs the code a GPU runs: the products, the layer kernels
forward and backward, the weight's and bias's gradients over all steps. Its
outputs and gradients must be those of the fused cells it replaces, on the CPU.
Each test runs every way a GPU runs a layer: the recurrent products in the
step kernels (narrow layers; each unit's products by its thread, or split over
a warp, whose 32 lanes are host threads here) and as cuBLAS products beside
them (wide ones).
"""

import pytest

from rebind.backends import cupy_layer_kernels

from ..executor.test_fused_layer import LENGTH, _assert_close, _compare, _values
from ..executor.test_fused_lstm import _lm
from .host_kernels import compiler
from .test_gpu_dispatch_on_host import _through_host_kernels

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler to build kernels")


@pytest.fixture(params=["products-in-kernels", "products-over-warps", "cublas-products"])
def kernel_names(request, monkeypatch):
    """The layer's forward and backward kernel names, for each place of the products."""
    if request.param == "cublas-products":
        monkeypatch.setattr(cupy_layer_kernels, "MAX_HIDDEN_WITH_PRODUCT", 0)
        return "lstm_layer_forward", "lstm_layer_backward"
    over_warps = request.param == "products-over-warps"
    monkeypatch.setattr(cupy_layer_kernels, "PRODUCTS_OVER_WARPS", over_warps)
    if over_warps:
        return "lstm_layer_forward_over_warps", "lstm_layer_backward_over_warps"
    return "lstm_layer_forward_with_product", "lstm_layer_backward_with_product"


def _runner(monkeypatch, host_cupy, launched):
    """``run_layer`` for ``_compare``: the layered executor's values through host kernels."""

    def through_host_kernels(executor, is_train):
        with monkeypatch.context() as patch:
            _through_host_kernels(patch, host_cupy, launched)
            return _values(executor, is_train)

    return through_host_kernels


@pytest.mark.parametrize("states_out", [False, True], ids=["outputs", "outputs-and-states"])
def test_the_gpu_path_gives_the_fused_cells_values(
    host_cupy, monkeypatch, kernel_names, states_out
):
    launched = []
    through_host_kernels = _runner(monkeypatch, host_cupy, launched)

    expected, got = _compare(
        _lm(LENGTH, states_out=states_out), monkeypatch, run_layer=through_host_kernels
    )
    forward, backward = kernel_names
    assert "lstm_cell_forward" not in launched  # every cell ran inside the layers
    # one kernel a time step each way (two layers)
    assert launched.count(forward) == 2 * LENGTH
    assert launched.count(backward) == 2 * LENGTH
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)


def test_time_major_steps_through_the_gpu_path(host_cupy, monkeypatch, kernel_names):
    from ..executor.test_graph_optimize import _lstm_lm

    launched = []
    through_host_kernels = _runner(monkeypatch, host_cupy, launched)

    symbol = _lstm_lm(4, "TNC", merge_outputs=False)
    expected, got = _compare(
        symbol, monkeypatch, run_layer=through_host_kernels, data=(2, 4), softmax_label=(2, 4)
    )
    assert launched.count(kernel_names[1]) == 2 * 4
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)


def test_begin_states_that_learn_through_the_gpu_path(host_cupy, monkeypatch, kernel_names):
    """The begin output's gradient is the first step's product, after the loop."""
    import numpy as np

    import rebind as mx

    launched = []
    through_host_kernels = _runner(monkeypatch, host_cupy, launched)

    begin = [mx.sym.Variable(f"begin{k}") for k in range(4)]
    shapes = {
        "data": (3, LENGTH),
        "softmax_label": (3, LENGTH),
        **{f"begin{k}": (3, 7) for k in range(4)},
    }
    expected, got = _compare(
        _lm(LENGTH, begin_state=begin), monkeypatch, run_layer=through_host_kernels, **shapes
    )
    assert launched.count(kernel_names[1]) == 2 * LENGTH
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)
    assert all(np.abs(got[1][f"begin{k}"]).max() > 0 for k in range(4))


@pytest.mark.parametrize("case_id", ["lstm_lm_T5", "lstm_lm_T8"])
@pytest.mark.parametrize("gpu_path", [False, True], ids=["replaced-steps", "gpu-path"])
def test_mxnets_recorded_lstm_lm_through_the_layer(
    host_cupy, monkeypatch, kernel_names, case_id, gpu_path
):
    """The golden LSTM LM of MXNet 1.9.1 (forward and backward) through the layer steps."""
    import rebind as mx
    from rebind.executor import fused_layer

    from ..rnn import test_golden_lm as golden

    monkeypatch.setattr(fused_layer, "ANY_DEVICE", True)
    made, layer_step = [], fused_layer.layer_step
    monkeypatch.setattr(fused_layer, "layer_step", lambda *a: made.append(1) or layer_step(*a))
    launched = []
    with monkeypatch.context() as patch:
        if gpu_path:
            _through_host_kernels(patch, host_cupy, launched)
        golden.test_forward_backward_equal_mxnet(case_id, mx.cpu())
    assert len(made) == 2  # both layers
    assert (kernel_names[0] in launched) is gpu_path
    assert (kernel_names[1] in launched) is gpu_path


def test_a_float64_layer_through_the_gpu_path(host_cupy, monkeypatch, kernel_names):
    """The kernels built for doubles: the fused cells' values to double rounding."""
    import numpy as np

    import rebind as mx
    from rebind.executor import fused_layer

    # begin states of the layers' dtype (unroll's own are float32 zeros, which the
    # layer's dtype check sends to the replaced steps)
    begin = [mx.sym.Variable(f"begin{k}") for k in range(4)]
    symbol = _lm(LENGTH, states_out=True, begin_state=begin)
    shapes = {
        "data": (3, LENGTH),
        "softmax_label": (3, LENGTH),
        **{f"begin{k}": (3, 7) for k in range(4)},
    }
    types = {name: np.float64 for name in symbol.list_arguments()}
    runs, launched = [], []
    for layers in (False, True):
        monkeypatch.setattr(fused_layer, "ANY_DEVICE", layers)
        executor = symbol.simple_bind(mx.cpu(), type_dict=types, **shapes)
        assert executor.arg_dict["l0_h2h_weight"].dtype == np.float64
        if not layers:
            runs.append(_values(executor))
            continue
        with monkeypatch.context() as patch:
            _through_host_kernels(patch, host_cupy, launched)
            runs.append(_values(executor))
    assert launched.count(kernel_names[0]) == 2 * LENGTH
    _assert_close(*runs, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("hidden", [70, 33])
def test_warps_give_the_thread_kernels_values_across_a_wide_layer(host_cupy, hidden):
    """Layers wider than a warp: lanes take two or three terms, every exchange counts."""
    import numpy as np

    from rebind.backends import cupy_layer_warp_kernels

    rng = np.random.default_rng(hidden)
    steps, rows = 3, 2
    weight = rng.uniform(-0.3, 0.3, (4 * hidden, hidden))
    bias = rng.uniform(-0.3, 0.3, 4 * hidden)
    i2h = rng.uniform(-1, 1, (steps, rows, 4 * hidden))
    begin = rng.uniform(-1, 1, (2, rows, hidden))
    dc_out, dh_out = rng.uniform(-1, 1, (2, steps, rows, hidden))
    runs = []
    for over_warps in (False, True):
        states, outputs = (np.zeros((steps + 1, rows, hidden)) for _ in range(2))
        states[0], outputs[0] = begin
        kept = np.zeros((steps, rows, 5 * hidden))
        if over_warps:
            forward = cupy_layer_warp_kernels.lstm_layer_forward_over_warps
            backward = cupy_layer_warp_kernels.lstm_layer_backward_over_warps
            forward_weight, backward_weight = weight, np.ascontiguousarray(weight.T)
        else:
            forward = cupy_layer_kernels.lstm_layer_forward_with_product
            backward = cupy_layer_kernels.lstm_layer_backward_with_product
            forward_weight, backward_weight = np.ascontiguousarray(weight.T), weight
        for t in range(steps):
            forward(host_cupy, t, i2h[t], forward_weight, bias, states, outputs, kept)
        d_gates, carried = np.zeros((steps, rows, 4 * hidden)), np.zeros((2, rows, hidden))
        for t in range(steps - 1, -1, -1):
            backward(
                host_cupy, t, t == steps - 1, kept, states, dc_out[t], dh_out[t],
                backward_weight, d_gates, carried,
            )  # fmt: skip
        runs.append((states, outputs, kept, d_gates, carried[0]))
    for threads, warps in zip(*runs, strict=True):
        np.testing.assert_allclose(warps, threads, rtol=1e-12, atol=1e-13)
    # the values moved: a step that did nothing would pass the comparison too
    assert np.abs(runs[1][1][steps]).min() > 0 and np.abs(runs[1][3][0]).min() > 0


@pytest.mark.parametrize("hidden", [70, 33])
def test_rnn_operator_warps_give_the_thread_kernels_values(host_cupy, hidden):
    """The RNN operator's LSTM steps over warps, at widths where every exchange counts."""
    import numpy as np

    from rebind.backends import cupy_layer_warp_kernels

    rng = np.random.default_rng(hidden + 1)
    steps, rows = 3, 2
    wh = rng.uniform(-0.3, 0.3, (4 * hidden, hidden))
    h0, c0 = rng.uniform(-1, 1, (2, rows, hidden))
    xg = rng.uniform(-1, 1, (steps, rows, 4 * hidden))  # the input projections with biases
    dys = rng.uniform(-1, 1, (steps, rows, hidden))
    dh_in, dc_in = rng.uniform(-1, 1, (2, rows, hidden))
    runs = []
    for over_warps in (False, True):
        gates = xg.copy()
        cells, tanh_cells, ys = (np.zeros((steps, rows, hidden)) for _ in range(3))
        if over_warps:
            forward = cupy_layer_warp_kernels.rnn_lstm_forward_over_warps
            backward = cupy_layer_warp_kernels.rnn_lstm_backward_over_warps
            forward_weight, backward_weight = wh, np.ascontiguousarray(wh.T)
        else:
            forward = cupy_layer_kernels.rnn_lstm_forward_with_product
            backward = cupy_layer_kernels.rnn_lstm_backward_with_product
            forward_weight, backward_weight = np.ascontiguousarray(wh.T), wh
        for t in range(steps):
            forward(host_cupy, t, t - 1, forward_weight, h0, c0, gates, cells, tanh_cells, ys)
        d_gates, carried = np.zeros((steps, rows, 4 * hidden)), np.zeros((2, rows, hidden))
        for k, t in enumerate(range(steps - 1, -1, -1)):
            backward(
                host_cupy, t, t - 1, t + 1 if k else -1, (gates, cells, tanh_cells), c0,
                dys, dh_in, dc_in, backward_weight, d_gates, carried,
                ((k - 1) % 2 if k else -1, k % 2),
            )  # fmt: skip
        runs.append((gates, cells, tanh_cells, ys, d_gates, carried[(steps - 1) % 2]))
    for threads, warps in zip(*runs, strict=True):
        np.testing.assert_allclose(warps, threads, rtol=1e-12, atol=1e-13)
    assert np.abs(runs[1][3][-1]).min() > 0 and np.abs(runs[1][4][0]).min() > 0


def test_the_environment_chooses_threads_or_warps(monkeypatch):
    import subprocess
    import sys

    for value, expected in (("", False), ("threads", False), ("warps", True), (" Warps ", True)):
        monkeypatch.setenv("REBIND_RNN_PRODUCTS", value)
        assert cupy_layer_kernels._products_over_warps() is expected
    monkeypatch.setenv("REBIND_RNN_PRODUCTS", "cudnn")
    with pytest.raises(ValueError, match="REBIND_RNN_PRODUCTS='cudnn': give threads or warps"):
        cupy_layer_kernels._products_over_warps()
    # read once, when the module is imported
    monkeypatch.setenv("REBIND_RNN_PRODUCTS", "warps")
    code = "from rebind.backends import cupy_layer_kernels as k; print(k.PRODUCTS_OVER_WARPS)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"
