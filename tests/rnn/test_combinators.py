"""SequentialRNNCell, BidirectionalCell, DropoutCell and the modifier cells, by their values."""

import numpy as np
import pytest

import rebind as mx
from tests.ops.harness import assert_close
from tests.rnn.test_cells import (
    BATCH,
    HIDDEN,
    STEPS,
    TOLERANCE,
    _forward,
    _reference,
    _weights,
    _with_prefix,
)


def _steps(data):
    """(batch, steps, features) -> a list of (batch, features)."""
    return [data[:, t] for t in range(data.shape[1])]


def test_sequential_unroll_equals_stepping_and_the_reference(ctx):
    rng = np.random.default_rng(3)
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(HIDDEN, prefix="a_"))
    stack.add(mx.rnn.GRUCell(HIDDEN, prefix="b_"))
    assert stack.state_info == [{"shape": (0, HIDDEN), "__layout__": "NC"}] * 3
    lstm, gru = _weights("lstm", rng), _weights("gru", rng, inputs=HIDDEN)
    data = rng.standard_normal((BATCH, STEPS, HIDDEN))
    arrays = {"data": data, **_with_prefix("a_", lstm), **_with_prefix("b_", gru)}
    expected = _reference("gru", gru, _reference("lstm", lstm, _steps(data)))

    unrolled, states = stack.unroll(STEPS, mx.sym.Variable("data"), merge_outputs=True)
    assert len(states) == 3
    (merged,) = _forward(unrolled, arrays, ctx)
    assert_close(merged, np.stack(expected, axis=1), "unrolled", TOLERANCE)

    stack.reset()
    inputs = mx.sym.split(mx.sym.Variable("data"), axis=1, num_outputs=STEPS, squeeze_axis=1)
    states, stepped = stack.begin_state(), []
    for step in range(STEPS):
        output, states = stack(inputs[step], states)
        stepped.append(output)
    for step, value in enumerate(_forward(mx.sym.Group(stepped), arrays, ctx)):
        assert_close(value, expected[step], f"stepped {step}", TOLERANCE)


def test_sequential_params_go_to_the_stack_or_the_cells():
    stack = mx.rnn.SequentialRNNCell(params=mx.rnn.RNNParams("s_"))
    stack.add(mx.rnn.RNNCell(2))
    with pytest.raises(ValueError, match="params were given both"):
        stack.add(mx.rnn.RNNCell(2, params=mx.rnn.RNNParams("x_")))
    assert "rnn_i2h_weight" in stack.params._params


def test_dropout_cell_is_the_identity_at_inference(ctx):
    data = np.random.default_rng(4).uniform(1, 2, (BATCH, STEPS, 6))
    cell = mx.rnn.DropoutCell(0.5)
    with mx.name.NameManager():
        merged, states = cell.unroll(STEPS, mx.sym.Variable("data"), merge_outputs=True)
    assert states == [] and merged.name == "dropout0"
    (inferred,) = _forward(merged, {"data": data}, ctx, is_train=False)
    np.testing.assert_array_equal(inferred, data.astype(np.float32))
    (trained,) = _forward(merged, {"data": data}, ctx, is_train=True)
    kept = trained != 0
    assert kept.any() and not kept.all()
    assert_close(trained[kept], (data * 2)[kept].astype(np.float32), "kept", TOLERANCE)
    steps, _ = cell.unroll(STEPS, mx.sym.Variable("data"), merge_outputs=False)
    assert len(steps) == STEPS
    unchanged, _ = mx.rnn.DropoutCell(0.0).unroll(STEPS, mx.sym.Variable("data"))
    assert unchanged.name == "data"


def test_zoneout_keeps_either_the_new_or_the_previous_output(ctx):
    rng = np.random.default_rng(5)
    weights = _weights("rnn", rng)
    data = rng.standard_normal((BATCH, STEPS, 5))
    arrays = {"data": data, **_with_prefix("z_", weights)}
    cell = mx.rnn.ZoneoutCell(mx.rnn.RNNCell(HIDDEN, prefix="z_"), zoneout_outputs=0.5)
    outputs, _ = cell.unroll(STEPS, mx.sym.Variable("data"))
    new = _reference("rnn", weights, _steps(data))
    inferred = _forward(mx.sym.Group(outputs), arrays, ctx, is_train=False)
    for step in range(STEPS):
        assert_close(inferred[step], new[step], f"inference step {step}", TOLERANCE)
    trained = _forward(mx.sym.Group(outputs), arrays, ctx, is_train=True)
    previous, took_new, kept_old = np.zeros_like(new[0]), 0, 0
    for step in range(STEPS):
        is_new = np.isclose(trained[step], new[step], rtol=1e-5, atol=1e-6)
        is_old = np.isclose(trained[step], previous, rtol=1e-5, atol=1e-6)
        assert (is_new | is_old).all(), f"step {step}: an output is neither new nor previous"
        took_new, kept_old = took_new + is_new.sum(), kept_old + (is_old & ~is_new).sum()
        previous = trained[step]
    assert took_new and kept_old


def test_zoneout_refuses_cells_that_cannot_step():
    with pytest.raises(ValueError, match="unfuse"):
        mx.rnn.ZoneoutCell(mx.rnn.FusedRNNCell(3))
    both = mx.rnn.BidirectionalCell(mx.rnn.GRUCell(2, prefix="l_"), mx.rnn.GRUCell(2, prefix="r_"))
    with pytest.raises(ValueError, match="bidirectional"):
        mx.rnn.ZoneoutCell(both)
    stack = mx.rnn.SequentialRNNCell()
    stack.add(both)
    with pytest.raises(ValueError, match="bidirectional"):
        mx.rnn.ZoneoutCell(stack)


@pytest.mark.parametrize("merge", [True, False])
def test_residual_adds_the_input(merge, ctx):
    rng = np.random.default_rng(6)
    weights = _weights("gru", rng, inputs=HIDDEN)
    data = rng.standard_normal((BATCH, STEPS, HIDDEN))
    arrays = {"data": data, **_with_prefix("g_", weights)}
    cell = mx.rnn.ResidualCell(mx.rnn.GRUCell(HIDDEN, prefix="g_"))
    with mx.name.NameManager():
        outputs, states = cell.unroll(STEPS, mx.sym.Variable("data"), merge_outputs=merge)
    assert len(states) == 1
    steps = _steps(data)
    expected = [out + x for out, x in zip(_reference("gru", weights, steps), steps, strict=True)]
    if merge:
        assert outputs.name == "concat0_plus_residual"
        (value,) = _forward(outputs, arrays, ctx)
        assert_close(value, np.stack(expected, axis=1), "merged", TOLERANCE)
    else:
        assert [o.name for o in outputs][:2] == ["g_t0_out_plus_residual", "g_t1_out_plus_residual"]
        for step, value in enumerate(_forward(mx.sym.Group(outputs), arrays, ctx)):
            assert_close(value, expected[step], f"step {step}", TOLERANCE)


def test_modified_cell_refuses_direct_use():
    base = mx.rnn.LSTMCell(3)
    wrapped = mx.rnn.ResidualCell(base)
    with pytest.raises(mx.rnn.ModifiedCellError, match="modifier cell"):
        base.begin_state()
    assert len(wrapped.begin_state()) == 2  # through the modifier it works
    assert wrapped.params is base.params and wrapped.state_info == base.state_info
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.ZoneoutCell(mx.rnn.GRUCell(2), zoneout_states=0.5))
    (fed,) = stack.begin_state(func=mx.sym.Variable)  # func= reaches the wrapped cell
    assert fed.name == "gru_begin_state_0" and fed.list_arguments() == ["gru_begin_state_0"]


@pytest.mark.parametrize("merge", [True, False, None])
def test_bidirectional_concatenates_forward_then_backward(merge, ctx):
    rng = np.random.default_rng(8)
    left, right = _weights("lstm", rng), _weights("rnn", rng)
    data = rng.standard_normal((BATCH, STEPS, 5))
    arrays = {"data": data, **_with_prefix("l_", left), **_with_prefix("r_", right)}
    cell = mx.rnn.BidirectionalCell(
        mx.rnn.LSTMCell(HIDDEN, prefix="l_"),
        mx.rnn.RNNCell(HIDDEN, prefix="r_"),
        output_prefix="b_",
    )
    outputs, states = cell.unroll(STEPS, mx.sym.Variable("data"), merge_outputs=merge)
    assert [len(s) for s in states] == [2, 1]  # nested: [left states, right states]
    forward = _reference("lstm", left, _steps(data))
    backward = _reference("rnn", right, _steps(data)[::-1])[::-1]
    expected = [np.concatenate([f, b], axis=1) for f, b in zip(forward, backward, strict=True)]
    if merge:
        assert outputs.name == "b_out"
        (value,) = _forward(outputs, arrays, ctx)
        assert_close(value, np.stack(expected, axis=1), "merged", TOLERANCE)
    else:
        assert [o.name for o in outputs] == [f"b_t{t}" for t in range(STEPS)]
        for step, value in enumerate(_forward(mx.sym.Group(outputs), arrays, ctx)):
            assert_close(value, expected[step], f"step {step}", TOLERANCE)
    with pytest.raises(NotImplementedError, match="unroll"):
        cell(mx.sym.Variable("x"), cell.begin_state())
