"""Converters of the activations (Activation, LeakyReLU), Dropout and Embedding.

Inference forms only: Dropout is the identity (unless ``mode='always'``),
rrelu uses the mean of its slope bounds. The Custom operator runs Python code
and is refused with a reason.
"""

import math

import numpy as np

from . import converter, refuse
from .nn import narrow, wide, work_dtype
from .tensor_helpers import cast, fail, ints, scalar

__all__ = []

_ACTIVATIONS = {
    "relu": "Relu",
    "sigmoid": "Sigmoid",
    "tanh": "Tanh",
    "softrelu": "Softplus",
    "softsign": "Softsign",
}
# MXNet's SELU constants (ONNX's defaults are the same numbers rounded to float32)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_LAMBDA = 1.0507009873554804934193349852946

refuse(
    "Custom",
    "a Custom operator runs Python code registered with mx.operator.register, which ONNX "
    "cannot hold; replace it with built-in operators before exporting",
)


@converter("Activation")
def convert_activation(node, g):
    g.add_node(_ACTIVATIONS[node.params.act_type], [node.inputs[0]], [node.outputs[0]])


@converter("LeakyReLU")
def convert_leaky_relu(node, g):
    p, data, out = node.params, node.inputs[0], node.outputs[0]
    if p.act_type == "leaky":
        g.add_node("LeakyRelu", [data], [out], alpha=p.slope)
    elif p.act_type == "prelu":
        g.add_node("PRelu", [data, _channel_slope(node, g)], [out])
    elif p.act_type == "rrelu":
        _rrelu(node, g)
    elif p.act_type == "elu":
        _in_compute_dtype(node, g, "Elu", alpha=p.slope)
    elif p.act_type == "selu":
        _in_compute_dtype(node, g, "Selu", alpha=_SELU_ALPHA, gamma=_SELU_LAMBDA)
    else:
        _gelu(node, g)


def _channel_slope(node, g):
    """PReLU's gamma shaped (C, 1, ...) so it broadcasts along axis 1 (ONNX aligns right)."""
    gamma, ndim = node.inputs[1], len(node.in_shapes[0])
    if node.in_shapes[1] == (1,) or ndim <= 2:
        return gamma
    shape = ints(g, [-1] + [1] * (ndim - 2), node.name + "_slope_shape")
    return g.add_node("Reshape", [gamma, shape], [g.fresh(node.name + "_slope")])


def _rrelu(node, g):
    """Inference: a fixed slope, the mean of the bounds; the mask output holds it everywhere."""
    p, data = node.params, node.inputs[0]
    slope = (p.lower_bound + p.upper_bound) / 2
    g.add_node("LeakyRelu", [data], [node.outputs[0]], alpha=slope)
    if len(node.outputs) > 1:
        value = scalar(g, slope, node.in_dtypes[0], node.name + "_slope")
        shape = g.add_node("Shape", [data], [g.fresh(node.name + "_shape")])
        g.add_node("Expand", [value, shape], [node.outputs[1]])


def _in_compute_dtype(node, g, op_type, **attributes):
    dtype = node.in_dtypes[0]
    result = g.add_node(
        op_type, [wide(g, node.inputs[0], dtype)], [g.fresh(node.name + "_act")], **attributes
    )
    narrow(g, result, dtype, node.outputs[0])


def _gelu(node, g):
    """0.5 x (1 + erf(x / sqrt 2)), as rebind computes it (ONNX's Gelu needs opset 20)."""
    dtype = node.in_dtypes[0]
    x = wide(g, node.inputs[0], dtype)
    work = work_dtype(dtype)
    scaled = g.add_node(
        "Div", [x, scalar(g, math.sqrt(2), work, "sqrt2")], [g.fresh(node.name + "_scaled")]
    )
    erf = g.add_node("Erf", [scaled], [g.fresh(node.name + "_erf")])
    one = g.add_node("Add", [erf, scalar(g, 1, work, "one")], [g.fresh(node.name + "_cdf2")])
    half = g.add_node("Mul", [x, scalar(g, 0.5, work, "half")], [g.fresh(node.name + "_half")])
    result = g.add_node("Mul", [half, one], [g.fresh(node.name + "_gelu")])
    narrow(g, result, dtype, node.outputs[0])


@converter("Dropout")
def convert_dropout(node, g):
    """Identity at inference; ``mode='always'`` keeps dropping (ONNX Dropout in training mode)."""
    p = node.params
    if p.mode != "always" or p.p == 0:
        g.add_node("Identity", [node.inputs[0]], [node.outputs[0]])
        return
    if p.axes:
        raise fail(node, g, f"Dropout mode='always' with shared axes={p.axes}")
    ratio = scalar(g, p.p, node.in_dtypes[0], node.name + "_ratio")
    training = g.const(True, np.bool_, node.name + "_training")
    g.add_node("Dropout", [node.inputs[0], ratio, training], [node.outputs[0]])


@converter("Embedding")
def convert_embedding(node, g):
    """Gather rows; indices truncate toward zero and clip into [0, input_dim), as in rebind."""
    p = node.params
    positions = cast(g, node.inputs[0], "int64", node.in_dtypes[0], node.name + "_index")
    low = scalar(g, 0, np.int64, node.name + "_low")
    high = scalar(g, p.input_dim - 1, np.int64, node.name + "_high")
    clipped = g.add_node("Clip", [positions, low, high], [g.fresh(node.name + "_clipped")])
    g.add_node("Gather", [node.inputs[1], clipped], [node.outputs[0]], axis=0)
