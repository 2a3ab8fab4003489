"""The convolutional cells: with 1x1 kernels each pixel runs the plain cell of the same kind."""

import numpy as np
import pytest

import rebind as mx
from tests.ops.harness import assert_close
from tests.rnn.test_cells import TOLERANCE, _forward, _reference, _weights

BATCH, STEPS, CHANNELS, HIDDEN, HEIGHT, WIDTH = 2, 3, 4, 5, 3, 2
CELLS = {"rnn": mx.rnn.ConvRNNCell, "lstm": mx.rnn.ConvLSTMCell, "gru": mx.rnn.ConvGRUCell}


def _pixels(image):
    """(N, C, H, W) -> (N*H*W, C): one row per pixel."""
    return image.transpose(0, 2, 3, 1).reshape(-1, image.shape[1])


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
def test_one_by_one_kernels_run_the_plain_cell_per_pixel(kind, ctx):
    rng = np.random.default_rng(11)
    cell = CELLS[kind](
        (BATCH, CHANNELS, HEIGHT, WIDTH),
        HIDDEN,
        h2h_kernel=(1, 1),
        i2h_kernel=(1, 1),
        i2h_pad=(0, 0),
        activation="tanh",
        prefix="k_",
    )
    assert cell.state_info[0] == {"shape": (0, HIDDEN, HEIGHT, WIDTH), "__layout__": "NCHW"}
    outputs, states = cell.unroll(STEPS, mx.sym.Variable("data"), merge_outputs=False)
    assert len(states) == (2 if kind == "lstm" else 1)
    weights = _weights(kind, rng, inputs=CHANNELS)
    data = rng.standard_normal((BATCH, STEPS, CHANNELS, HEIGHT, WIDTH))
    arrays = {"data": data}
    for name, value in weights.items():
        arrays[f"k_{name}"] = value.reshape(value.shape + (1, 1)) if "weight" in name else value
    expected = _reference(kind, weights, [_pixels(data[:, t]) for t in range(STEPS)])
    for step, value in enumerate(_forward(mx.sym.Group(outputs), arrays, ctx)):
        assert_close(_pixels(value), expected[step], f"step {step}", TOLERANCE)


def test_state_shape_follows_the_input_convolution():
    cell = mx.rnn.ConvLSTMCell(
        (1, 3, 9, 7), 6, i2h_kernel=(3, 3), i2h_stride=(2, 2), i2h_pad=(0, 0)
    )
    assert cell.state_shape == [(0, 6, 4, 3), (0, 6, 4, 3)]
    with pytest.raises(ValueError, match="odd"):
        mx.rnn.ConvGRUCell((1, 3, 4, 4), 2, h2h_kernel=(2, 3))
    positional = mx.rnn.ConvRNNCell((1, 3, 4, 4), 2, (1, 1))
    assert positional._h2h_kernel == (1, 1)
    with pytest.raises(TypeError, match="given twice"):
        mx.rnn.ConvRNNCell((1, 3, 4, 4), 2, (1, 1), h2h_kernel=(3, 3))


def test_default_activation_is_leaky_relu():
    cell = mx.rnn.ConvRNNCell((1, 2, 4, 4), 3)
    outputs, _ = cell.unroll(1, [mx.sym.Variable("x")])
    assert outputs[0].name == "ConvRNN_t0_out"
    assert outputs[0].list_attr() == {"act_type": "leaky", "slope": "0.2"}
