"""Converters of the normalizations (BatchNorm, InstanceNorm, LayerNorm, L2Normalization,
LRN), the softmax family (softmax, log_softmax, softmin, SoftmaxOutput,
SoftmaxActivation) and nearest UpSampling.

The normalizations are written as ONNX arithmetic in rebind's order of
operations, (x - mean) / std * gamma + beta along any axis, rather than with
ONNX's fused operators, whose axis conventions differ (BatchNormalization
works on axis 1 only, LayerNormalization over every axis from ``axis`` on).
float16 data is computed in float32, as rebind does.
"""

import numpy as np

from . import converter
from .nn import narrow, wide, work_dtype
from .tensor_helpers import axes_input, cast, ints, scalar

__all__ = []


def _along(g, node, vector, axis, ndim, hint):
    """A (C,) vector shaped to broadcast along ``axis`` of ``ndim``-D data."""
    trailing = ndim - 1 - axis
    if trailing == 0:
        return vector
    shape = ints(g, [-1] + [1] * trailing, node.name + "_bshape")
    return g.add_node("Reshape", [vector, shape], [g.fresh(node.name + hint)])


def _op(g, node, op_type, inputs, hint, **attributes):
    return g.add_node(op_type, list(inputs), [g.fresh(node.name + hint)], **attributes)


# -- BatchNorm -------------------------------------------------------------------------
@converter("BatchNorm")
def convert_batch_norm(node, g):
    """Inference: the moving statistics (use_global_stats or not); fix_gamma: gamma = 1."""
    p, dtype = node.params, node.in_dtypes[0]
    data, gamma, beta, mean, var = node.inputs
    ndim, work = len(node.in_shapes[0]), work_dtype(dtype)
    axis = p.axis % ndim
    stat_dtype = node.in_dtypes[4]
    shifted = _op(g, node, "Add", [var, scalar(g, p.eps, stat_dtype, "eps")], "_var_eps")
    std = _op(g, node, "Sqrt", [shifted], "_std")
    invstd = _op(g, node, "Reciprocal", [std], "_invstd")
    x = wide(g, data, dtype)
    centered_mean = _along(g, node, cast(g, mean, work, node.in_dtypes[3]), axis, ndim, "_m")
    centered = _op(g, node, "Sub", [x, centered_mean], "_centered")
    factor = _along(g, node, cast(g, invstd, work, stat_dtype), axis, ndim, "_f")
    result = _op(g, node, "Mul", [centered, factor], "_xhat")
    if not p.fix_gamma:
        scale = _along(g, node, cast(g, gamma, work, node.in_dtypes[1]), axis, ndim, "_g")
        result = _op(g, node, "Mul", [result, scale], "_scaled")
    shift = _along(g, node, cast(g, beta, work, node.in_dtypes[2]), axis, ndim, "_b")
    result = _op(g, node, "Add", [result, shift], "_out")
    narrow(g, result, dtype, node.outputs[0])
    if p.output_mean_var:  # MXNet's "var" output holds 1 / sqrt(var + eps)
        g.add_node("Identity", [mean], [node.outputs[1]])
        g.add_node("Identity", [invstd], [node.outputs[2]])


# -- InstanceNorm and LayerNorm ---------------------------------------------------------
def _scaled_norm(node, g, axes, axis):
    """(x - mean) / sqrt(var + eps) * gamma + beta, statistics over ``axes``; (mean, std)."""
    p, dtype = node.params, node.in_dtypes[0]
    data, gamma, beta = node.inputs
    ndim, work = len(node.in_shapes[0]), work_dtype(dtype)
    x = wide(g, data, dtype)
    mean = axes_input(g, node, "ReduceMean", x, axes, g.fresh(node.name + "_mean"), keepdims=1)
    centered = _op(g, node, "Sub", [x, mean], "_centered")
    square = _op(g, node, "Mul", [centered, centered], "_square")
    var = axes_input(g, node, "ReduceMean", square, axes, g.fresh(node.name + "_var"), keepdims=1)
    shifted = _op(g, node, "Add", [var, scalar(g, p.eps, work, "eps")], "_var_eps")
    std = _op(g, node, "Sqrt", [shifted], "_std")
    xhat = _op(g, node, "Div", [centered, std], "_xhat")
    scale = _along(g, node, cast(g, gamma, work, node.in_dtypes[1]), axis, ndim, "_g")
    shift = _along(g, node, cast(g, beta, work, node.in_dtypes[2]), axis, ndim, "_b")
    result = _op(g, node, "Add", [_op(g, node, "Mul", [xhat, scale], "_scaled"), shift], "_out")
    narrow(g, result, dtype, node.outputs[0])
    return mean, std


@converter("InstanceNorm")
def convert_instance_norm(node, g):
    _scaled_norm(node, g, list(range(2, len(node.in_shapes[0]))), 1)


@converter("LayerNorm")
def convert_layer_norm(node, g):
    axis = node.params.axis % len(node.in_shapes[0])
    mean, std = _scaled_norm(node, g, [axis], axis)
    if node.params.output_mean_var:
        narrow(g, mean, node.out_dtypes[1], node.outputs[1])
        narrow(g, std, node.out_dtypes[2], node.outputs[2])


# -- L2Normalization and LRN -------------------------------------------------------------
@converter("L2Normalization")
def convert_l2_normalization(node, g):
    p, dtype = node.params, node.in_dtypes[0]
    ndim = len(node.in_shapes[0])
    axes = {"instance": range(1, ndim), "channel": [1], "spatial": range(2, ndim)}[p.mode]
    x = wide(g, node.inputs[0], dtype)
    square = _op(g, node, "Mul", [x, x], "_square")
    total = axes_input(g, node, "ReduceSum", square, list(axes), g.fresh(node.name + "_ss"))
    shifted = _op(g, node, "Add", [total, scalar(g, p.eps, work_dtype(dtype), "eps")], "_ss_eps")
    norm = _op(g, node, "Sqrt", [shifted], "_norm")
    narrow(g, _op(g, node, "Div", [x, norm], "_out"), dtype, node.outputs[0])


@converter("LRN")
def convert_lrn(node, g):
    """ONNX's LRN is MXNet's: x / (knorm + alpha / nsize * window sum of x^2) ** beta."""
    p, dtype = node.params, node.in_dtypes[0]
    x = wide(g, node.inputs[0], dtype)
    attributes = {"alpha": p.alpha, "beta": p.beta, "bias": p.knorm, "size": p.nsize}
    narrow(g, _op(g, node, "LRN", [x], "_lrn", **attributes), dtype, node.outputs[0])


# -- softmax -------------------------------------------------------------------------------
def _length_mask(node, g, x):
    """True where a position along the softmax axis is below its row's ``length``."""
    ndim = len(node.in_shapes[0])
    axis = node.params.axis % ndim
    index = [g.const(np.int64(v), np.int64, node.name + "_i") for v in (0, 1, axis)]
    size = _op(g, node, "Gather", [_op(g, node, "Shape", [x], "_shape"), index[2]], "_n")
    positions = _op(g, node, "Range", [index[0], size, index[1]], "_positions")
    along = [1] * ndim
    along[axis] = -1
    positions = _op(g, node, "Reshape", [positions, ints(g, along)], "_along")
    length = node.inputs[1]
    if ndim > 1:  # (data's shape without axis) -> a size-1 axis in its place
        length = _op(g, node, "Unsqueeze", [length, ints(g, [axis])], "_length")
    # compared in float64, exactly as NumPy compares integer positions with any length
    positions = cast(g, positions, "float64", hint=node.name + "_positions64")
    length = cast(g, length, "float64", node.in_dtypes[1], hint=node.name + "_length64")
    return _op(g, node, "Less", [positions, length], "_mask")


def _softmax_family(node, g, sign, op_type):
    """Softmax over ``axis``; with a length, masked positions are -inf in and 0 out."""
    p, dtype = node.params, node.in_dtypes[0]
    work = work_dtype(dtype)
    x = wide(g, node.inputs[0], dtype)
    scale = sign / p.temperature if p.temperature is not None else sign
    if scale != 1:
        x = _op(g, node, "Mul", [x, scalar(g, scale, work, "scale")], "_scaled")
    mask = _length_mask(node, g, x) if p.use_length else None
    if mask is not None:
        x = _op(g, node, "Where", [mask, x, scalar(g, -np.inf, work, "minus_inf")], "_masked")
    result = _op(g, node, op_type, [x], "_softmax", axis=p.axis)
    if mask is not None:  # a row of length 0 is NaN in ONNX's softmax and 0 in MXNet's
        result = _op(g, node, "Where", [mask, result, scalar(g, 0, work, "zero")], "_kept")
    narrow(g, result, node.out_dtypes[0], node.outputs[0], work)


@converter("softmax")
def convert_softmax(node, g):
    _softmax_family(node, g, 1, "Softmax")


@converter("softmin")
def convert_softmin(node, g):
    _softmax_family(node, g, -1, "Softmax")


@converter("log_softmax")
def convert_log_softmax(node, g):
    _softmax_family(node, g, 1, "LogSoftmax")


@converter("SoftmaxOutput")
def convert_softmax_output(node, g):
    """Inference: the softmax only (the label is not read)."""
    p, dtype, ndim = node.params, node.in_dtypes[0], len(node.in_shapes[0])
    x = wide(g, node.inputs[0], dtype)
    if p.multi_output or p.preserve_shape or ndim <= 2:
        axis = 1 if p.multi_output else -1
        result = _op(g, node, "Softmax", [x], "_softmax", axis=axis)
    else:  # each row of the (N, size / N) view
        flat = _op(g, node, "Flatten", [x], "_flat", axis=1)
        rows = _op(g, node, "Softmax", [flat], "_softmax", axis=1)
        shape = _op(g, node, "Shape", [node.inputs[0]], "_shape")
        result = _op(g, node, "Reshape", [rows, shape], "_unflat")
    narrow(g, result, node.out_dtypes[0], node.outputs[0], work_dtype(dtype))


@converter("SoftmaxActivation")
def convert_softmax_activation(node, g):
    """instance: over the last axis (rows of the (-1, last) view); channel: over axis 1."""
    dtype = node.in_dtypes[0]
    axis = 1 if node.params.mode == "channel" else -1
    x = wide(g, node.inputs[0], dtype)
    narrow(g, _op(g, node, "Softmax", [x], "_softmax", axis=axis), dtype, node.outputs[0])


# -- UpSampling ----------------------------------------------------------------------------
def _bilinear_upsampling(node, g):
    from ...ops.upsampling import _bilinear_deconvolution

    deconv = _bilinear_deconvolution(node.params.scale, node.in_shapes[0][1])
    kernel, stride, pad = deconv.kernel, deconv.stride, deconv.pad
    g.add_node(
        "ConvTranspose",
        list(node.inputs[:2]),
        [node.outputs[0]],
        group=deconv.num_group,
        kernel_shape=list(kernel),
        strides=list(stride),
        pads=[*pad, *pad],
    )


@converter("UpSampling")
def convert_upsampling(node, g):
    """Nearest: each input repeated up to the first one's size times ``scale``.

    Bilinear: the depthwise ConvTranspose that rebind (as MXNet) computes it as.
    """
    p = node.params
    if p.sample_type != "nearest":
        _bilinear_upsampling(node, g)
        return
    height, width = node.out_shapes[0][2:]
    parts = []
    for value, shape in zip(node.inputs, node.in_shapes, strict=True):
        scales = [1.0, 1.0, height / shape[2], width / shape[3]]
        parts.append(
            _op(
                g,
                node,
                "Resize",
                [value, "", g.const(scales, np.float32, node.name + "_scales")],
                "_up",
                mode="nearest",
                coordinate_transformation_mode="asymmetric",
                nearest_mode="floor",
            )
        )
    if len(parts) == 1:
        g.add_node("Identity", parts, [node.outputs[0]])
    elif p.multi_input_mode == "sum":
        g.add_node("Sum", parts, [node.outputs[0]])
    else:
        g.add_node("Concat", parts, [node.outputs[0]], axis=1)
