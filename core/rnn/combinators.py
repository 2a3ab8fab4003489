"""Cells made of cells: ``SequentialRNNCell``, ``BidirectionalCell``, ``DropoutCell``.

The modifier cells (ZoneoutCell, ResidualCell), which wrap one cell and
change what its step does, are in ``modifiers.py``.
"""

import numbers

from .. import symbol
from .base import BaseRNNCell, normalize_sequence

__all__ = ["SequentialRNNCell", "BidirectionalCell", "DropoutCell"]


def _states_of(cells):
    return sum((cell.state_info for cell in cells), [])


def _begin_states(cells, **kwargs):
    return sum((cell.begin_state(**kwargs) for cell in cells), [])


def _unpack(cells, args):
    for cell in cells:
        args = cell.unpack_weights(args)
    return args


def _pack(cells, args):
    for cell in cells:
        args = cell.pack_weights(args)
    return args


def _share_params(owner, cells, given):
    """Join the variables of ``owner`` and its ``cells`` (MXNet's container bookkeeping)."""
    for cell in cells:
        if given:
            if not cell._own_params:
                raise ValueError(
                    f"{type(owner).__name__}: params were given both to it and to a cell "
                    f"({type(cell).__name__} {cell.prefix!r}); give them to one of the two"
                )
            cell.params._params.update(owner.params._params)
        owner.params._params.update(cell.params._params)


class SequentialRNNCell(BaseRNNCell):
    """Cells stacked: each cell's output is the next cell's input (``mx.rnn.SequentialRNNCell``).

    The states are the cells' states, concatenated in order.

    Args:
        params: an RNNParams for the stack (then the cells must not have
            been given their own).
    """

    def __init__(self, params=None):
        super().__init__(prefix="", params=params)
        self._override_cell_params = params is not None
        self._cells = []

    def add(self, cell):
        """Append ``cell`` on top of the stack."""
        self._cells.append(cell)
        _share_params(self, [cell], self._override_cell_params)

    @property
    def state_info(self):
        return _states_of(self._cells)

    def begin_state(self, **kwargs):
        """The begin states of every cell, in order (``kwargs`` as ``BaseRNNCell.begin_state``)."""
        self._check_not_modified("begin_state")
        return _begin_states(self._cells, **kwargs)

    def unpack_weights(self, args):
        return _unpack(self._cells, args)

    def pack_weights(self, args):
        return _pack(self._cells, args)

    def __call__(self, inputs, states):
        self._counter += 1
        next_states, position = [], 0
        for cell in self._cells:
            if isinstance(cell, BidirectionalCell):
                raise NotImplementedError(
                    "SequentialRNNCell: a BidirectionalCell cannot be stepped; use unroll"
                )
            count = len(cell.state_info)
            inputs, cell_states = cell(inputs, states[position : position + count])
            position += count
            next_states.extend(cell_states)
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """Unroll each cell in turn over the whole sequence; only the last merges its outputs."""
        self.reset()
        begin_state = self.begin_state() if begin_state is None else begin_state
        position, next_states = 0, []
        last = len(self._cells) - 1
        for index, cell in enumerate(self._cells):
            count = len(cell.state_info)
            inputs, states = cell.unroll(
                length,
                inputs=inputs,
                begin_state=begin_state[position : position + count],
                layout=layout,
                merge_outputs=merge_outputs if index == last else None,
            )
            position += count
            next_states.extend(states)
        return inputs, next_states


class DropoutCell(BaseRNNCell):
    """Dropout on the input, with no state (``mx.rnn.DropoutCell``).

    Args:
        dropout: the fraction of elements dropped in training (0: identity).
        prefix: of the names (default ``'dropout_'``).
        params: unused but kept for MXNet's signature.
    """

    def __init__(self, dropout, prefix="dropout_", params=None):
        super().__init__(prefix, params)
        if not isinstance(dropout, numbers.Number):
            raise TypeError(f"DropoutCell: dropout must be a number, got {dropout!r}")
        self.dropout = dropout

    @property
    def state_info(self):
        return []

    def __call__(self, inputs, states):
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """One Dropout over a merged sequence, or one per step over a list."""
        self.reset()
        inputs, _ = normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, symbol.Symbol):
            return self(inputs, [])
        return super().unroll(
            length, inputs, begin_state=begin_state, layout=layout, merge_outputs=merge_outputs
        )


class BidirectionalCell(BaseRNNCell):
    """One cell run forwards and one backwards in time, outputs concatenated per step.

    The output at step ``t`` is ``Concat(l_output[t], r_output[t])`` where the
    right cell read the sequence reversed; the states are
    ``[l_states, r_states]`` (a nested list, as MXNet returns them). It cannot
    be stepped.

    Args:
        l_cell: the forward cell.
        r_cell: the backward cell.
        params: an RNNParams for both (then the cells must not have their own).
        output_prefix: of the Concat nodes (``<output_prefix>t<i>`` per
            step, ``<output_prefix>out`` when merged). Default ``'bi_'``.
    """

    def __init__(self, l_cell, r_cell, params=None, output_prefix="bi_"):
        super().__init__("", params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        _share_params(self, [l_cell, r_cell], self._override_cell_params)
        self._cells = [l_cell, r_cell]

    def unpack_weights(self, args):
        return _unpack(self._cells, args)

    def pack_weights(self, args):
        return _pack(self._cells, args)

    def __call__(self, inputs, states):
        raise NotImplementedError("BidirectionalCell cannot be stepped: use unroll")

    @property
    def state_info(self):
        return _states_of(self._cells)

    def begin_state(self, **kwargs):
        """The begin states of the left cell, then of the right cell."""
        self._check_not_modified("begin_state")
        return _begin_states(self._cells, **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """Unroll both cells and concatenate their outputs (see the class doc)."""
        self.reset()
        inputs, axis = normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        l_cell, r_cell = self._cells
        split = len(l_cell.state_info)
        l_outputs, l_states = l_cell.unroll(
            length,
            inputs=inputs,
            begin_state=states[:split],
            layout=layout,
            merge_outputs=merge_outputs,
        )
        r_outputs, r_states = r_cell.unroll(
            length,
            inputs=list(reversed(inputs)),
            begin_state=states[split:],
            layout=layout,
            merge_outputs=merge_outputs,
        )
        return self._join(l_outputs, r_outputs, axis, length, merge_outputs), [l_states, r_states]

    def _join(self, l_outputs, r_outputs, axis, length, merge_outputs):
        """The concatenated outputs: one merged symbol, or one Concat per step."""
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, symbol.Symbol) and isinstance(
                r_outputs, symbol.Symbol
            )
            if not merge_outputs:
                l_outputs = self._as_steps(l_outputs, axis, length)
                r_outputs = self._as_steps(r_outputs, axis, length)
        if merge_outputs:
            reversed_back = symbol.reverse(r_outputs, axis=axis)
            return symbol.Concat(l_outputs, reversed_back, dim=2, name=f"{self._output_prefix}out")
        pairs = zip(l_outputs, reversed(r_outputs), strict=True)
        return [
            symbol.Concat(l_out, r_out, dim=1, name=f"{self._output_prefix}t{step}")
            for step, (l_out, r_out) in enumerate(pairs)
        ]

    @staticmethod
    def _as_steps(outputs, axis, length):
        if isinstance(outputs, symbol.Symbol):
            return list(symbol.SliceChannel(outputs, axis=axis, num_outputs=length, squeeze_axis=1))
        return list(outputs)
