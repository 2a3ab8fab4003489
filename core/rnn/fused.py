"""``FusedRNNCell``: a whole stacked (bidirectional) RNN as one ``RNN`` operator node.

All weights live in one flat variable ``<prefix>parameters`` packed the way
the RNN operator (and cuDNN) reads it; ``unpack_weights`` cuts it into
MXNet's per-gate names (``lstm_l0_i2h_i_weight``, ``lstm_r1_h2h_z_bias``, ...)
and ``unfuse()`` builds the equivalent stack of step-by-step cells, whose
``pack_weights`` takes exactly those per-gate arrays.
"""

import math
import warnings

from .. import initializer as init
from .. import ndarray as nd
from .. import symbol
from ..errors import ShapeError
from ..ops.rnn import GATES, MODES, param_layout
from .base import BaseRNNCell, normalize_sequence
from .cells import GRUCell, LSTMCell, RNNCell
from .combinators import BidirectionalCell, DropoutCell, SequentialRNNCell

__all__ = ["FusedRNNCell"]

_GATE_NAMES = {
    "rnn_relu": [""],
    "rnn_tanh": [""],
    "lstm": ["_i", "_f", "_c", "_o"],
    "gru": ["_r", "_z", "_o"],
}


class FusedRNNCell(BaseRNNCell):
    """A stacked RNN, LSTM or GRU run by the fused ``RNN`` operator (``mx.rnn.FusedRNNCell``).

    MXNet runs it only with cuDNN on a GPU; rebind runs the RNN operator on
    every backend.

    Args:
        num_hidden: the hidden size of every layer.
        num_layers: the number of stacked layers.
        mode: 'rnn_relu', 'rnn_tanh', 'lstm' or 'gru'.
        bidirectional: run each layer both ways and concatenate (the output
            has 2 * num_hidden features).
        dropout: dropout between layers, in training.
        get_next_state: also return the final states (else states are []).
        forget_bias: the initial LSTM forget-gate biases (FusedRNN initializer).
        prefix: of the names; ``'<mode>_'`` when None.
        params: an RNNParams to share the ``parameters`` variable.
    """

    def __init__(
        self,
        num_hidden,
        num_layers=1,
        mode="lstm",
        bidirectional=False,
        dropout=0.0,
        get_next_state=False,
        forget_bias=1.0,
        prefix=None,
        params=None,
    ):
        if mode not in MODES:
            raise ValueError(f"FusedRNNCell: mode must be one of {', '.join(MODES)}; got {mode!r}")
        super().__init__(prefix=f"{mode}_" if prefix is None else prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._forget_bias = forget_bias
        self._directions = ["l", "r"] if bidirectional else ["l"]
        initializer = init.FusedRNN(None, num_hidden, num_layers, mode, bidirectional, forget_bias)
        self._parameter = self.params.get("parameters", init=initializer)

    @property
    def state_info(self):
        shape = (len(self._directions) * self._num_layers, 0, self._num_hidden)
        count = 2 if self._mode == "lstm" else 1
        return [{"shape": shape, "__layout__": "LNC"} for _ in range(count)]

    @property
    def _gate_names(self):
        return _GATE_NAMES[self._mode]

    # -- weights -------------------------------------------------------------------
    def _input_size(self, size):
        """The input feature count that makes a ``parameters`` vector of ``size`` elements."""
        per_row = len(self._directions) * GATES[self._mode] * self._num_hidden
        hidden, directions = self._num_hidden, len(self._directions)
        in_size = size // per_row - (self._num_layers - 1) * (hidden + directions * hidden + 2)
        in_size -= hidden + 2
        layout_size = None
        if in_size > 0:
            layout_size = self._layout(in_size)[1]
        if layout_size != size:
            raise ShapeError(
                f"FusedRNNCell {self._prefix!r}: {self._parameter.name} has {size} elements, "
                f"which no input size gives for mode={self._mode!r}, num_hidden={hidden}, "
                f"num_layers={self._num_layers}, bidirectional={self._bidirectional}"
            )
        return in_size

    def _layout(self, input_size):
        return param_layout(
            self._mode, input_size, self._num_hidden, self._num_layers, len(self._directions)
        )

    def _pieces(self, input_size):
        """(name, offset, shape) of every per-gate array in the packed vector, in packing order."""
        slots, _ = self._layout(input_size)
        hidden, weights, biases = self._num_hidden, [], []
        for index, slot in enumerate(slots):
            layer, direction = divmod(index, len(self._directions))
            stem = f"{self._prefix}{self._directions[direction]}{layer}"
            for group, what, place, out in (
                ("i2h", "weight", slot.wx, weights),
                ("h2h", "weight", slot.wh, weights),
                ("i2h", "bias", slot.bx, biases),
                ("h2h", "bias", slot.bh, biases),
            ):
                offset, shape = place
                block = hidden * math.prod(shape[1:])
                for g, gate in enumerate(self._gate_names):
                    piece_shape = (hidden, *shape[1:])
                    out.append((f"{stem}_{group}{gate}_{what}", offset + g * block, piece_shape))
        return weights + biases

    def unpack_weights(self, args):
        """``args`` with ``<prefix>parameters`` replaced by its per-gate arrays (copies)."""
        args = dict(args)
        flat = args.pop(self._parameter.name)
        for name, offset, shape in self._pieces(self._input_size(flat.size)):
            args[name] = flat[offset : offset + math.prod(shape)].reshape(shape).copy()
        return args

    def pack_weights(self, args):
        """``args`` with the per-gate arrays packed into ``<prefix>parameters``."""
        args = dict(args)
        first = args[f"{self._prefix}l0_i2h{self._gate_names[0]}_weight"]
        pieces = self._pieces(first.shape[1])
        flat = [args.pop(name).reshape((-1,)) for name, _, _ in pieces]
        args[self._parameter.name] = nd.concatenate(flat)
        return args

    # -- graph ---------------------------------------------------------------------
    def __call__(self, inputs, states):
        raise NotImplementedError("FusedRNNCell cannot be stepped: use unroll, or unfuse() first")

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """The RNN operator over the whole sequence (see ``BaseRNNCell.unroll``).

        The operator works in TNC; for 'NTC' the input and output are swapped
        around it (with a warning, as MXNet: TNC avoids the two copies).
        """
        self.reset()
        inputs, axis = normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            warnings.warn(
                "NTC layout detected. Consider using TNC for FusedRNNCell for faster speed",
                stacklevel=2,
            )
            inputs = symbol.swapaxes(inputs, dim1=0, dim2=1)
        elif axis != 0:
            raise ValueError(f"FusedRNNCell.unroll: unsupported layout {layout!r}")
        states = self.begin_state() if begin_state is None else begin_state
        state_inputs = {"state": states[0]}
        if self._mode == "lstm":
            state_inputs["state_cell"] = states[1]
        rnn = symbol.RNN(
            data=inputs,
            parameters=self._parameter,
            state_size=self._num_hidden,
            num_layers=self._num_layers,
            bidirectional=self._bidirectional,
            p=self._dropout,
            state_outputs=self._get_next_state,
            mode=self._mode,
            name=f"{self._prefix}rnn",
            **state_inputs,
        )
        outputs, states = rnn, []
        if self._get_next_state:
            rnn[1]._set_attr(__layout__="LNC")  # the attribute lands on the one RNN node
            outputs, states = rnn[0], [rnn[i] for i in range(1, len(rnn))]
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self):
        """The same network as a SequentialRNNCell of per-layer cells (which can step).

        Layer ``i`` is ``<prefix>l<i>_`` (with ``<prefix>r<i>_`` in a
        BidirectionalCell whose output prefix is ``<prefix>bi_l<i>_``), and
        a DropoutCell ``<prefix>_dropout<i>_`` follows every layer but the
        last when dropout > 0. Their ``pack_weights`` reads the names this
        cell's ``unpack_weights`` writes.
        """
        stack = SequentialRNNCell()
        for layer in range(self._num_layers):
            if self._bidirectional:
                stack.add(
                    BidirectionalCell(
                        self._layer_cell(f"{self._prefix}l{layer}_"),
                        self._layer_cell(f"{self._prefix}r{layer}_"),
                        output_prefix=f"{self._prefix}bi_l{layer}_",
                    )
                )
            else:
                stack.add(self._layer_cell(f"{self._prefix}l{layer}_"))
            if self._dropout > 0 and layer != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix=f"{self._prefix}_dropout{layer}_"))
        return stack

    def _layer_cell(self, prefix):
        if self._mode == "lstm":
            return LSTMCell(self._num_hidden, prefix=prefix, forget_bias=self._forget_bias)
        if self._mode == "gru":
            return GRUCell(self._num_hidden, prefix=prefix)
        activation = "relu" if self._mode == "rnn_relu" else "tanh"
        return RNNCell(self._num_hidden, activation=activation, prefix=prefix)
