"""The tensor helpers of ``mx.contrib`` in ONNX: arange_like, index_array, allclose and the
four interleaved multi-head attention matmuls.

arange_like and index_array depend only on their input's shape, so they are
built from ``Shape`` / ``Range`` at run time (a dynamic-batch export stays
right); their arithmetic is rebind's, step for step (float16 rounded after
each operation as NumPy does). The interleaved matmuls are the Reshape,
Gather, Transpose and MatMul of ``ops/contrib_attention.py``.
"""

import math

import numpy as np

from ..graph import tensor_type
from . import converter
from .tensor_helpers import cast, ints, scalar, shape_of

__all__ = ["rounded"]


def _index(g, value, hint="index"):
    """A 0-d int64 initializer (Gather with it drops the axis)."""
    return g.const(np.int64(value), np.int64, hint)


def rounded(g, op_type, inputs, dtype, hint):
    """``op_type`` over ``inputs`` in the work dtype; float16 results rounded as NumPy's are."""
    out = g.add_node(op_type, inputs, [g.fresh(hint)])
    if np.dtype(dtype) != np.float16:
        return out
    half = cast(g, out, "float16", hint=hint + "_half")
    return cast(g, half, "float32", hint=hint + "_rounded")


def _work(dtype):
    return "float32" if np.dtype(dtype) == np.float16 else np.dtype(dtype).name


# -- arange_like / index_array ------------------------------------------------------------
@converter("_contrib_arange_like")
def convert_arange_like(node, g):
    """start + (i // repeat) * step over the input's size (or one axis), at run time."""
    p, data, dtype = node.params, node.inputs[0], node.in_dtypes[0]
    if p.axis is None:
        count = g.add_node("Size", [data], [g.fresh(node.name + "_count")])
    else:
        axis = p.axis % len(node.in_shapes[0])
        count = g.add_node("Gather", [shape_of(g, data), _index(g, axis)], [g.fresh("count")])
    zero, one = _index(g, 0, "zero"), _index(g, 1, "one")
    steps = g.add_node("Range", [zero, count, one], [g.fresh(node.name + "_steps")])
    if p.repeat != 1:  # the indices are non-negative: Div is floor division
        steps = g.add_node("Div", [steps, _index(g, p.repeat, "repeat")], [g.fresh("steps")])
    work = _work(dtype)
    # the constants as rebind's dtype(start), dtype(step): rounded from the float parameter
    with np.errstate(over="ignore"):  # a float16 overflow is inf, in rebind's kernel too
        start = scalar(g, np.asarray(p.start).astype(dtype), work, node.name + "_start")
        step = scalar(g, np.asarray(p.step).astype(dtype), work, node.name + "_step")
    values = cast(g, steps, dtype, hint=node.name + "_index")
    values = cast(g, values, work, dtype, hint=node.name + "_index_wide")
    values = rounded(g, "Mul", [values, step], dtype, node.name + "_scaled")
    values = rounded(g, "Add", [start, values], dtype, node.name + "_values")
    values = cast(g, values, dtype, work, hint=node.name + "_cast")
    if p.axis is None:
        g.add_node("Reshape", [values, shape_of(g, data)], node.outputs)
    else:
        g.add_node("Identity", [values], node.outputs)


@converter("_contrib_index_array")
def convert_index_array(node, g):
    """Each element's index along ``axes``, stacked on a new last axis (int64)."""
    data, ndim = node.inputs[0], len(node.in_shapes[0])
    axes = range(ndim) if node.params.axes is None else node.params.axes
    axes = [axis % ndim for axis in axes]  # never empty: a 0-size axis has no inferred shape
    shape = shape_of(g, data)
    columns = []
    for axis in axes:
        size = g.add_node("Gather", [shape, _index(g, axis)], [g.fresh("size")])
        line = g.add_node("Range", [_index(g, 0), size, _index(g, 1)], [g.fresh("line")])
        along = [1] * ndim
        along[axis] = -1
        line = g.add_node("Reshape", [line, ints(g, along)], [g.fresh("line_axis")])
        grid = g.add_node("Expand", [line, shape], [g.fresh(f"{node.name}_grid")])
        grid = g.add_node("Unsqueeze", [grid, ints(g, [-1])], [g.fresh("column")])
        columns.append(grid)
    g.add_node("Concat", columns, node.outputs, axis=-1)


# -- allclose ------------------------------------------------------------------------------
def _close(node, g, a, b, dtype):
    """Elementwise closeness as rebind's allclose (before its NaN rule)."""
    atol = scalar(g, np.float32(node.params.atol), dtype, "atol")
    rtol = scalar(g, np.float32(node.params.rtol), dtype, "rtol")
    scaled = g.add_node("Mul", [g.add_node("Abs", [b], [g.fresh("abs_b")]), rtol], [g.fresh("r")])
    tolerance = g.add_node("Add", [atol, scaled], [g.fresh("tolerance")])
    gap = g.add_node("Abs", [g.add_node("Sub", [a, b], [g.fresh("diff")])], [g.fresh("gap")])
    near = g.add_node("LessOrEqual", [gap, tolerance], [g.fresh("near")])
    equal = g.add_node("Equal", [a, b], [g.fresh("equal")])
    return g.add_node("Or", [equal, near], [g.fresh(node.name + "_close")])


@converter("_contrib_allclose")
def convert_allclose(node, g):
    """1 (uint8, 0-d) where every element is close; NaNs match NaNs only if equal_nan."""
    dtype = np.dtype(node.in_dtypes[0])
    work = "float32" if dtype.kind == "f" and dtype != np.float64 else dtype.name
    a = cast(g, node.inputs[0], work, dtype, hint="a")
    b = cast(g, node.inputs[1], work, node.in_dtypes[1], hint="b")
    close = _close(node, g, a, b, work)
    if np.dtype(work).kind == "f":
        nan_a = g.add_node("IsNaN", [a], [g.fresh("nan_a")])
        nan_b = g.add_node("IsNaN", [b], [g.fresh("nan_b")])
        either = g.add_node("Or", [nan_a, nan_b], [g.fresh("nan")])
        both = g.add_node("Equal", [nan_a, nan_b], [g.fresh("nan_same")])
        numbers = g.add_node("Not", [either], [g.fresh("no_nan")])
        close = g.add_node("And", [numbers, close], [g.fresh("close_numbers")])
        if node.params.equal_nan:  # ONNX Runtime has no boolean Where: And/Or instead
            nans = g.add_node("And", [either, both], [g.fresh("same_nans")])
            close = g.add_node("Or", [close, nans], [g.fresh("close")])
    # count the far elements: an empty input has none (NumPy's all() of nothing is True)
    far = cast(g, g.add_node("Not", [close], [g.fresh("far")]), "int64", hint="far_count")
    count = g.add_node("ReduceSum", [far], [g.fresh("far_total")], keepdims=0)
    flag = g.add_node("Equal", [count, _index(g, 0)], [g.fresh("all_close")])
    g.add_node("Cast", [flag], node.outputs, to=tensor_type(np.uint8))


# -- interleaved multi-head attention ------------------------------------------------------
def _project(g, x, heads, parts, part):
    """(seq, batch, heads * parts * d) -> (batch * heads, seq, d): one interleaved part."""
    split = g.add_node("Reshape", [x, ints(g, [0, 0, heads, parts, -1])], [g.fresh("split")])
    chosen = g.add_node("Gather", [split, _index(g, part)], [g.fresh("part")], axis=3)
    moved = g.add_node("Transpose", [chosen], [g.fresh("heads_first")], perm=[1, 2, 0, 3])
    return _fold(g, moved, [-1], 2, 4, "projected")


def _fold(g, x, leading, first, last, hint):
    """Reshape ``x`` to ``leading`` + its own dims ``first:last`` (read at run time)."""
    dims = g.add_node(
        "Slice", [shape_of(g, x), ints(g, [first]), ints(g, [last])], [g.fresh("dims")]
    )
    target = g.add_node("Concat", [ints(g, leading), dims], [g.fresh("target")], axis=0)
    return g.add_node("Reshape", [x, target], [g.fresh(hint)])


def _scale(g, depth, dtype):
    """1 / sqrt(head_dim) in ``dtype``, as rebind's kernel rounds it."""
    value = np.dtype(dtype).type(1 / math.sqrt(np.float32(depth)))
    return scalar(g, value, dtype, "scale")


@converter("_contrib_interleaved_matmul_selfatt_qk", "_contrib_interleaved_matmul_encdec_qk")
def convert_interleaved_qk(node, g):
    """(q * scale) @ k.T per (batch, head)."""
    heads, dtype = node.params.heads, node.in_dtypes[0]
    if len(node.inputs) == 1:
        (qkv,) = node.inputs
        q, k = _project(g, qkv, heads, 3, 0), _project(g, qkv, heads, 3, 1)
        depth = node.in_shapes[0][2] // (3 * heads)
    else:
        queries, kv = node.inputs
        q, k = _project(g, queries, heads, 1, 0), _project(g, kv, heads, 2, 0)
        depth = node.in_shapes[0][2] // heads
    q = g.add_node("Mul", [q, _scale(g, depth, dtype)], [g.fresh("q_scaled")])
    k = g.add_node("Transpose", [k], [g.fresh("k_t")], perm=[0, 2, 1])
    g.add_node("MatMul", [q, k], node.outputs)


@converter(
    "_contrib_interleaved_matmul_selfatt_valatt", "_contrib_interleaved_matmul_encdec_valatt"
)
def convert_interleaved_valatt(node, g):
    """attention @ v per (batch, head), heads merged back to (seq, batch, heads * d)."""
    heads = node.params.heads
    parts = 3 if node.op.name.endswith("selfatt_valatt") else 2
    projections, attention = node.inputs
    v = _project(g, projections, heads, parts, parts - 1)
    out = g.add_node("MatMul", [attention, v], [g.fresh(node.name + "_heads")])
    split = _fold(g, out, [-1, heads], 1, 3, "per_head")
    moved = g.add_node("Transpose", [split], [g.fresh("seq_first")], perm=[2, 0, 1, 3])
    g.add_node("Reshape", [moved, ints(g, [0, 0, -1])], node.outputs)
