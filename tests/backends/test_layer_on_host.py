"""The fused LSTM and GRU layers' GPU branch on the host (core/executor/fused_layer.py).

``fusable`` says yes and every kernel is built for the host (host_kernels.py),
so the layer step runs the code a GPU runs: the products, the layer kernels
forward and backward, the weight's and bias's gradients over all steps. Its
outputs and gradients must be those of the fused cells it replaces, on the CPU.
Each test runs every way a GPU runs a layer of either kind: the recurrent
products in the step kernels (narrow layers; each unit's products by its
thread, or split over a warp, whose 32 lanes are host threads here) and, for
the LSTM, as cuBLAS products beside them (wide ones).
"""

import pytest

from rebind.backends import cupy_layer_kernels

from ..executor.test_fused_layer import (
    KINDS,
    LENGTH,
    _assert_close,
    _compare,
    _values,
    begin_states,
)
from ..executor.test_fused_lstm import _lm
from .host_kernels import compiler
from .test_gpu_dispatch_on_host import _through_host_kernels

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler to build kernels")


# every way a GPU runs a layer: (kind, the products' place) -> the forward and backward
# kernels a time step (a GRU layer wider than the kernels take runs the fused cells' steps:
# test_gru_layer_on_host.py)
WAYS = {
    ("lstm", "threads"): ("lstm_layer_forward_with_product", "lstm_layer_backward_with_product"),
    ("lstm", "warps"): ("lstm_layer_forward_over_warps", "lstm_layer_backward_over_warps"),
    ("lstm", "cublas"): ("lstm_layer_forward", "lstm_layer_backward"),
    ("gru", "threads"): ("gru_layer_forward_with_product", "gru_layer_backward_with_product"),
    ("gru", "warps"): ("gru_layer_forward_over_warps", "gru_layer_backward_over_warps"),
}


class _Way:
    def __init__(self, kind, place):
        self.kind, self.cell = kind, KINDS[kind][0]
        self.forward, self.backward = WAYS[(kind, place)]


@pytest.fixture(params=sorted(WAYS), ids=lambda way: "-".join(way))
def way(request, monkeypatch):
    """A kind of layer and the place of its recurrent products, set for the test."""
    kind, place = request.param
    if place == "cublas":
        monkeypatch.setattr(cupy_layer_kernels, "MAX_HIDDEN_WITH_PRODUCT", 0)
    monkeypatch.setattr(cupy_layer_kernels, "PRODUCTS_OVER_WARPS", place == "warps")
    return _Way(kind, place)


def _runner(monkeypatch, host_cupy, launched):
    """``run_layer`` for ``_compare``: the layered executor's values through host kernels."""

    def through_host_kernels(executor, is_train):
        with monkeypatch.context() as patch:
            _through_host_kernels(patch, host_cupy, launched)
            return _values(executor, is_train)

    return through_host_kernels


@pytest.mark.parametrize("states_out", [False, True], ids=["outputs", "outputs-and-states"])
def test_the_gpu_path_gives_the_fused_cells_values(host_cupy, monkeypatch, way, states_out):
    launched = []
    expected, got = _compare(
        _lm(LENGTH, states_out=states_out, cell=way.cell),
        monkeypatch,
        run_layer=_runner(monkeypatch, host_cupy, launched),
        kind=way.kind,
    )
    assert f"{way.kind}_cell_forward" not in launched  # every cell ran inside the layers
    # one kernel a time step each way (two layers)
    assert launched.count(way.forward) == 2 * LENGTH
    assert launched.count(way.backward) == 2 * LENGTH
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)


def test_time_major_steps_through_the_gpu_path(host_cupy, monkeypatch, way):
    from ..executor.test_fused_gru_layer import _time_major_lm
    from ..executor.test_graph_optimize import _lstm_lm

    launched = []
    if way.kind == "lstm":
        symbol = _lstm_lm(4, "TNC", merge_outputs=False)
    else:
        symbol = _time_major_lm(4)
    expected, got = _compare(
        symbol,
        monkeypatch,
        run_layer=_runner(monkeypatch, host_cupy, launched),
        kind=way.kind,
        data=(2, 4),
        softmax_label=(2, 4),
    )
    assert launched.count(way.backward) == 2 * 4
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)


def test_begin_states_that_learn_through_the_gpu_path(host_cupy, monkeypatch, way):
    """The begin states' gradients come out after the loop (the first step's product)."""
    import numpy as np

    launched = []
    begin, begin_shapes = begin_states(way.kind, 3)
    shapes = {"data": (3, LENGTH), "softmax_label": (3, LENGTH), **begin_shapes}
    expected, got = _compare(
        _lm(LENGTH, begin_state=begin, cell=way.cell),
        monkeypatch,
        run_layer=_runner(monkeypatch, host_cupy, launched),
        kind=way.kind,
        **shapes,
    )
    assert launched.count(way.backward) == 2 * LENGTH
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)
    assert all(np.abs(got[1][name]).max() > 0 for name in begin_shapes)


@pytest.mark.parametrize(
    "way", [w for w in sorted(WAYS) if w[0] == "lstm"], ids="-".join, indirect=True
)
@pytest.mark.parametrize("case_id", ["lstm_lm_T5", "lstm_lm_T8"])
@pytest.mark.parametrize("gpu_path", [False, True], ids=["replaced-steps", "gpu-path"])
def test_mxnets_recorded_lstm_lm_through_the_layer(host_cupy, monkeypatch, way, case_id, gpu_path):
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
    assert (way.forward in launched) is gpu_path
    assert (way.backward in launched) is gpu_path


def test_a_float64_layer_through_the_gpu_path(host_cupy, monkeypatch, way):
    """The kernels built for doubles: the fused cells' values to double rounding."""
    import numpy as np

    import rebind as mx
    from rebind.executor import fused_layer

    # begin states of the layers' dtype (unroll's own are float32 zeros, which the
    # layer's dtype check sends to the replaced steps)
    begin, begin_shapes = begin_states(way.kind, 3)
    symbol = _lm(LENGTH, states_out=True, begin_state=begin, cell=way.cell)
    shapes = {"data": (3, LENGTH), "softmax_label": (3, LENGTH), **begin_shapes}
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
    assert launched.count(way.forward) == 2 * LENGTH
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

    for value, expected in (("", True), ("threads", False), ("warps", True), (" Threads ", False)):
        monkeypatch.setenv("REBIND_RNN_PRODUCTS", value)
        assert cupy_layer_kernels._products_over_warps() is expected
    monkeypatch.setenv("REBIND_RNN_PRODUCTS", "cudnn")
    with pytest.raises(ValueError, match="REBIND_RNN_PRODUCTS='cudnn': give threads or warps"):
        cupy_layer_kernels._products_over_warps()
    # read once, when the module is imported
    monkeypatch.setenv("REBIND_RNN_PRODUCTS", "threads")
    code = "from rebind.backends import cupy_layer_kernels as k; print(k.PRODUCTS_OVER_WARPS)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("over_warps", "hidden", "rows", "gates", "expected"),
    [
        # over warps: up to 2**26 multiply-adds a step, and 512 units
        (True, 200, 32, 4, True),
        (True, 512, 32, 4, True),  # 4 x 32 x 512 x 512 = 2**25
        (True, 256, 128, 4, True),
        (True, 512, 64, 4, True),  # 2**26 exactly
        (True, 512, 65, 4, False),
        (True, 512, 128, 4, False),
        (True, 512, 85, 3, True),  # a GRU's three gates: 66.8M
        (True, 512, 86, 3, False),
        (True, 513, 1, 4, False),  # wider than MAX_HIDDEN_WITH_PRODUCT
        (True, 1024, 32, 4, False),
        # a thread a unit: up to 256 units, any batch
        (False, 256, 4096, 4, True),
        (False, 257, 1, 4, False),
        (False, 512, 32, 4, False),
    ],
)
def test_where_steps_work_out_their_products(
    monkeypatch, over_warps, hidden, rows, gates, expected
):
    monkeypatch.setattr(cupy_layer_kernels, "PRODUCTS_OVER_WARPS", over_warps)
    assert cupy_layer_kernels.with_product(hidden, rows, gates) is expected
    monkeypatch.setattr(cupy_layer_kernels, "MAX_HIDDEN_WITH_PRODUCT", 0)  # cuBLAS, always
    assert cupy_layer_kernels.with_product(hidden, rows, gates) is False
