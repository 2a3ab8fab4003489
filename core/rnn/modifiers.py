"""Modifier cells: one base cell wrapped, its step changed (``ZoneoutCell``, ``ResidualCell``).

Once wrapped, the base cell is marked modified and refuses to be used on its
own; the modifier forwards begin_state, state_info and the weight
(un)packing to it.
"""

from .. import symbol
from .base import BaseRNNCell, normalize_sequence
from .combinators import BidirectionalCell, SequentialRNNCell
from .fused import FusedRNNCell

__all__ = ["ModifierCell", "ZoneoutCell", "ResidualCell"]


class ModifierCell(BaseRNNCell):
    """The base of cells that wrap ``base_cell`` and modify its step (``mx.rnn.ModifierCell``).

    Unlike the other cells, resetting a modifier leaves the base cell's
    step counters running, as in MXNet: a second unroll names its nodes
    ``t<length>...``.
    """

    def __init__(self, base_cell):
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    @property
    def state_info(self):
        return self.base_cell.state_info

    def begin_state(self, init_sym=symbol.zeros, **kwargs):
        """The base cell's begin states (``init_sym``, or ``func=``, is its ``func``)."""
        self._check_not_modified("begin_state")
        func = kwargs.pop("func", init_sym)  # as SequentialRNNCell passes it
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args):
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args):
        return self.base_cell.pack_weights(args)

    def __call__(self, inputs, states):
        raise NotImplementedError(f"{type(self).__name__} does not define a step")


class ZoneoutCell(ModifierCell):
    """Zoneout: in training, each output and state unit keeps its previous value with probability p.

    The masks are ``Dropout(ones_like(x), p)`` (nonzero where the new value
    is taken), so at inference, where Dropout is the identity, the cell is
    its base cell. The previous output of the first step is zeros.

    Args:
        base_cell: a cell that can be stepped (not fused, not bidirectional).
        zoneout_outputs: the probability for the output.
        zoneout_states: the probability for the states.
    """

    def __init__(self, base_cell, zoneout_outputs=0.0, zoneout_states=0.0):
        if isinstance(base_cell, FusedRNNCell):
            raise ValueError("ZoneoutCell: a FusedRNNCell cannot be stepped; unfuse() it first")
        if isinstance(base_cell, BidirectionalCell) or (
            isinstance(base_cell, SequentialRNNCell)
            and any(isinstance(c, BidirectionalCell) for c in base_cell._cells)
        ):
            raise ValueError(
                "ZoneoutCell: a bidirectional cell cannot be stepped; wrap the cells "
                "underneath in ZoneoutCell instead"
            )
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output = None

    def reset(self):
        super().reset()
        self.prev_output = None

    @staticmethod
    def _mask(p, like):
        return symbol.Dropout(symbol.ones_like(like), p=p)

    def __call__(self, inputs, states):
        next_output, next_states = self.base_cell(inputs, states)
        p_out, p_states = self.zoneout_outputs, self.zoneout_states
        previous = self.prev_output if self.prev_output is not None else symbol.zeros((0, 0))
        output = next_output
        if p_out != 0.0:
            output = symbol.where(self._mask(p_out, next_output), next_output, previous)
        if p_states != 0.0:
            next_states = [
                symbol.where(self._mask(p_states, new), new, old)
                for new, old in zip(next_states, states, strict=True)
            ]
        self.prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """The base cell's output plus its input (Wu et al. 2016), ``<output>_plus_residual``.

    Args:
        base_cell: the wrapped cell; its output size must equal its input size.
    """

    def __call__(self, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = symbol.elemwise_add(output, inputs, name=f"{output.name}_plus_residual")
        return output, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """Unroll the base cell, then add the inputs to its outputs (merged or per step)."""
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(
                length,
                inputs=inputs,
                begin_state=begin_state,
                layout=layout,
                merge_outputs=merge_outputs,
            )
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, symbol.Symbol)
        inputs, _ = normalize_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            return symbol.elemwise_add(
                outputs, inputs, name=f"{outputs.name}_plus_residual"
            ), states
        added = [
            symbol.elemwise_add(out, step, name=f"{out.name}_plus_residual")
            for out, step in zip(outputs, inputs, strict=True)
        ]
        return added, states
