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

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler to build kernels")

FORWARD, BACKWARD = "gru_layer_forward_with_product", "gru_layer_backward_with_product"


def _runner(monkeypatch, host_cupy, launched):
    """``run_layer`` for ``compare_gru``: the layered executor's values through host kernels."""

    def through_host_kernels(executor, is_train):
        with monkeypatch.context() as patch:
            _through_host_kernels(patch, host_cupy, launched)
            return _values(executor, is_train)

    return through_host_kernels


@pytest.mark.parametrize("states_out", [False, True], ids=["outputs", "outputs-and-states"])
def test_the_gpu_path_gives_the_fused_cells_values(host_cupy, monkeypatch, states_out):
    launched = []
    symbol = _lm(LENGTH, states_out=states_out, cell=GRU)
    expected, got = compare_gru(
        symbol, monkeypatch, run_layer=_runner(monkeypatch, host_cupy, launched)
    )
    assert "gru_cell_forward" not in launched  # every cell ran inside the layers
    # one kernel a time step each way (two layers)
    assert launched.count(FORWARD) == 2 * LENGTH
    assert launched.count(BACKWARD) == 2 * LENGTH
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)


def test_begin_states_that_learn_through_the_gpu_path(host_cupy, monkeypatch):
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
    assert launched.count(BACKWARD) == 2 * LENGTH
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)
    assert all(np.abs(got[1][f"begin{k}"]).max() > 0 for k in range(2))


def test_time_major_steps_through_the_gpu_path(host_cupy, monkeypatch):
    launched = []
    expected, got = compare_gru(
        _time_major_lm(4),
        monkeypatch,
        run_layer=_runner(monkeypatch, host_cupy, launched),
        data=(2, 4),
        softmax_label=(2, 4),
    )
    assert launched.count(BACKWARD) == 2 * 4
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)


def test_a_wide_layer_runs_the_fused_cells_steps(host_cupy, monkeypatch):
    monkeypatch.setattr(cupy_layer_kernels, "MAX_HIDDEN_WITH_PRODUCT", 0)
    launched = []
    expected, got = compare_gru(
        _lm(LENGTH, cell=GRU), monkeypatch, run_layer=_runner(monkeypatch, host_cupy, launched)
    )
    assert FORWARD not in launched and launched.count("gru_cell_forward") == 2 * LENGTH
    _assert_close(expected, got, rtol=1e-5, atol=1e-6)


def test_a_float64_layer_through_the_gpu_path(host_cupy, monkeypatch):
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
    assert launched.count(FORWARD) == 2 * LENGTH
    _assert_close(*runs, rtol=1e-12, atol=1e-13)
