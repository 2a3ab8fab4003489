"""Convolutional recurrent cells: ``ConvRNNCell``, ``ConvLSTMCell``, ``ConvGRUCell``.

They are the step-by-step cells with Convolution in place of FullyConnected
(Shi et al. 2015): the input-to-state convolution takes the step's image,
the state-to-state one keeps the state's spatial size (odd kernel, "same"
padding). Names are MXNet 1.9's, as for the other cells. rebind's
Convolution is channel-first, so ``conv_layout`` is 'NCW', 'NCHW' or 'NCDHW'.
"""

from .. import symbol
from .base import BaseRNNCell

__all__ = ["BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell"]


def leaky_relu(inputs, **kwargs):
    """MXNet's default activation of the convolutional cells: LeakyReLU with slope 0.2."""
    return symbol.LeakyReLU(inputs, act_type="leaky", slope=0.2, **kwargs)


class BaseConvRNNCell(BaseRNNCell):
    """The base of the convolutional cells: the two convolutions and the state shape.

    Args:
        input_shape: the shape of one step's input, batch included
            (e.g. (N, C, H, W)); it fixes the state's spatial size.
        num_hidden: the channels of the state.
        h2h_kernel, h2h_dilate: of the state-to-state convolution (odd kernel).
        i2h_kernel, i2h_stride, i2h_pad, i2h_dilate: of the input-to-state one.
        i2h_weight_initializer, h2h_weight_initializer: the weights' ``init``
            (an Initializer or its name).
        i2h_bias_initializer, h2h_bias_initializer: the biases' ``init``.
        activation: an act_type string or a function ``f(symbol, name=...)``.
        prefix, params: as for every cell.
        conv_layout: the Convolution layout.
    """

    def __init__(
        self,
        input_shape,
        num_hidden,
        h2h_kernel,
        h2h_dilate,
        i2h_kernel,
        i2h_stride,
        i2h_pad,
        i2h_dilate,
        i2h_weight_initializer,
        h2h_weight_initializer,
        i2h_bias_initializer,
        h2h_bias_initializer,
        activation,
        prefix="",
        params=None,
        conv_layout="NCHW",
    ):
        super().__init__(prefix=prefix, params=params)
        if any(k % 2 == 0 for k in h2h_kernel):
            raise ValueError(f"{type(self).__name__}: h2h_kernel must be odd, got {h2h_kernel}")
        self._h2h_kernel, self._h2h_dilate = h2h_kernel, h2h_dilate
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(h2h_dilate, h2h_kernel, strict=True))
        self._i2h_kernel, self._i2h_stride = i2h_kernel, i2h_stride
        self._i2h_pad, self._i2h_dilate = i2h_pad, i2h_dilate
        self._num_hidden = num_hidden
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation
        self._state_shape = self._infer_state_shape()
        self._iW = self.params.get("i2h_weight", init=i2h_weight_initializer)
        self._hW = self.params.get("h2h_weight", init=h2h_weight_initializer)
        self._iB = self.params.get("i2h_bias", init=i2h_bias_initializer)
        self._hB = self.params.get("h2h_bias", init=h2h_bias_initializer)

    def _infer_state_shape(self):
        """The i2h convolution's output shape, batch 0 (built as an unnamed node, as MXNet does)."""
        probe = symbol.Convolution(
            data=symbol.Variable("data"),
            num_filter=self._num_hidden,
            kernel=self._i2h_kernel,
            stride=self._i2h_stride,
            pad=self._i2h_pad,
            dilate=self._i2h_dilate,
            layout=self._conv_layout,
        )
        shape = probe._infer_shape_strict(data=self._input_shape)[1][0]
        return (0, *shape[1:])

    @property
    def _num_gates(self):
        return len(self._gate_names)

    @property
    def state_info(self):
        info = {"shape": self._state_shape, "__layout__": self._conv_layout}
        return [info, dict(info)]

    def _conv_forward(self, inputs, states, name):
        """(i2h, h2h): the input and state convolutions of one step."""
        filters = self._num_hidden * self._num_gates
        i2h = symbol.Convolution(
            name=f"{name}i2h",
            data=inputs,
            num_filter=filters,
            kernel=self._i2h_kernel,
            stride=self._i2h_stride,
            pad=self._i2h_pad,
            dilate=self._i2h_dilate,
            weight=self._iW,
            bias=self._iB,
            layout=self._conv_layout,
        )
        h2h = symbol.Convolution(
            name=f"{name}h2h",
            data=states[0],
            num_filter=filters,
            kernel=self._h2h_kernel,
            dilate=self._h2h_dilate,
            pad=self._h2h_pad,
            stride=(1, 1),
            weight=self._hW,
            bias=self._hB,
            layout=self._conv_layout,
        )
        return i2h, h2h

    def _next_step_name(self):
        self._counter += 1
        return f"{self._prefix}t{self._counter}_"


def _conv_arguments(cell, prefix, args, kwargs):
    """The keyword arguments for BaseConvRNNCell: MXNet's defaults, then ``args``, ``kwargs``."""
    given = {
        "h2h_kernel": (3, 3),
        "h2h_dilate": (1, 1),
        "i2h_kernel": (3, 3),
        "i2h_stride": (1, 1),
        "i2h_pad": (1, 1),
        "i2h_dilate": (1, 1),
        "i2h_weight_initializer": None,
        "h2h_weight_initializer": None,
        "i2h_bias_initializer": "zeros",
        "h2h_bias_initializer": "zeros",
        "activation": leaky_relu,
        "prefix": prefix,
        "params": None,
        "conv_layout": "NCHW",
    }
    names = list(given)
    if len(args) > len(names):
        raise TypeError(f"{cell}: {len(args) + 2} positional arguments, at most {len(names) + 2}")
    for name, value in zip(names, args, strict=False):
        if name in kwargs:
            raise TypeError(f"{cell}: argument {name!r} given twice")
        given[name] = value
    unknown = sorted(set(kwargs) - set(names))
    if unknown:
        raise TypeError(f"{cell}: unexpected argument {unknown[0]!r}")
    return {**given, **kwargs}


class ConvRNNCell(BaseConvRNNCell):
    """Convolutional plain RNN cell (prefix ``'ConvRNN_'``); arguments as BaseConvRNNCell."""

    def __init__(self, input_shape, num_hidden, *args, **kwargs):
        options = _conv_arguments("ConvRNNCell", "ConvRNN_", args, kwargs)
        super().__init__(input_shape, num_hidden, **options)

    @property
    def _gate_names(self):
        return ("",)

    @property
    def state_info(self):
        return [{"shape": self._state_shape, "__layout__": self._conv_layout}]

    def __call__(self, inputs, states):
        name = self._next_step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        output = self._get_activation(i2h + h2h, self._activation, name=f"{name}out")
        return output, [output]


class ConvLSTMCell(BaseConvRNNCell):
    """Convolutional LSTM (prefix ``'ConvLSTM_'``); arguments as BaseConvRNNCell.

    ``activation`` replaces tanh for the candidate and the cell output.
    """

    def __init__(self, input_shape, num_hidden, *args, **kwargs):
        options = _conv_arguments("ConvLSTMCell", "ConvLSTM_", args, kwargs)
        super().__init__(input_shape, num_hidden, **options)

    @property
    def _gate_names(self):
        return ["_i", "_f", "_c", "_o"]

    def __call__(self, inputs, states):
        name = self._next_step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        channel = self._conv_layout.find("C")
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, axis=channel, name=f"{name}slice")
        in_gate = symbol.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
        forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
        in_transform = self._get_activation(gates[2], self._activation, name=f"{name}c")
        out_gate = symbol.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
        next_c = symbol.elemwise_add(
            forget_gate * states[1], in_gate * in_transform, name=f"{name}state"
        )
        next_h = symbol.elemwise_mul(
            out_gate, self._get_activation(next_c, self._activation), name=f"{name}out"
        )
        return next_h, [next_h, next_c]


class ConvGRUCell(BaseConvRNNCell):
    """Convolutional GRU (prefix ``'ConvGRU_'``); arguments as BaseConvRNNCell.

    ``activation`` replaces tanh for the candidate state.
    """

    def __init__(self, input_shape, num_hidden, *args, **kwargs):
        options = _conv_arguments("ConvGRUCell", "ConvGRU_", args, kwargs)
        super().__init__(input_shape, num_hidden, **options)

    @property
    def _gate_names(self):
        return ["_r", "_z", "_o"]

    @property
    def state_info(self):
        return [{"shape": self._state_shape, "__layout__": self._conv_layout}]

    def __call__(self, inputs, states):
        name = self._next_step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}_i2h_slice")
        h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}_h2h_slice")
        reset_gate = symbol.Activation(i2h_r + h2h_r, act_type="sigmoid", name=f"{name}_r_act")
        update_gate = symbol.Activation(i2h_z + h2h_z, act_type="sigmoid", name=f"{name}_z_act")
        candidate = self._get_activation(
            i2h + reset_gate * h2h, self._activation, name=f"{name}_h_act"
        )
        next_h = symbol.elemwise_add(
            (1.0 - update_gate) * candidate, update_gate * states[0], name=f"{name}out"
        )
        return next_h, [next_h]
