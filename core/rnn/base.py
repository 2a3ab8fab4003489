"""The base of every recurrent cell: ``RNNParams``, ``BaseRNNCell`` and unroll's input handling.

A cell builds symbols: calling it on one time step's input and the previous
states adds that step's nodes to the graph; ``unroll`` calls it once per step.
Node and variable names follow MXNet 1.9 exactly (``<prefix>t<step>_i2h``,
``<prefix>begin_state_<i>``, ``<prefix>i2h_weight``), so a network built here
has the same arguments and JSON as MXNet's, and MXNet checkpoints of it load.
"""

from .. import ndarray as nd
from .. import symbol
from ..errors import RebindError

__all__ = ["RNNParams", "BaseRNNCell", "ModifiedCellError", "normalize_sequence"]


class ModifiedCellError(RebindError, RuntimeError):
    """A cell wrapped by a modifier (ZoneoutCell, ResidualCell) was used directly."""


class RNNParams:
    """The variables of one or more cells, created once by name and then shared.

    Args:
        prefix: put before every name asked for (``get('i2h_weight')`` makes
            ``<prefix>i2h_weight``).
    """

    def __init__(self, prefix=""):
        self._prefix = prefix
        self._params = {}

    def get(self, name, **kwargs):
        """The variable ``<prefix><name>``, made with ``kwargs`` (``init=...``) the first time."""
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = symbol.Variable(name, **kwargs)
        return self._params[name]


def _time_axis(layout, what):
    axis = layout.find("T")
    if axis < 0:
        raise ValueError(f"{what}: layout {layout!r} has no time axis 'T'; use 'NTC' or 'TNC'")
    return axis


def normalize_sequence(length, inputs, layout, merge, in_layout=None):
    """``inputs`` as a list of per-step symbols (``merge`` False) or one merged symbol (True).

    A single symbol is split along its time axis (``split`` with
    ``squeeze_axis``) only when a list is asked for; a list is merged
    (``expand_dims`` then ``Concat``) only when ``merge`` is True; ``merge``
    None keeps whatever was given. Returns ``(inputs, time axis of layout)``.
    """
    if inputs is None:
        raise ValueError(
            "unroll(inputs=None) is not supported (MXNet deprecated it): create the input "
            "variables outside unroll and pass them"
        )
    axis = _time_axis(layout, "unroll")
    in_axis = axis if in_layout is None else _time_axis(in_layout, "unroll")
    if isinstance(inputs, symbol.Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise ValueError(
                    "unroll: a grouped symbol cannot be split into time steps; pass "
                    "list(inputs) instead, or one symbol for unroll to split"
                )
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length, squeeze_axis=1))
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise ValueError(f"unroll: length is {length} but {len(inputs)} inputs were given")
        if merge is True:
            steps = [symbol.expand_dims(step, axis=axis) for step in inputs]
            inputs = symbol.Concat(*steps, dim=axis)
            in_axis = axis
    if isinstance(inputs, symbol.Symbol) and axis != in_axis:
        inputs = symbol.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis


class BaseRNNCell:
    """The base class of recurrent cells (``mx.rnn.BaseRNNCell``).

    Args:
        prefix: put before the names of this cell's nodes, and of its
            variables when ``params`` is None.
        params: an RNNParams to take the variables from (weight sharing
            between cells); a new one with ``prefix`` when None.
    """

    def __init__(self, prefix="", params=None):
        self._own_params = params is None
        self._params = RNNParams(prefix) if params is None else params
        self._prefix = prefix
        self._modified = False
        self.reset()

    def reset(self):
        """Restart step and begin-state numbering (``t0``, ``begin_state_0``) for a new graph."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, "_cells", ()):
            cell.reset()

    def __call__(self, inputs, states):
        """One time step: ``(output, new states)`` from ``inputs`` (batch, features), ``states``."""
        raise NotImplementedError(f"{type(self).__name__} cannot be stepped")

    @property
    def params(self):
        """The RNNParams holding this cell's variables."""
        return self._params

    @property
    def prefix(self):
        """The prefix of this cell's names."""
        return self._prefix

    @property
    def state_info(self):
        """One ``{'shape': ..., '__layout__': ...}`` per state (0 in a shape: the batch size)."""
        raise NotImplementedError(f"{type(self).__name__} does not define state_info")

    @property
    def state_shape(self):
        """The shape of each state."""
        return [info["shape"] for info in self.state_info]

    @property
    def _gate_names(self):
        return ()

    def _check_not_modified(self, method):
        if self._modified:
            raise ModifiedCellError(
                f"{type(self).__name__}.{method}: this cell is wrapped by a modifier cell "
                "(ZoneoutCell, ResidualCell, ...); call the modifier cell instead"
            )

    def begin_state(self, func=symbol.zeros, **kwargs):
        """The initial states: ``func(name='<prefix>begin_state_<i>', shape=..., **kwargs)`` each.

        ``func`` is ``mx.sym.zeros`` by default (states of zeros whose batch
        size is inferred); ``mx.sym.Variable`` makes states to feed.
        """
        self._check_not_modified("begin_state")
        states = []
        for info in self.state_info:
            self._init_counter += 1
            name = f"{self._prefix}begin_state_{self._init_counter}"
            merged = dict(kwargs) if info is None else {**kwargs, **info}
            states.append(func(name=name, **merged))
        return states

    def unpack_weights(self, args):
        """``args`` with each fused i2h/h2h weight and bias cut into per-gate arrays.

        ``<prefix>i2h_weight`` becomes ``<prefix>i2h_i_weight``,
        ``<prefix>i2h_f_weight``, ... (gate names ``_i _f _c _o`` for LSTM,
        ``_r _z _o`` for GRU, none for a plain RNN cell). Returns a new dict of
        copies; ``args`` is not changed.
        """
        args = dict(args)
        hidden = getattr(self, "_num_hidden", None)
        for group in ("i2h", "h2h") if self._gate_names else ():
            weight = args.pop(f"{self._prefix}{group}_weight")
            bias = args.pop(f"{self._prefix}{group}_bias")
            for j, gate in enumerate(self._gate_names):
                rows = slice(j * hidden, (j + 1) * hidden)
                args[f"{self._prefix}{group}{gate}_weight"] = weight[rows].copy()
                args[f"{self._prefix}{group}{gate}_bias"] = bias[rows].copy()
        return args

    def pack_weights(self, args):
        """The inverse of ``unpack_weights``: per-gate arrays concatenated back (a new dict)."""
        args = dict(args)
        for group in ("i2h", "h2h") if self._gate_names else ():
            weights, biases = [], []
            for gate in self._gate_names:
                weights.append(args.pop(f"{self._prefix}{group}{gate}_weight"))
                biases.append(args.pop(f"{self._prefix}{group}{gate}_bias"))
            args[f"{self._prefix}{group}_weight"] = nd.concatenate(weights)
            args[f"{self._prefix}{group}_bias"] = nd.concatenate(biases)
        return args

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """Run the cell over ``length`` time steps; returns ``(outputs, states)``.

        Args:
            length: the number of steps.
            inputs: one symbol of shape (batch, length, ...) for layout 'NTC'
                or (length, batch, ...) for 'TNC', split here into steps; or a
                list of ``length`` per-step symbols (batch, ...).
            begin_state: the initial states; ``begin_state()`` when None.
            layout: 'NTC' or 'TNC', the layout of a merged input and output.
            merge_outputs: True: one symbol (outputs joined along the time
                axis); False: a list of per-step symbols; None: whichever the
                cell makes most cheaply (a list, for the step-by-step cells).
        """
        self.reset()
        inputs, _ = normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        outputs = []
        for step in range(length):
            output, states = self(inputs[step], states)
            outputs.append(output)
        outputs, _ = normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs, activation, **kwargs):
        """``Activation(act_type=activation)`` for a string, else ``activation(inputs, ...)``."""
        if isinstance(activation, str):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)
