"""An unrolled GRU layer as one step (core/executor/fused_gru_layer.py): the fused cells' values.

test_fused_layer.py runs its cases for both kinds of layer; these are the
GRU's own: the rewrite switched off by name, a stack of a GRU and an LSTM
layer, the layouts with accumulated gradients, and a GPU's values. Through
the kernels built for the host: tests/backends/test_layer_on_host.py and
test_gru_layer_on_host.py.
"""

import pytest

import rebind as mx

from .test_fused_layer import (
    BATCH,
    LENGTH,
    _assert_close,
    _bind,
    _compare,
    _values,
    accumulated_runs,
    gpu_runs_agree,
)
from .test_fused_layer import _layers as layers_of
from .test_fused_lstm import _lm

GRU = mx.rnn.GRUCell


def _layers(executor, kind="gru"):
    return layers_of(executor, kind)


def compare_gru(symbol, monkeypatch, run_layer=None, is_train=True, **shapes):
    """``test_fused_layer._compare`` for GRU layers."""
    return _compare(symbol, monkeypatch, run_layer, is_train, kind="gru", **shapes)


def test_the_gru_layer_is_switched_off_by_name_alone(monkeypatch):
    monkeypatch.setenv("REBIND_GRAPH_OPT", "-fused_gru_layer")
    shapes = {"data": (BATCH, LENGTH), "softmax_label": (BATCH, LENGTH)}
    gru = _bind(_lm(LENGTH, cell=GRU), mx.cpu(), monkeypatch, True, **shapes)
    lstm = _bind(_lm(LENGTH), mx.cpu(), monkeypatch, True, **shapes)
    assert _layers(gru) == [] and len(_layers(lstm, "lstm")) == 2


def test_mixed_stacks_make_a_layer_of_each_kind(monkeypatch):
    data = mx.sym.Variable("data")
    embed = mx.sym.Embedding(data, input_dim=11, output_dim=6, name="embed")
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.GRUCell(7, prefix="l0_"))
    stack.add(mx.rnn.LSTMCell(7, prefix="l1_"))
    outputs, _ = stack.unroll(LENGTH, embed, layout="NTC", merge_outputs=True)
    pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, 7)), num_hidden=11)
    label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
    symbol = mx.sym.SoftmaxOutput(pred, label, name="softmax")
    shapes = {"data": (BATCH, LENGTH), "softmax_label": (BATCH, LENGTH)}
    plain = _bind(symbol, mx.cpu(), monkeypatch, False, **shapes)
    expected = _values(plain)
    layered = _bind(symbol, mx.cpu(), monkeypatch, True, **shapes)
    assert len(_layers(layered)) == 1 and len(_layers(layered, "lstm")) == 1
    _assert_close(expected, _values(layered), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layout", ["NTC", "TNC"])
def test_layouts_and_accumulated_gradients(monkeypatch, layout):
    """Time-major or batch-major steps; grad_req='add' twice over ones."""
    symbol = _lm(4, cell=GRU) if layout == "NTC" else _time_major_lm(4)
    runs = accumulated_runs(symbol, monkeypatch, _layers)
    _assert_close(runs[0], runs[1], rtol=1e-5, atol=1e-6)


def _time_major_lm(length):
    data = mx.sym.Variable("data")
    embed = mx.sym.Embedding(mx.sym.transpose(data), input_dim=11, output_dim=6, name="embed")
    stack = mx.rnn.SequentialRNNCell()
    stack.add(GRU(7, prefix="l0_"))
    stack.add(GRU(7, prefix="l1_"))
    outputs, _ = stack.unroll(length, embed, layout="TNC", merge_outputs=False)
    pred = mx.sym.FullyConnected(mx.sym.Concat(*outputs, dim=0), num_hidden=11)
    label = mx.sym.Reshape(mx.sym.transpose(mx.sym.Variable("softmax_label")), shape=(-1,))
    return mx.sym.SoftmaxOutput(pred, label, name="softmax")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("hidden", [7, 70])
@pytest.mark.parametrize("products", ["threads", "warps"])
def test_a_gpu_gru_layer_gives_the_fused_cells_values(monkeypatch, hidden, products, dtype):
    from rebind.backends import cupy_layer_kernels

    monkeypatch.setattr(cupy_layer_kernels, "PRODUCTS_OVER_WARPS", products == "warps")
    gpu_runs_agree(monkeypatch, "gru", hidden, dtype)
