"""The step-by-step cells: ``RNNCell``, ``LSTMCell``, ``GRUCell``.

Each step adds MXNet 1.9's nodes for that step, named ``<prefix>t<step>_...``,
on the variables ``<prefix>i2h_weight``, ``<prefix>i2h_bias``,
``<prefix>h2h_weight`` and ``<prefix>h2h_bias``. The gates of LSTM and GRU
are stacked in one FullyConnected and sliced apart, in MXNet's (and cuDNN's)
order: LSTM input, forget, cell, output; GRU reset, update, candidate.
"""

from .. import initializer as init
from .. import symbol
from .base import BaseRNNCell

__all__ = ["RNNCell", "LSTMCell", "GRUCell"]


def _hidden_state(num_hidden):
    return {"shape": (0, num_hidden), "__layout__": "NC"}


class _ProjectingCell(BaseRNNCell):
    """A cell whose step starts with the input and hidden projections ``i2h`` and ``h2h``."""

    def __init__(self, num_hidden, prefix, params, i2h_bias_init=None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get("i2h_weight")
        bias_kwargs = {} if i2h_bias_init is None else {"init": i2h_bias_init}
        self._iB = self.params.get("i2h_bias", **bias_kwargs)
        self._hW = self.params.get("h2h_weight")
        self._hB = self.params.get("h2h_bias")

    def _next_step_name(self):
        self._counter += 1
        return f"{self._prefix}t{self._counter}_"

    def _projections(self, inputs, hidden, gates, name):
        """(i2h, h2h): FullyConnected of the input and of the previous hidden state."""
        size = self._num_hidden * gates
        i2h = symbol.FullyConnected(
            data=inputs, weight=self._iW, bias=self._iB, num_hidden=size, name=f"{name}i2h"
        )
        h2h = symbol.FullyConnected(
            data=hidden, weight=self._hW, bias=self._hB, num_hidden=size, name=f"{name}h2h"
        )
        return i2h, h2h


class RNNCell(_ProjectingCell):
    """The plain recurrent cell: ``h' = activation(x W_i2h^T + b_i2h + h W_h2h^T + b_h2h)``.

    Args:
        num_hidden: the size of the hidden state.
        activation: 'tanh', 'relu' (any Activation act_type) or a function
            ``f(symbol, name=...)``.
        prefix: of the names (default ``'rnn_'``).
        params: an RNNParams to share variables with another cell.
    """

    def __init__(self, num_hidden, activation="tanh", prefix="rnn_", params=None):
        super().__init__(num_hidden, prefix, params)
        self._activation = activation

    @property
    def state_info(self):
        return [_hidden_state(self._num_hidden)]

    @property
    def _gate_names(self):
        return ("",)

    def __call__(self, inputs, states):
        name = self._next_step_name()
        i2h, h2h = self._projections(inputs, states[0], 1, name)
        output = self._get_activation(i2h + h2h, self._activation, name=f"{name}out")
        return output, [output]


class LSTMCell(_ProjectingCell):
    """Long short-term memory; states ``[h, c]``, output ``h``.

    Args:
        num_hidden: the size of ``h`` and ``c``.
        prefix: of the names (default ``'lstm_'``).
        params: an RNNParams to share variables with another cell.
        forget_bias: the initial forget-gate bias: ``i2h_bias`` carries the
            initializer ``LSTMBias(forget_bias)`` as its ``__init__`` attribute.
    """

    def __init__(self, num_hidden, prefix="lstm_", params=None, forget_bias=1.0):
        super().__init__(num_hidden, prefix, params, init.LSTMBias(forget_bias=forget_bias))

    @property
    def state_info(self):
        return [_hidden_state(self._num_hidden), _hidden_state(self._num_hidden)]

    @property
    def _gate_names(self):
        return ["_i", "_f", "_c", "_o"]

    def __call__(self, inputs, states):
        name = self._next_step_name()
        i2h, h2h = self._projections(inputs, states[0], 4, name)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, name=f"{name}slice")
        in_gate = symbol.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
        forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
        in_transform = symbol.Activation(gates[2], act_type="tanh", name=f"{name}c")
        out_gate = symbol.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
        next_c = symbol.elemwise_add(
            forget_gate * states[1], in_gate * in_transform, name=f"{name}state"
        )
        next_h = symbol.elemwise_mul(
            out_gate, symbol.Activation(next_c, act_type="tanh"), name=f"{name}out"
        )
        return next_h, [next_h, next_c]


class GRUCell(_ProjectingCell):
    """Gated recurrent unit in cuDNN's form (the reset gate scales ``h W_h2h^T + b_h2h``).

    Args:
        num_hidden: the size of the hidden state.
        prefix: of the names (default ``'gru_'``).
        params: an RNNParams to share variables with another cell.
    """

    def __init__(self, num_hidden, prefix="gru_", params=None):
        super().__init__(num_hidden, prefix, params)

    @property
    def state_info(self):
        return [_hidden_state(self._num_hidden)]

    @property
    def _gate_names(self):
        return ["_r", "_z", "_o"]

    def __call__(self, inputs, states):
        # MXNet names this cell's nodes '<prefix>t<step>__i2h' etc.: two underscores
        name = self._next_step_name()
        previous = states[0]
        i2h, h2h = self._projections(inputs, previous, 3, f"{name}_")
        i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}_i2h_slice")
        h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}_h2h_slice")
        reset_gate = symbol.Activation(i2h_r + h2h_r, act_type="sigmoid", name=f"{name}_r_act")
        update_gate = symbol.Activation(i2h_z + h2h_z, act_type="sigmoid", name=f"{name}_z_act")
        candidate = symbol.Activation(i2h + reset_gate * h2h, act_type="tanh", name=f"{name}_h_act")
        next_h = symbol.elemwise_add(
            (1.0 - update_gate) * candidate, update_gate * previous, name=f"{name}out"
        )
        return next_h, [next_h]
