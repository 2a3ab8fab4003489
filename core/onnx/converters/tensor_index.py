"""Converters of gathers, selection, sorting and matrix products: take, pick,
one_hot, where, gather_nd, scatter_nd, batch_take, topk, sort, argsort, argmax,
argmin, argmax_channel, dot, batch_dot, linalg_gemm and linalg_gemm2.

MXNet's index arrays are usually float: they become int64 by truncation (ONNX
Cast, as MXNet's C cast), then are clipped or wrapped into range in the graph,
with the axis size read from ``Shape`` so a dynamic batch is no problem.
"""

import numpy as np

from ..errors import require_onnx
from ..graph import tensor_type
from . import converter
from .tensor_helpers import axes_input, cast, ints, shape_of

__all__ = []


def _axis(axis, ndim):
    return axis + ndim if axis < 0 else axis


def _positions(g, node, indices, dtype, data, axis, mode):
    """int64 positions along ``axis`` of ``data``: clipped, or wrapped for mode 'wrap'.

    mode 'raise' is exported as 'clip': both agree wherever 'raise' does not fail.
    """
    positions = cast(g, indices, "int64", have=dtype, hint=f"{node.name}_positions")
    size = g.add_node(
        "Gather", [shape_of(g, data), g.const(axis, np.int64, "axis")], [g.fresh("size")], axis=0
    )
    if mode == "wrap":  # fmod=0: the sign of the divisor, as Python's %
        return g.add_node("Mod", [positions, size], [g.fresh(f"{node.name}_wrapped")], fmod=0)
    last = g.add_node("Sub", [size, g.const(1, np.int64, "one")], [g.fresh("last")])
    zero = g.const(0, np.int64, "zero")
    return g.add_node("Clip", [positions, zero, last], [g.fresh(f"{node.name}_clipped")])


@converter("take")
def convert_take(node, g):
    p = node.params
    axis = _axis(p.axis, len(node.in_shapes[0]))
    data, indices = node.inputs
    positions = _positions(g, node, indices, node.in_dtypes[1], data, axis, p.mode)
    g.add_node("Gather", [data, positions], [node.outputs[0]], axis=axis)


@converter("pick")
def convert_pick(node, g):
    p = node.params
    ndim = len(node.in_shapes[0])
    axis = _axis(p.axis, ndim)
    data, index = node.inputs
    positions = _positions(g, node, index, node.in_dtypes[1], data, axis, p.mode)
    if len(node.in_shapes[1]) < ndim:  # the index lacks the picked axis
        positions = axes_input(g, node, "Unsqueeze", positions, [axis], g.fresh("positions"))
    if ndim == 1 or p.keepdims:
        g.add_node("GatherElements", [data, positions], [node.outputs[0]], axis=axis)
        return
    picked = g.add_node("GatherElements", [data, positions], [g.fresh("picked")], axis=axis)
    axes_input(g, node, "Squeeze", picked, [axis], node.outputs[0])


@converter("one_hot")
def convert_one_hot(node, g):
    # built from Equal rather than ONNX OneHot, whose negative indices count from the end:
    # MXNet gives an all-off row for every index outside [0, depth)
    p = node.params
    positions = cast(g, node.inputs[0], "int64", have=node.in_dtypes[0])
    ndim = len(node.in_shapes[0])
    column = axes_input(g, node, "Unsqueeze", positions, [ndim], g.fresh("column"))
    classes = g.const(np.arange(p.depth, dtype=np.int64), np.int64, "classes")
    hit = g.add_node("Equal", [column, classes], [g.fresh(f"{node.name}_hit")])
    on = g.const(np.asarray(p.on_value).astype(p.dtype), p.dtype, "on_value")
    off = g.const(np.asarray(p.off_value).astype(p.dtype), p.dtype, "off_value")
    g.add_node("Where", [hit, on, off], [node.outputs[0]])


@converter("where")
def convert_where(node, g):
    condition, x, y = node.inputs
    mask = cast(g, condition, "bool", hint=f"{node.name}_mask")
    cond_ndim, ndim = len(node.in_shapes[0]), len(node.in_shapes[1])
    if cond_ndim == 1 and ndim > 1:  # a 1-D condition picks whole rows
        mask = axes_input(g, node, "Unsqueeze", mask, range(1, ndim), g.fresh("row_mask"))
    g.add_node("Where", [mask, x, y], [node.outputs[0]])


# -- sorting ----------------------------------------------------------------------------


def _sorted(g, node, axis, k, ascending):
    """(values, int64 indices, sorted input, axis) of ONNX TopK; axis None flattens."""
    data = node.inputs[0]
    if axis is None:
        data = g.add_node("Reshape", [data, ints(g, [-1])], [g.fresh(f"{node.name}_flat")])
        axis = 0
    else:
        axis = _axis(axis, len(node.in_shapes[0]))
    if k > 0:
        count = ints(g, [k], "k")
    else:  # a full sort: as many as the axis holds
        count = g.add_node(
            "Slice",
            [shape_of(g, data), ints(g, [axis]), ints(g, [axis + 1])],
            [g.fresh("k")],
        )
    values, indices = g.fresh(f"{node.name}_values"), g.fresh(f"{node.name}_indices")
    g.add_node(
        "TopK", [data, count], [values, indices], axis=axis, largest=int(not ascending), sorted=1
    )
    return values, indices, data, axis


@converter("topk")
def convert_topk(node, g):
    p = node.params
    values, indices, data, axis = _sorted(g, node, p.axis, p.k, p.is_ascend)
    if p.ret_typ == "mask":
        _topk_mask(g, node, values, indices, data, axis)
    elif p.ret_typ == "indices":
        g.add_node("Cast", [indices], [node.outputs[0]], to=tensor_type(p.dtype))
    else:
        g.add_node("Identity", [values], [node.outputs[0]])
        if p.ret_typ == "both":
            g.add_node("Cast", [indices], [node.outputs[1]], to=tensor_type(p.dtype))


def _topk_mask(g, node, values, indices, data, axis):
    onnx = require_onnx()
    dtype = node.out_dtypes[0]

    def filled(value, like, hint):
        tensor = onnx.numpy_helper.from_array(np.asarray([value], dtype=dtype), name=hint)
        return g.add_node("ConstantOfShape", [shape_of(g, like)], [g.fresh(hint)], value=tensor)

    zeros, ones = filled(0, data, "zeros"), filled(1, values, "ones")
    inputs = [zeros, indices, ones]
    if node.params.axis is not None:
        g.add_node("ScatterElements", inputs, [node.outputs[0]], axis=axis)
        return
    flat = g.add_node("ScatterElements", inputs, [g.fresh("mask")], axis=axis)
    g.add_node("Reshape", [flat, shape_of(g, node.inputs[0])], [node.outputs[0]])


@converter("sort")
def convert_sort(node, g):
    p = node.params
    values, _, _, _ = _sorted(g, node, p.axis, 0, p.is_ascend)
    g.add_node("Identity", [values], [node.outputs[0]])


@converter("argsort")
def convert_argsort(node, g):
    p = node.params
    _, indices, _, _ = _sorted(g, node, p.axis, 0, p.is_ascend)
    g.add_node("Cast", [indices], [node.outputs[0]], to=tensor_type(p.dtype))


def _arg_reduce(op_type, axis_of):
    def convert(node, g):
        axis, ndim = axis_of(node.params), len(node.in_shapes[0])
        keepdims = getattr(node.params, "keepdims", False)
        data, found = node.inputs[0], g.fresh(f"{node.name}_found")
        if axis is None or ndim == 1:  # over everything: (1,), or all ones with keepdims
            data = g.add_node("Reshape", [data, ints(g, [-1])], [g.fresh(f"{node.name}_flat")])
            g.add_node(op_type, [data], [found], axis=0, keepdims=1)
            if keepdims and ndim > 1:
                found = g.add_node("Reshape", [found, ints(g, [1] * ndim)], [g.fresh("found")])
        else:
            g.add_node(op_type, [data], [found], axis=_axis(axis, ndim), keepdims=int(keepdims))
        g.add_node("Cast", [found], [node.outputs[0]], to=tensor_type(node.out_dtypes[0]))

    return convert


converter("argmax")(_arg_reduce("ArgMax", lambda p: p.axis))
converter("argmin")(_arg_reduce("ArgMin", lambda p: p.axis))
converter("argmax_channel")(_arg_reduce("ArgMax", lambda p: 1))


# -- matrix products -------------------------------------------------------------------


def _transposed(g, value, ndim, hint):
    perm = list(range(ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return g.add_node("Transpose", [value], [g.fresh(hint)], perm=perm)


@converter("batch_dot")
def convert_batch_dot(node, g):
    p, ndim = node.params, len(node.in_shapes[0])
    lhs, rhs = node.inputs
    lhs = _transposed(g, lhs, ndim, f"{node.name}_lhs_t") if p.transpose_a else lhs
    rhs = _transposed(g, rhs, ndim, f"{node.name}_rhs_t") if p.transpose_b else rhs
    g.add_node("MatMul", [lhs, rhs], [node.outputs[0]])


@converter("dot")
def convert_dot(node, g):
    p = node.params
    lhs_shape, rhs_shape = node.in_shapes
    lhs, rhs = node.inputs
    if len(lhs_shape) == 1 and len(rhs_shape) == 1:  # an inner product: (1,), never 0-d
        product = g.add_node("MatMul", [lhs, rhs], [g.fresh(f"{node.name}_inner")])
        g.add_node("Reshape", [product, ints(g, [1])], [node.outputs[0]])
        return
    if len(rhs_shape) <= 2 and (len(lhs_shape) <= 2 or not p.transpose_a):
        # MatMul's own broadcasting is MXNet's dot when rhs is a vector or a matrix
        if p.transpose_a and len(lhs_shape) == 2:
            lhs = _transposed(g, lhs, 2, f"{node.name}_lhs_t")
        if p.transpose_b and len(rhs_shape) == 2:
            rhs = _transposed(g, rhs, 2, f"{node.name}_rhs_t")
        g.add_node("MatMul", [lhs, rhs], [node.outputs[0]])
        return
    _tensor_dot(g, node)


@converter("_linalg_gemm", "_linalg_gemm2")
def convert_linalg_gemm(node, g):
    """alpha op(A) op(B) (+ beta C for gemm), the matrix rows on ``axis``."""
    p, ndim, dtype = node.params, len(node.in_shapes[0]), node.out_dtypes[0]
    axis = p.axis + ndim if p.axis < 0 else p.axis
    # move the row axis next to the last one, where MatMul wants it (and back at the end)
    perm = [i for i in range(ndim - 1) if i != axis] + [axis, ndim - 1]
    moved = [
        g.add_node("Transpose", [v], [g.fresh("moved")], perm=perm) if axis != ndim - 2 else v
        for v in node.inputs
    ]
    a, b = moved[0], moved[1]
    a = _transposed(g, a, ndim, f"{node.name}_a_t") if p.transpose_a else a
    b = _transposed(g, b, ndim, f"{node.name}_b_t") if p.transpose_b else b
    product = g.add_node("MatMul", [a, b], [g.fresh(f"{node.name}_product")])
    alpha = g.const(np.asarray(p.alpha).astype(dtype), dtype, "alpha")
    result = g.add_node("Mul", [product, alpha], [g.fresh(f"{node.name}_scaled")])
    if len(moved) == 3:
        beta = g.const(np.asarray(p.beta).astype(dtype), dtype, "beta")
        addend = g.add_node("Mul", [moved[2], beta], [g.fresh(f"{node.name}_c")])
        result = g.add_node("Add", [result, addend], [g.fresh(f"{node.name}_sum")])
    back = [perm.index(i) for i in range(ndim)]
    g.add_node("Transpose", [result], [node.outputs[0]], perm=back)


def _tensor_dot(g, node):
    """The general case: both sides as matrices, one MatMul, then the kept axes back."""
    p = node.params
    (lhs_shape, rhs_shape), (lhs, rhs) = node.in_shapes, node.inputs
    inner = lhs_shape[0] if p.transpose_a else lhs_shape[-1]
    lhs = _as_matrix(g, node, lhs, inner, first=p.transpose_a, hint="lhs")
    rhs = _as_matrix(g, node, rhs, inner, first=not p.transpose_b, hint="rhs")
    product = g.add_node("MatMul", [lhs, rhs], [g.fresh(f"{node.name}_product")])
    if not g.dynamic:
        target = ints(g, node.out_shapes[0], "shape")
        g.add_node("Reshape", [product, target], [node.outputs[0]])
        return
    lhs_dims = _kept_dims(g, node.inputs[0], len(lhs_shape), p.transpose_a)
    rhs_dims = _kept_dims(g, node.inputs[1], len(rhs_shape), not p.transpose_b)
    target = g.add_node("Concat", [lhs_dims, rhs_dims], [g.fresh("target_shape")], axis=0)
    g.add_node("Reshape", [product, target], [node.outputs[0]])


def _as_matrix(g, node, value, inner, first, hint):
    """(rows, inner) or (inner, cols) for ``first``: the contracted axis leads or trails."""
    if first:  # contract axis 0: (inner, rest), transposed to (rest, inner) for lhs
        matrix = g.add_node("Reshape", [value, ints(g, [inner, -1])], [g.fresh(hint)])
        return _transposed(g, matrix, 2, f"{hint}_t") if hint == "lhs" else matrix
    matrix = g.add_node("Reshape", [value, ints(g, [-1, inner])], [g.fresh(hint)])
    return _transposed(g, matrix, 2, f"{hint}_t") if hint == "rhs" else matrix


def _kept_dims(g, value, ndim, contract_first):
    start, stop = (1, ndim) if contract_first else (0, ndim - 1)
    return g.add_node(
        "Slice", [shape_of(g, value), ints(g, [start]), ints(g, [stop])], [g.fresh("dims")]
    )


# -- N-d gathers and scatters ------------------------------------------------------------


def _coordinates_last(g, node, indices, dtype, ndim):
    """MXNet's (M, ...) coordinate arrays as ONNX's (..., M), int64."""
    positions = cast(g, indices, "int64", have=dtype, hint=f"{node.name}_coordinates")
    perm = [*range(1, ndim), 0]
    return g.add_node("Transpose", [positions], [g.fresh(f"{node.name}_coordinates")], perm=perm)


@converter("gather_nd")
def convert_gather_nd(node, g):
    data, indices = node.inputs
    coordinates = _coordinates_last(g, node, indices, node.in_dtypes[1], len(node.in_shapes[1]))
    g.add_node("GatherND", [data, coordinates], [node.outputs[0]])


@converter("scatter_nd")
def convert_scatter_nd(node, g):
    """Zeros of ``shape`` with ``data`` written at the coordinates (repeats: one of them)."""
    onnx = require_onnx()
    data, indices = node.inputs
    coordinates = _coordinates_last(g, node, indices, node.in_dtypes[1], len(node.in_shapes[1]))
    zero = onnx.numpy_helper.from_array(np.zeros(1, dtype=node.out_dtypes[0]), name="zero")
    shape = ints(g, node.params.shape, "shape")
    zeros = g.add_node("ConstantOfShape", [shape], [g.fresh(f"{node.name}_zeros")], value=zero)
    g.add_node("ScatterND", [zeros, coordinates, data], [node.outputs[0]])


@converter("batch_take")
def convert_batch_take(node, g):
    """One element per row of ``a`` (its last axis), at the clipped indices."""
    a, indices = node.inputs
    columns = node.in_shapes[0][-1]
    rows = g.add_node("Reshape", [a, ints(g, [-1, columns])], [g.fresh(f"{node.name}_rows")])
    flat = g.add_node("Reshape", [indices, ints(g, [-1, 1])], [g.fresh(f"{node.name}_flat")])
    positions = cast(g, flat, "int64", have=node.in_dtypes[1])
    zero, last = g.const(0, np.int64, "zero"), g.const(columns - 1, np.int64, "last")
    positions = g.add_node("Clip", [positions, zero, last], [g.fresh(f"{node.name}_clipped")])
    picked = g.add_node("GatherElements", [rows, positions], [g.fresh("picked")], axis=1)
    g.add_node("Reshape", [picked, shape_of(g, indices)], [node.outputs[0]])
