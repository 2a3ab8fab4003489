"""Built-in initializers for recurrent layers: LSTMBias and FusedRNN."""

import math

from rebind.errors import ShapeError
from rebind.hookspecs import hookimpl
from rebind.initializer import InitDesc, Initializer, create
from rebind.ndarray import NDArray
from rebind.ops.rnn import param_layout

__all__ = ["LSTMBias", "FusedRNN", "fused_pieces"]

# the per-gate name parts MXNet's FusedRNNCell gives the unpacked arrays, in packing order
GATE_NAMES = {
    "rnn_relu": ("",),
    "rnn_tanh": ("",),
    "lstm": ("_i", "_f", "_c", "_o"),
    "gru": ("_r", "_z", "_o"),
}


class LSTMBias(Initializer):
    """Zeros, except the forget gate (the second quarter of the bias) set to ``forget_bias``.

    MXNet's LSTMCell gives its ``i2h_bias`` this initializer; the gate order
    is input, forget, cell, output.
    """

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, _, arr):
        arr[:] = 0.0
        hidden = int(arr.shape[0] / 4)
        arr[hidden : 2 * hidden] = self.forget_bias


def _gate_pieces(prefix, kind, what, place, gates, hidden):
    offset, shape = place
    block = hidden * math.prod(shape[1:])
    return [
        (f"{prefix}_{kind}{gate}_{what}", offset + g * block, (hidden, *shape[1:]))
        for g, gate in enumerate(gates)
    ]


def fused_pieces(mode, num_hidden, num_layers, bidirectional, size, name="parameters"):
    """The arrays packed in a fused RNN ``parameters`` vector of ``size`` elements.

    Returns (name, offset, shape) triples in MXNet's order: the weights of
    every (layer, direction), i2h gate by gate then h2h gate by gate, then the
    biases in the same order; names are FusedRNNCell's without prefix
    (``l0_i2h_f_weight``, ``r1_h2h_z_bias``, ...).
    """
    directions = 2 if bidirectional else 1
    gates = GATE_NAMES[mode]
    # size = D*G*H * (in + H + 2) + (L - 1) * D*G*H * (D*H + H + 2)
    per_row = directions * len(gates) * num_hidden
    input_size = (
        size // per_row
        - (num_layers - 1) * (num_hidden + directions * num_hidden + 2)
        - num_hidden
        - 2
    )
    total = None
    if input_size > 0:
        slots, total = param_layout(mode, input_size, num_hidden, num_layers, directions)
    if total != size:
        raise ShapeError(
            f"FusedRNN: {name} has {size} elements, which no input size gives for mode={mode!r}, "
            f"num_hidden={num_hidden}, num_layers={num_layers}, bidirectional={bidirectional}"
        )
    weights, biases = [], []
    for index, slot in enumerate(slots):
        layer, direction = divmod(index, directions)
        prefix = f"{'lr'[direction]}{layer}"
        for kind, field in (("i2h", "wx"), ("h2h", "wh")):
            weights += _gate_pieces(prefix, kind, "weight", getattr(slot, field), gates, num_hidden)
        for kind, field in (("i2h", "bx"), ("h2h", "bh")):
            biases += _gate_pieces(prefix, kind, "bias", getattr(slot, field), gates, num_hidden)
    return weights + biases


class FusedRNN(Initializer):
    """Initializes the flat ``parameters`` vector of a fused RNN piece by piece.

    The vector is cut into the per-gate matrices and vectors MXNet's
    FusedRNNCell unpacks (``l0_i2h_i_weight``, ..., ``l0_h2h_o_bias``); each is
    initialized by ``init`` (or, when ``init`` is None, by the model's global
    initializer) as a parameter of that name: weights by its ``_init_weight``
    on the (num_hidden, in) matrix of one gate, biases to zeros. For LSTM
    every forget-gate bias, of i2h and of h2h alike, is set to
    ``forget_bias``, as MXNet does.

    Args:
        init: an Initializer, its JSON text or name, or None.
        num_hidden, num_layers, mode, bidirectional: the RNN's configuration.
        forget_bias: value of the LSTM forget-gate biases.
    """

    def __init__(self, init, num_hidden, num_layers, mode, bidirectional=False, forget_bias=1.0):
        if mode not in GATE_NAMES:
            raise ValueError(f"FusedRNN: mode must be one of {', '.join(GATE_NAMES)}; got {mode!r}")
        if isinstance(init, str):
            init = create(init)
        super().__init__(
            init=init.dumps() if init is not None else None,
            num_hidden=num_hidden,
            num_layers=num_layers,
            mode=mode,
            bidirectional=bidirectional,
            forget_bias=forget_bias,
        )
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _inner(self, desc):
        inner = self._init if self._init is not None else getattr(desc, "global_init", None)
        if inner is None or isinstance(inner, FusedRNN):
            raise ValueError(
                f"FusedRNN(init=None) initializes the pieces of {desc!r} with the global "
                "initializer, but none was given (call it with an InitDesc from a model's "
                "initializer, or pass init=...)"
            )
        return inner

    def _init_weight(self, desc, arr):
        inner = self._inner(desc)
        ctx = arr.context
        with ctx.backend.device(ctx.device_id):
            flat = arr.data.reshape(-1).copy()
        pieces = fused_pieces(
            self._mode, self._num_hidden, self._num_layers, self._bidirectional, flat.size, desc
        )
        for name, offset, shape in pieces:
            piece = NDArray(flat[offset : offset + math.prod(shape)].reshape(shape), ctx)
            if self._mode == "lstm" and name.endswith("_f_bias"):
                piece[:] = self._forget_bias
            else:
                inner(InitDesc(name, global_init=getattr(desc, "global_init", None)), piece)
        arr.data[...] = flat.reshape(arr.shape)


@hookimpl
def rebind_add_initializers(registry):
    registry.add("lstmbias", LSTMBias)
    registry.add("fusedrnn", FusedRNN)
