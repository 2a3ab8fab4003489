"""The LSTM and GRU cell rewrites (core/executor/fused_lstm.py): the plain steps' bits.

Each case binds one symbol twice, with the cell rewrite and without it (every
other rewrite on in both), feeds the same values and compares outputs and
gradients for equality. On the CPU the fused step runs the cells' own kernels
in their order, so nothing may differ; on the GPU it runs the fused CuPy
kernels, whose float operations are grouped as the kernels' (a fused
multiply-add may differ in the last bit), so there the comparison allows 1e-5.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.executor import fused_layer, fused_lstm


def _lm(length, states_out=False, begin_state=None, cell=mx.rnn.LSTMCell, hidden=7):
    data = mx.sym.Variable("data")
    embed = mx.sym.Embedding(data, input_dim=11, output_dim=6, name="embed")
    stack = mx.rnn.SequentialRNNCell()
    stack.add(cell(hidden, prefix="l0_"))
    stack.add(cell(hidden, prefix="l1_"))
    outputs, states = stack.unroll(
        length, embed, begin_state=begin_state, layout="NTC", merge_outputs=True
    )
    pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, hidden)), num_hidden=11)
    label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
    loss = mx.sym.SoftmaxOutput(pred, label, name="softmax")
    if states_out:  # the last cell's state is also an output, with its own gradient
        return mx.sym.Group([loss, mx.sym.MakeLoss(mx.sym.sum(states[-1] * 0.5))])
    return loss


def _run(symbol, ctx, monkeypatch, fuse, is_train=True, **shapes):
    # the cells themselves: on a GPU a chain of them would become one layer step
    # (fused_layer, tested in test_fused_layer.py)
    monkeypatch.setattr(fused_layer, "find_layers", lambda plan: [])
    if not fuse:
        monkeypatch.setattr(fused_lstm, "find_cells", lambda plan: [])
    executor = symbol.simple_bind(ctx, **shapes)
    monkeypatch.undo()
    rng = np.random.default_rng(0)
    for name, array in executor.arg_dict.items():
        if name in ("data", "softmax_label"):
            array[:] = rng.integers(0, 11, array.shape)
        else:
            array[:] = rng.uniform(-0.6, 0.6, array.shape)
    executor.forward(is_train=is_train)
    if is_train:
        executor.backward()
    grads = {n: g.asnumpy() for n, g in executor.grad_dict.items()} if is_train else {}
    return executor, [o.asnumpy() for o in executor.outputs], grads


def _fused(executor, kind="lstm"):
    found = executor._plan.optimizations
    return [name for rewrite, name, _ in found if rewrite == f"fused_{kind}_cell"]


def _assert_same(got, expected, ctx, what):
    if ctx.device_type == "cpu":
        np.testing.assert_array_equal(got, expected, err_msg=what)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=what)


@pytest.mark.parametrize("states_out", [False, True], ids=["lm", "state-as-output"])
def test_fused_cells_give_the_plain_cells_bits(ctx, monkeypatch, states_out):
    symbol = _lm(5, states_out)
    shapes = {"data": (3, 5), "softmax_label": (3, 5)}
    fused, out, grads = _run(symbol, ctx, monkeypatch, True, **shapes)
    plain, plain_out, plain_grads = _run(symbol, ctx, monkeypatch, False, **shapes)
    assert len(_fused(fused)) == 10 and _fused(plain) == []  # 2 layers x 5 steps
    assert len(fused._plan.steps) == len(plain._plan.steps) - 100
    for index, (a, b) in enumerate(zip(out, plain_out, strict=True)):
        _assert_same(a, b, ctx, f"output {index}")
    assert sorted(grads) == sorted(plain_grads)
    for name in grads:
        _assert_same(grads[name], plain_grads[name], ctx, f"gradient of {name}")


def test_inference_gives_the_plain_cells_bits(ctx, monkeypatch):
    symbol = _lm(4)
    shapes = {"data": (2, 4), "softmax_label": (2, 4)}
    _, out, _ = _run(symbol, ctx, monkeypatch, True, is_train=False, **shapes)
    _, plain_out, _ = _run(symbol, ctx, monkeypatch, False, is_train=False, **shapes)
    _assert_same(out[0], plain_out[0], ctx, "inference output")


def test_begin_states_that_learn_get_their_gradients(ctx, monkeypatch):
    """Begin states bound as variables: the gradient of c_prev leaves the first cells."""
    begin = [mx.sym.Variable(f"begin{i}") for i in range(4)]
    symbol = _lm(3, begin_state=begin)
    shapes = {"data": (2, 3), "softmax_label": (2, 3), **{f"begin{i}": (2, 7) for i in range(4)}}
    fused, _, grads = _run(symbol, ctx, monkeypatch, True, **shapes)
    _, _, plain_grads = _run(symbol, ctx, monkeypatch, False, **shapes)
    assert len(_fused(fused)) == 6
    for name in [f"begin{i}" for i in range(4)]:
        assert np.any(grads[name] != 0)
        _assert_same(grads[name], plain_grads[name], ctx, f"gradient of {name}")


def test_a_gate_read_outside_its_cell_is_not_fused(ctx, monkeypatch):
    cell = mx.rnn.LSTMCell(4, prefix="c_")
    data = mx.sym.Variable("data")
    outputs, _ = cell.unroll(2, data, layout="NTC", merge_outputs=False)
    internals = outputs[-1].get_internals()
    forget = internals["c_t1_f_output"]  # the second step's forget gate
    symbol = mx.sym.Group([mx.sym.MakeLoss(mx.sym.sum(outputs[-1])), mx.sym.BlockGrad(forget)])
    fused, out, grads = _run(symbol, ctx, monkeypatch, True, data=(2, 2, 3))
    _, plain_out, plain_grads = _run(symbol, ctx, monkeypatch, False, data=(2, 2, 3))
    assert _fused(fused) == ["_plus0..c_t0_out"]  # the first step only
    for a, b in zip(out, plain_out, strict=True):
        _assert_same(a, b, ctx, "outputs")
    for name in grads:
        _assert_same(grads[name], plain_grads[name], ctx, f"gradient of {name}")


@pytest.mark.parametrize("states_out", [False, True], ids=["lm", "state-as-output"])
def test_fused_gru_cells_give_the_plain_cells_bits(ctx, monkeypatch, states_out):
    symbol = _lm(4, states_out, cell=mx.rnn.GRUCell)
    shapes = {"data": (3, 4), "softmax_label": (3, 4)}
    fused, out, grads = _run(symbol, ctx, monkeypatch, True, **shapes)
    plain, plain_out, plain_grads = _run(symbol, ctx, monkeypatch, False, **shapes)
    assert len(_fused(fused, "gru")) == 8 and _fused(plain, "gru") == []  # 2 layers x 4 steps
    assert len(fused._plan.steps) == len(plain._plan.steps) - 8 * 12
    for index, (a, b) in enumerate(zip(out, plain_out, strict=True)):
        _assert_same(a, b, ctx, f"output {index}")
    for name in grads:
        _assert_same(grads[name], plain_grads[name], ctx, f"gradient of {name}")


def test_gru_begin_state_that_learns_gets_its_gradient(ctx, monkeypatch):
    begin = [mx.sym.Variable("begin0"), mx.sym.Variable("begin1")]
    symbol = _lm(3, begin_state=begin, cell=mx.rnn.GRUCell)
    shapes = {"data": (2, 3), "softmax_label": (2, 3), "begin0": (2, 7), "begin1": (2, 7)}
    fused, _, grads = _run(symbol, ctx, monkeypatch, True, **shapes)
    _, _, plain_grads = _run(symbol, ctx, monkeypatch, False, **shapes)
    assert len(_fused(fused, "gru")) == 6
    for name in ("begin0", "begin1"):
        assert np.any(grads[name] != 0)
        _assert_same(grads[name], plain_grads[name], ctx, f"gradient of {name}")


@pytest.mark.parametrize("cell", [mx.rnn.ConvLSTMCell, mx.rnn.ConvGRUCell], ids=["lstm", "gru"])
def test_convolutional_cells_keep_their_plain_steps(ctx, cell):
    """The fused kernels take rows of (N, gates * H); a (N, gates * H, H, W) cell is not fused."""
    conv = cell((2, 3, 4, 5), 6, prefix="c_", activation="tanh")
    outputs, _ = conv.unroll(2, mx.sym.Variable("data"), merge_outputs=False)
    executor = mx.sym.Group(outputs).simple_bind(ctx, data=(2, 2, 3, 4, 5))
    kind = "lstm" if cell is mx.rnn.ConvLSTMCell else "gru"
    assert _fused(executor, kind) == []
