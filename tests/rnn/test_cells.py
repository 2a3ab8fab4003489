"""The step-by-step cells and the combinators against a NumPy reference written here."""

import numpy as np
import pytest

import rebind as mx
from tests.ops.harness import assert_close

BATCH, STEPS, FEATURES, HIDDEN = 3, 4, 5, 5
TOLERANCE = (1e-5, 1e-6)
GATES = {"rnn": 1, "lstm": 4, "gru": 3}


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _reference_step(kind, weights, x, states):
    """One step of cell ``kind`` in float64: (output, new states)."""
    xi = x @ weights["i2h_weight"].T + weights["i2h_bias"]
    hh = states[0] @ weights["h2h_weight"].T + weights["h2h_bias"]
    if kind == "rnn":
        out = np.tanh(xi + hh)
        return out, [out]
    if kind == "lstm":
        i, f, c, o = np.split(xi + hh, 4, axis=1)
        cell = _sigmoid(f) * states[1] + _sigmoid(i) * np.tanh(c)
        out = _sigmoid(o) * np.tanh(cell)
        return out, [out, cell]
    xr, xz, xn = np.split(xi, 3, axis=1)
    hr, hz, hn = np.split(hh, 3, axis=1)
    reset, update = _sigmoid(xr + hr), _sigmoid(xz + hz)
    out = (1 - update) * np.tanh(xn + reset * hn) + update * states[0]
    return out, [out]


def _reference(kind, weights, steps):
    """Outputs of every step over ``steps`` (a list of (batch, features)), from zero states."""
    zeros = np.zeros((steps[0].shape[0], weights["h2h_weight"].shape[1]))
    states = [zeros] * (2 if kind == "lstm" else 1)
    outputs = []
    for x in steps:
        out, states = _reference_step(kind, weights, x, states)
        outputs.append(out)
    return outputs


def _cell(kind, prefix):
    if kind == "rnn":
        return mx.rnn.RNNCell(HIDDEN, prefix=prefix)
    if kind == "lstm":
        return mx.rnn.LSTMCell(HIDDEN, prefix=prefix)
    return mx.rnn.GRUCell(HIDDEN, prefix=prefix)


def _weights(kind, rng, inputs=FEATURES):
    rows = GATES[kind] * HIDDEN
    return {
        "i2h_weight": rng.uniform(-0.5, 0.5, (rows, inputs)),
        "i2h_bias": rng.uniform(-0.5, 0.5, rows),
        "h2h_weight": rng.uniform(-0.5, 0.5, (rows, HIDDEN)),
        "h2h_bias": rng.uniform(-0.5, 0.5, rows),
    }


def _forward(symbol, arrays, ctx, is_train=False):
    """Every output of ``symbol`` as NumPy, given {name: NumPy array}."""
    args = {n: mx.nd.array(arrays[n], ctx=ctx) for n in symbol.list_arguments()}
    return [o.asnumpy() for o in symbol.bind(ctx, args, grad_req="null").forward(is_train)]


def _with_prefix(prefix, weights):
    return {prefix + name: value for name, value in weights.items()}


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("layout", ["NTC", "TNC"])
@pytest.mark.parametrize("merge", [True, False, None])
def test_unroll_layouts_and_merge(kind, layout, merge, ctx):
    rng = np.random.default_rng(1)
    cell = _cell(kind, "c_")
    outputs, states = cell.unroll(
        STEPS, mx.sym.Variable("data"), layout=layout, merge_outputs=merge
    )
    assert len(states) == len(cell.state_info)
    axis = layout.find("T")
    data = rng.standard_normal((BATCH, STEPS, FEATURES) if axis == 1 else (STEPS, BATCH, FEATURES))
    weights = _weights(kind, rng)
    arrays = {"data": data, **_with_prefix("c_", weights)}
    expected = _reference(kind, weights, [np.take(data, t, axis=axis) for t in range(STEPS)])
    if merge:
        assert isinstance(outputs, mx.sym.Symbol)
        (merged,) = _forward(outputs, arrays, ctx)
        assert_close(merged, np.stack(expected, axis=axis), "merged outputs", TOLERANCE)
    else:
        assert isinstance(outputs, list) and len(outputs) == STEPS
        assert outputs[1].name == "c_t1_out"
        got = _forward(mx.sym.Group(outputs), arrays, ctx)
        for step, (value, want) in enumerate(zip(got, expected, strict=True)):
            assert_close(value, want, f"step {step}", TOLERANCE)


def test_list_inputs_and_length_checks():
    cell = mx.rnn.LSTMCell(3)
    steps = [mx.sym.Variable(f"x{t}") for t in range(3)]
    outputs, _ = cell.unroll(3, steps)
    assert [o.name for o in outputs] == ["lstm_t0_out", "lstm_t1_out", "lstm_t2_out"]
    with pytest.raises(ValueError, match="length is 4 but 3 inputs"):
        cell.unroll(4, steps)
    with pytest.raises(ValueError, match="grouped symbol"):
        cell.unroll(3, mx.sym.Group(steps), merge_outputs=False)
    with pytest.raises(ValueError, match="no time axis"):
        cell.unroll(3, mx.sym.Variable("data"), layout="NC")
    with pytest.raises(ValueError, match="inputs=None"):
        cell.unroll(3, None)


def test_begin_state_names_and_attributes():
    cell = mx.rnn.LSTMCell(7, prefix="enc_")
    assert cell.state_info == [{"shape": (0, 7), "__layout__": "NC"}] * 2
    assert cell.state_shape == [(0, 7), (0, 7)]
    zeros = cell.begin_state()
    assert [s.name for s in zeros] == ["enc_begin_state_0", "enc_begin_state_1"]
    assert zeros[0].list_attr() == {"__layout__": "NC", "dtype": "float32", "shape": "(0, 7)"}
    fed = cell.begin_state(func=mx.sym.Variable)
    assert [s.name for s in fed] == ["enc_begin_state_2", "enc_begin_state_3"]
    assert fed[1].list_attr() == {"__layout__": "NC", "__shape__": "(0, 7)"}
    cell.reset()
    assert cell.begin_state()[0].name == "enc_begin_state_0"


def test_unroll_restarts_names_each_time():
    cell = mx.rnn.GRUCell(3)
    first, _ = cell.unroll(2, mx.sym.Variable("a"))
    second, _ = cell.unroll(2, mx.sym.Variable("b"))
    assert [o.name for o in first] == [o.name for o in second] == ["gru_t0_out", "gru_t1_out"]


def test_lstm_forget_bias_is_an_init_attribute():
    cell = mx.rnn.LSTMCell(4, forget_bias=3.0)
    outputs, _ = cell.unroll(1, [mx.sym.Variable("x")])
    attrs = outputs[0].attr_dict()
    assert attrs["lstm_i2h_bias"] == {"__init__": '["lstmbias", {"forget_bias": 3.0}]'}
    assert "lstm_h2h_bias" not in attrs


def test_shared_params_share_variables():
    params = mx.rnn.RNNParams("shared_")
    first = mx.rnn.RNNCell(3, prefix="a_", params=params)
    second = mx.rnn.RNNCell(3, prefix="b_", params=params)
    out_a, _ = first.unroll(1, [mx.sym.Variable("x")])
    out_b, _ = second.unroll(1, out_a)
    # the begin states are nodes (_zeros), not arguments; each weight appears once
    assert out_b[0].list_arguments() == [
        "x",
        "shared_i2h_weight",
        "shared_i2h_bias",
        "shared_h2h_weight",
        "shared_h2h_bias",
    ]
    assert out_b[0].name == "b_t0_out"


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
def test_unpack_pack_round_trip(kind):
    rng = np.random.default_rng(2)
    cell = _cell(kind, "p_")
    weights = {k: mx.nd.array(v) for k, v in _with_prefix("p_", _weights(kind, rng)).items()}
    weights["unrelated"] = mx.nd.ones((2,))
    unpacked = cell.unpack_weights(weights)
    gates = {"rnn": [""], "lstm": ["_i", "_f", "_c", "_o"], "gru": ["_r", "_z", "_o"]}[kind]
    expected = {
        f"p_{g}{gate}_{w}" for g in ("i2h", "h2h") for gate in gates for w in ("weight", "bias")
    }
    assert set(unpacked) == expected | {"unrelated"}
    last = gates[-1]
    np.testing.assert_array_equal(
        unpacked[f"p_h2h{last}_weight"].asnumpy(), weights["p_h2h_weight"].asnumpy()[-HIDDEN:]
    )
    assert unpacked[f"p_i2h{last}_bias"].shape == (HIDDEN,)
    packed = cell.pack_weights(unpacked)
    assert set(packed) == set(weights)
    for name, value in weights.items():
        np.testing.assert_array_equal(packed[name].asnumpy(), value.asnumpy())
    assert "p_i2h_weight" in weights  # the argument is not changed


def test_normalize_sequence_swaps_to_the_asked_layout():
    from rebind.rnn.base import normalize_sequence

    merged, axis = normalize_sequence(3, mx.sym.Variable("x"), "NTC", True, in_layout="TNC")
    assert axis == 1 and merged.infer_shape(x=(3, 2, 5))[1] == [(2, 3, 5)]
    steps, _ = normalize_sequence(3, mx.sym.Variable("x"), "TNC", False)
    assert [s.infer_shape(x=(3, 2, 5))[1][0] for s in steps] == [(2, 5)] * 3
