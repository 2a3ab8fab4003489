"""Converters of the layers: FullyConnected, Convolution, Deconvolution and Pooling.

Activations, dropout and embeddings are in nn_activation.py; normalizations,
softmax and upsampling in nn_norm.py. Every window parameter MXNet leaves
empty gets MXNet's default (stride 1, dilation 1, pad 0) before it becomes an
ONNX attribute; padding is symmetric in MXNet, ``pads`` lists the begins then
the ends.
"""

import numpy as np

from ...ops.conv_utils import fill_window_params
from ..graph import tensor_type
from . import converter
from .tensor_helpers import axes_input, cast, fail, scalar

__all__ = []


def work_dtype(dtype):
    """The dtype rebind computes ``dtype`` data in: float32 for float16, else itself."""
    return "float32" if np.dtype(dtype) == np.float16 else np.dtype(dtype).name


def wide(g, value, dtype):
    """``value`` (of ``dtype``) in its work dtype."""
    return cast(g, value, work_dtype(dtype), dtype)


def narrow(g, value, dtype, output, computed=None):
    """Write ``value`` (in ``computed``, by default the work dtype of ``dtype``) to
    ``output`` as ``dtype``."""
    computed = work_dtype(dtype) if computed is None else computed
    if np.dtype(computed) != np.dtype(dtype):
        return g.add_node("Cast", [value], [output], to=tensor_type(dtype))
    return g.add_node("Identity", [value], [output])


# -- FullyConnected ---------------------------------------------------------------------
@converter("FullyConnected")
def convert_fully_connected(node, g):
    p, data, weight = node.params, node.inputs[0], node.inputs[1]
    bias = "" if p.no_bias else node.inputs[2]
    if p.flatten:
        if len(node.in_shapes[0]) != 2:
            data = g.add_node("Flatten", [data], [g.fresh(node.name + "_flat")], axis=1)
        inputs = [data, weight] if p.no_bias else [data, weight, bias]
        g.add_node("Gemm", inputs, [node.outputs[0]], transB=1)
        return
    transposed = g.add_node("Transpose", [weight], [g.fresh(node.name + "_wT")], perm=[1, 0])
    if p.no_bias:
        g.add_node("MatMul", [data, transposed], [node.outputs[0]])
        return
    product = g.add_node("MatMul", [data, transposed], [g.fresh(node.name + "_matmul")])
    g.add_node("Add", [product, bias], [node.outputs[0]])


# -- Convolution and Deconvolution ----------------------------------------------------
def _window_attributes(p, pads_end=None):
    kernel, stride, dilate, pad = fill_window_params(p)
    ends = list(pad) if pads_end is None else list(pads_end)
    return {
        "kernel_shape": list(kernel),
        "strides": list(stride),
        "dilations": list(dilate),
        "pads": [*pad, *ends],
    }


@converter("Convolution")
def convert_convolution(node, g):
    p = node.params
    inputs = list(node.inputs[: 2 if p.no_bias else 3])
    g.add_node("Conv", inputs, [node.outputs[0]], group=p.num_group, **_window_attributes(p))


@converter("Deconvolution")
def convert_deconvolution(node, g):
    """ConvTranspose; ``target_shape`` becomes the pads and output_padding it implies."""
    from ...ops.deconv import _deconv_pad_adj

    p = node.params
    pad, adj = _deconv_pad_adj(p, node.in_shapes[0])
    kernel, stride, dilate, _ = fill_window_params(p)
    if any(a >= max(s, d) for a, s, d in zip(adj, stride, dilate, strict=True)):
        raise fail(node, g, f"output padding adj={adj} not below stride {stride} or dilation")
    inputs = list(node.inputs[: 2 if p.no_bias else 3])
    g.add_node(
        "ConvTranspose",
        inputs,
        [node.outputs[0]],
        group=p.num_group,
        kernel_shape=list(kernel),
        strides=list(stride),
        dilations=list(dilate),
        pads=[*pad, *pad],
        output_padding=list(adj),
    )


# -- Pooling ---------------------------------------------------------------------------
@converter("Pooling")
def convert_pooling(node, g):
    p, dtype = node.params, node.in_dtypes[0]
    if p.global_pool:
        _global_pooling(node, g, dtype)
        return
    if p.pool_type == "max":
        g.add_node("MaxPool", [node.inputs[0]], [node.outputs[0]], **_padded_window(node))
    elif p.pool_type == "avg":
        _average_pooling(node, g)
    else:
        data = wide(g, node.inputs[0], dtype)
        powered = _power(g, node, data) if p.pool_type == "lp" else data
        total = _window_sum(node, g, powered)
        result = _root(g, node, total) if p.pool_type == "lp" else total
        narrow(g, result, dtype, node.outputs[0])


def _pads_end(node):
    """End padding reaching every window rebind computes ('full' and 'same' run past the pad)."""
    kernel, stride, _, pad = fill_window_params(node.params)
    size, out = node.in_shapes[0][2:], node.out_shapes[0][2:]
    return [
        max(n + 2 * q, (o - 1) * s + k) - n - q
        for n, k, s, q, o in zip(size, kernel, stride, pad, out, strict=True)
    ]


def _padded_window(node):
    kernel, stride, _, pad = fill_window_params(node.params)
    return {"kernel_shape": list(kernel), "strides": list(stride), "pads": [*pad, *_pads_end(node)]}


def _average_pooling(node, g):
    """MXNet divides by the window clipped at the padded border (ONNX's ceil_mode does too)."""
    p = node.params
    include = p.count_include_pad is None or p.count_include_pad
    if include and p.pooling_convention == "full":
        kernel, stride, _, pad = fill_window_params(p)
        attributes = {
            "kernel_shape": list(kernel),
            "strides": list(stride),
            "pads": [*pad, *pad],
            "ceil_mode": 1,
        }
    else:
        # 'valid' has no overhang; 'same' has no padding, so only real elements count
        include = include and p.pooling_convention == "valid"
        attributes = _padded_window(node)
    g.add_node(
        "AveragePool",
        [node.inputs[0]],
        [node.outputs[0]],
        count_include_pad=int(include),
        **attributes,
    )


def _window_sum(node, g, data):
    """Each window's sum: a depthwise convolution with a kernel of ones."""
    kernel, stride, _, pad = fill_window_params(node.params)
    channels = node.in_shapes[0][1]
    ones = g.const(np.ones((channels, 1, *kernel)), np.float32, node.name + "_ones")
    if np.dtype(node.in_dtypes[0]) == np.float64:
        ones = cast(g, ones, "float64")
    return g.add_node(
        "Conv",
        [data, ones],
        [g.fresh(node.name + "_sum")],
        group=channels,
        kernel_shape=list(kernel),
        strides=list(stride),
        pads=[*pad, *_pads_end(node)],
    )


def _power(g, node, x):
    """x ** p_value with MXNet's signs (x, x*x, x*x*x: no absolute value)."""
    result = x
    for _ in range(node.params.p_value - 1):
        result = g.add_node("Mul", [result, x], [g.fresh(node.name + "_pow")])
    return result


def _root(g, node, x):
    p_value = node.params.p_value
    if p_value == 1:
        return x
    if p_value == 2:
        return g.add_node("Sqrt", [x], [g.fresh(node.name + "_sqrt")])
    magnitude = g.add_node("Abs", [x], [g.fresh(node.name + "_abs")])
    third = scalar(g, 1.0 / 3.0, work_dtype(node.in_dtypes[0]), node.name + "_third")
    root = g.add_node("Pow", [magnitude, third], [g.fresh(node.name + "_cbrt")])
    sign = g.add_node("Sign", [x], [g.fresh(node.name + "_sign")])
    return g.add_node("Mul", [root, sign], [g.fresh(node.name + "_root")])


def _global_pooling(node, g, dtype):
    p = node.params
    if p.pool_type == "max":
        g.add_node("GlobalMaxPool", [node.inputs[0]], [node.outputs[0]])
        return
    if p.pool_type == "avg":
        g.add_node("GlobalAveragePool", [node.inputs[0]], [node.outputs[0]])
        return
    data = wide(g, node.inputs[0], dtype)
    powered = _power(g, node, data) if p.pool_type == "lp" else data
    axes = list(range(2, len(node.in_shapes[0])))
    total = axes_input(g, node, "ReduceSum", powered, axes, g.fresh(node.name + "_sum"))
    result = _root(g, node, total) if p.pool_type == "lp" else total
    narrow(g, result, dtype, node.outputs[0])
