"""Deterministic initializers (Zero, One, Constant, Bilinear) and the recurrent ones
(LSTMBias, FusedRNN: the packing of the flat parameter vector)."""

import json
import math

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ShapeError
from rebind.initializer import InitDesc, Initializer

from .distribution import assert_uniform


def _filled(init, shape, ctx, name="w_weight", start=5.0):
    arr = mx.nd.full(shape, start, ctx=ctx)
    init(InitDesc(name), arr)
    return arr.asnumpy()


def test_zero_one(ctx):
    np.testing.assert_array_equal(_filled(mx.init.Zero(), (2, 3), ctx), np.zeros((2, 3)))
    np.testing.assert_array_equal(_filled(mx.init.One(), (2, 3), ctx), np.ones((2, 3)))
    # a bias is still a bias: zeros, whatever the initializer
    np.testing.assert_array_equal(_filled(mx.init.One(), (4,), ctx, "fc_bias"), np.zeros(4))


def test_constant(ctx):
    np.testing.assert_array_equal(_filled(mx.init.Constant(0.25), (3,), ctx), [0.25] * 3)
    np.testing.assert_array_equal(
        _filled(mx.init.Constant([1.0, 2.0, 3.0]), (2, 3), ctx), [[1, 2, 3], [1, 2, 3]]
    )
    value = mx.nd.array([[4.0], [5.0]], ctx=mx.cpu())
    np.testing.assert_array_equal(_filled(mx.init.Constant(value), (2, 2), ctx), [[4, 4], [5, 5]])
    with pytest.raises(ShapeError, match="shape"):
        _filled(mx.init.Constant([1.0, 2.0]), (3,), ctx)


def _bilinear_by_loops(shape):
    """MXNet's documented formula, element by element."""
    width = shape[3]
    f = math.ceil(width / 2)
    c = (2 * f - 1 - f % 2) / (2 * f)
    out = np.zeros(shape, np.float32)
    for index in np.ndindex(*shape):
        y, x = index[2], index[3]
        out[index] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
    return out


@pytest.mark.parametrize("shape", [(2, 3, 4, 4), (1, 1, 3, 3), (3, 2, 4, 6), (2, 1, 5, 2)])
def test_bilinear_matches_the_formula(ctx, shape):
    np.testing.assert_array_equal(
        _filled(mx.init.Bilinear(), shape, ctx), _bilinear_by_loops(shape)
    )


def test_bilinear_needs_4d(ctx):
    with pytest.raises(ShapeError, match="up_weight.*at least 4 dimensions.*\\(4, 4\\)"):
        _filled(mx.init.Bilinear(), (4, 4), ctx, "up_weight")


@pytest.mark.parametrize("forget_bias", [1.0, 2.5])
def test_lstm_bias_sets_the_forget_quarter(ctx, forget_bias):
    hidden = 5
    expected = np.zeros(4 * hidden, np.float32)
    expected[hidden : 2 * hidden] = forget_bias  # gates i, f, c, o
    # through the attribute MXNet's LSTMCell gives its i2h_bias
    arr = mx.nd.full((4 * hidden,), 9.0, ctx=ctx)
    desc = InitDesc("l0_i2h_bias", {"__init__": mx.init.LSTMBias(forget_bias).dumps()})
    mx.init.Xavier()(desc, arr)
    np.testing.assert_array_equal(arr.asnumpy(), expected)
    # as in MXNet, called directly on a name ending in 'bias' it is the plain bias rule
    values = _filled(mx.init.LSTMBias(forget_bias), (4 * hidden,), ctx, "l0_i2h_bias")
    np.testing.assert_array_equal(values, np.zeros(4 * hidden))


# -- FusedRNN -------------------------------------------------------------------------

GATES = {"lstm": ["_i", "_f", "_c", "_o"], "gru": ["_r", "_z", "_o"], "rnn_tanh": [""]}


class Tagger(Initializer):
    """Fills each piece with a number identifying its name; records names and shapes."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def code(self, name):
        return float(sum(ord(ch) * (i + 1) for i, ch in enumerate(name)) % 9973)

    def _init_weight(self, name, arr):
        self.seen.append((str(name), arr.shape))
        arr[:] = self.code(name)

    _init_bias = _init_weight


def _expected_vector(tagger, mode, hidden, layers, directions, input_size, forget_bias=None):
    """The packing the golden RNN cases record: weights of every (layer, direction),
    W_i2h (G*H, in) then W_h2h (G*H, H) with gate blocks of H rows; then biases."""
    weights, biases, names = [], [], []
    for layer in range(layers):
        in_size = input_size if layer == 0 else directions * hidden
        for direction in "lr"[:directions]:
            for kind, cols in (("i2h", in_size), ("h2h", hidden)):
                blocks = []
                for gate in GATES[mode]:
                    name = f"{direction}{layer}_{kind}{gate}_weight"
                    names.append((name, (hidden, cols)))
                    blocks.append(np.full((hidden, cols), tagger.code(name)))
                weights.append(np.concatenate(blocks).ravel())
    for layer in range(layers):
        for direction in "lr"[:directions]:
            for kind in ("i2h", "h2h"):
                for gate in GATES[mode]:
                    name = f"{direction}{layer}_{kind}{gate}_bias"
                    if mode == "lstm" and gate == "_f":
                        biases.append(np.full(hidden, forget_bias))
                        continue
                    names.append((name, (hidden,)))
                    biases.append(np.full(hidden, tagger.code(name)))
    return np.concatenate(weights + biases).astype(np.float32), names


@pytest.mark.parametrize(
    "mode, hidden, layers, bidirectional, input_size",
    [
        ("lstm", 3, 1, False, 5),
        ("lstm", 4, 2, True, 3),
        ("gru", 3, 2, False, 6),
        ("gru", 2, 1, True, 4),
        ("rnn_tanh", 5, 3, True, 2),
    ],
)
def test_fused_rnn_packing(ctx, mode, hidden, layers, bidirectional, input_size):
    directions = 2 if bidirectional else 1
    gates = len(GATES[mode])
    size = directions * gates * hidden * (input_size + hidden + 2) + (layers - 1) * (
        directions * gates * hidden * (directions * hidden + hidden + 2)
    )
    tagger = Tagger()
    fused = mx.init.FusedRNN(tagger, hidden, layers, mode, bidirectional, forget_bias=1.5)
    arr = mx.nd.full((size,), -1.0, ctx=ctx)
    fused(InitDesc("rnn_weight"), arr)
    expected, names = _expected_vector(
        tagger, mode, hidden, layers, directions, input_size, forget_bias=1.5
    )
    assert tagger.seen == names
    np.testing.assert_array_equal(arr.asnumpy(), expected)


def test_fused_rnn_without_init_uses_the_global_initializer(ctx, golden):
    manifest = json.loads((golden / "manifest.json").read_text())
    case = next(
        c
        for c in manifest["categories"]["symbols"]["cases"]
        if c["id"] == "gru_fused_bidirectional"
    )
    attrs = case["attr_dict"]["gru_parameters"]  # FusedRNN(init=None) as MXNet wrote it
    size = case["infer_shape"]["arg_shapes"]["gru_parameters"][0]
    tagger = Tagger()
    arr = mx.nd.zeros((size,), ctx=ctx)
    tagger(InitDesc("gru_parameters", attrs), arr)
    expected, names = _expected_vector(tagger, "gru", 12, 2, 2, input_size=8)
    assert tagger.seen == names
    np.testing.assert_array_equal(arr.asnumpy(), expected)


def test_fused_rnn_with_xavier_scales_each_gate_block(ctx):
    hidden, input_size, forget_bias = 16, 24, 2.0
    size = 4 * hidden * (input_size + hidden + 2)
    mx.random.seed(3)
    arr = mx.nd.zeros((size,), ctx=ctx)
    fused = mx.init.FusedRNN(mx.init.Xavier(), hidden, 1, "lstm", forget_bias=forget_bias)
    fused(InitDesc("lstm_parameters", {"__init__": fused.dumps()}), arr)
    values = arr.asnumpy()
    wx = values[: 4 * hidden * input_size].reshape(4, hidden, input_size)
    wh = values[4 * hidden * input_size : 4 * hidden * (input_size + hidden)]
    wh = wh.reshape(4, hidden, hidden)
    for gate in range(4):  # each gate's block is a (hidden, in) weight of its own
        assert_uniform(wx[gate], math.sqrt(3 / ((input_size + hidden) / 2)), f"i2h gate {gate}")
        assert_uniform(wh[gate], math.sqrt(3 / hidden), f"h2h gate {gate}")
    biases = values[4 * hidden * (input_size + hidden) :].reshape(2, 4, hidden)
    expected = np.zeros((2, 4, hidden), np.float32)
    expected[:, 1] = forget_bias  # i2h and h2h forget biases alike, as MXNet
    np.testing.assert_array_equal(biases, expected)


def test_fused_rnn_errors(ctx):
    fused = mx.init.FusedRNN(mx.init.Zero(), 4, 1, "lstm")
    with pytest.raises(ShapeError, match="100 elements.*mode='lstm', num_hidden=4"):
        fused(InitDesc("rnn_weight"), mx.nd.zeros((100,), ctx=ctx))
    alone = mx.init.FusedRNN(None, 4, 1, "lstm")
    with pytest.raises(ValueError, match="global initializer, but none was given"):
        alone(InitDesc("rnn_weight"), mx.nd.zeros((4 * 4 * 10,), ctx=ctx))
