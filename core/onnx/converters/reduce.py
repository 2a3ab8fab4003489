"""Converters of reductions: sum, mean, prod, max, min, nansum, nanprod (axis,
keepdims, exclude), norm (ord 1 or 2), moments, cumsum and
softmax_cross_entropy.

MXNet's rules kept: reducing every axis without keepdims gives shape (1,),
never a 0-d tensor; float16 sums, means and products accumulate in float32.
ReduceSum takes its axes as an input from opset 13, the other reductions from
opset 18 (``axes_input`` picks by ``g.opset``).
"""

import numpy as np

from ...ops.reduce import reduced_axes
from ..graph import tensor_type
from . import converter
from .tensor_helpers import axes_input, cast, ints, scalar

__all__ = []


def _reduce(g, node, op_type, data, axes, keepdims, output):
    """``op_type`` over ``axes`` of ``data``, with MXNet's (1,) for a full reduction."""
    ndim = len(node.in_shapes[0])
    if not axes:  # exclude=True with every axis listed: nothing is reduced
        return g.add_node("Identity", [data], [output])
    if keepdims or len(axes) < ndim:
        return axes_input(g, node, op_type, data, axes, output, keepdims=int(keepdims))
    kept = axes_input(g, node, op_type, data, axes, g.fresh(f"{node.name}_kept"), keepdims=1)
    return g.add_node("Reshape", [kept, ints(g, [1])], [output])


# rebind op -> (ONNX reduction, value NaN is replaced by or None, accumulates in float32)
_REDUCTIONS = {
    "sum": ("ReduceSum", None, True),
    "mean": ("ReduceMean", None, True),
    "prod": ("ReduceProd", None, True),
    "max": ("ReduceMax", None, False),
    "min": ("ReduceMin", None, False),
    "nansum": ("ReduceSum", 0, True),
    "nanprod": ("ReduceProd", 1, True),
}


def _reduction(op_type, nan_value, accumulates):
    def convert(node, g):
        p, data, dtype = node.params, node.inputs[0], node.in_dtypes[0]
        axes = reduced_axes(p.axis, p.exclude, len(node.in_shapes[0]))
        if nan_value is not None and np.dtype(dtype).kind == "f":
            nan = g.add_node("IsNaN", [data], [g.fresh(f"{node.name}_nan")])
            fill = scalar(g, nan_value, dtype, "nan_fill")
            data = g.add_node("Where", [nan, fill, data], [g.fresh(f"{node.name}_filled")])
        wide = "float32" if accumulates and dtype == "float16" else dtype
        data = cast(g, data, wide, have=dtype)
        if wide == dtype:
            _reduce(g, node, op_type, data, axes, p.keepdims, node.outputs[0])
            return
        reduced = _reduce(g, node, op_type, data, axes, p.keepdims, g.fresh(node.name))
        g.add_node("Cast", [reduced], [node.outputs[0]], to=tensor_type(dtype))

    return convert


for _name, _row in _REDUCTIONS.items():
    converter(_name)(_reduction(*_row))


@converter("norm")
def convert_norm(node, g):
    p, dtype = node.params, node.in_dtypes[0]
    axes = reduced_axes(p.axis, False, len(node.in_shapes[0]))
    # integers are normed in float64, float16 in float32 (its squares overflow)
    kind = np.dtype(dtype).kind
    wide = "float64" if kind in "iub" else ("float32" if dtype == "float16" else dtype)
    data = cast(g, node.inputs[0], wide, have=dtype)
    op_type = "ReduceL1" if p.ord == 1 else "ReduceL2"
    out_dtype = node.out_dtypes[0]
    if out_dtype == wide:
        _reduce(g, node, op_type, data, axes, p.keepdims, node.outputs[0])
        return
    reduced = _reduce(g, node, op_type, data, axes, p.keepdims, g.fresh(node.name))
    g.add_node("Cast", [reduced], [node.outputs[0]], to=tensor_type(out_dtype))


@converter("moments")
def convert_moments(node, g):
    p, dtype = node.params, node.in_dtypes[0]
    ndim = len(node.in_shapes[0])
    axes = sorted(a + ndim if a < 0 else a for a in p.axes)
    wide = "float32" if dtype == "float16" else dtype
    data = cast(g, node.inputs[0], wide, have=dtype)
    mean = axes_input(g, node, "ReduceMean", data, axes, g.fresh("mean"), keepdims=1)
    centred = g.add_node("Sub", [data, mean], [g.fresh("centred")])
    squares = g.add_node("Mul", [centred, centred], [g.fresh("squares")])
    var = axes_input(g, node, "ReduceMean", squares, axes, g.fresh("var"), keepdims=1)
    for value, output in zip((mean, var), node.outputs, strict=True):
        shaped = value
        if not p.keepdims:
            kept = [d for i, d in enumerate(node.in_shapes[0]) if i not in axes]
            shaped = _drop_axes(g, node, value, axes, ndim, bool(kept))
        g.add_node("Identity", [cast(g, shaped, dtype, have=wide)], [output])


def _drop_axes(g, node, value, axes, ndim, some_left):
    if some_left:
        return axes_input(g, node, "Squeeze", value, axes, g.fresh("squeezed"))
    return g.add_node("Reshape", [value, ints(g, [1])], [g.fresh("squeezed")])


@converter("_np_cumsum")
def convert_cumsum(node, g):
    p, data = node.params, node.inputs[0]
    if p.axis is None:
        data = g.add_node("Reshape", [data, ints(g, [-1])], [g.fresh(f"{node.name}_flat")])
        axis = 0
    else:
        ndim = len(node.in_shapes[0])
        axis = p.axis + ndim if p.axis < 0 else p.axis
    data = cast(g, data, node.out_dtypes[0], have=node.in_dtypes[0])
    g.add_node("CumSum", [data, g.const(axis, np.int64, "axis")], [node.outputs[0]])


@converter("softmax_cross_entropy")
def convert_softmax_cross_entropy(node, g):
    """The total over the batch of -log softmax(data)[label], shape (1,)."""
    (data, label), dtype = node.inputs, node.in_dtypes[0]
    classes = node.in_shapes[0][1]
    wide = "float32" if dtype == "float16" else dtype
    log_probs = g.add_node(
        "LogSoftmax", [cast(g, data, wide, have=dtype)], [g.fresh("log_probs")], axis=1
    )
    # labels out of range are clipped to the nearest class, as rebind does
    positions = cast(g, label, "int64", have=node.in_dtypes[1])
    zero, last = g.const(0, np.int64, "zero"), g.const(classes - 1, np.int64, "last")
    positions = g.add_node("Clip", [positions, zero, last], [g.fresh("classes")])
    column = axes_input(g, node, "Unsqueeze", positions, [1], g.fresh("column"))
    picked = g.add_node("GatherElements", [log_probs, column], [g.fresh("picked")], axis=1)
    total = axes_input(g, node, "ReduceSum", picked, [0, 1], g.fresh("total"), keepdims=0)
    loss = g.add_node("Neg", [total], [g.fresh("loss")])
    flat = g.add_node("Reshape", [loss, ints(g, [1])], [g.fresh("loss")])
    g.add_node("Identity", [cast(g, flat, dtype, have=wide)], [node.outputs[0]])
