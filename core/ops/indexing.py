"""Gathering by index arrays: take, pick (choose_element_0index), one_hot, Embedding.

MXNet passes indices as arrays of any dtype, usually float32. They become
integers by truncation toward zero (a C cast), then are clipped or wrapped
into range per ``mode``. Index arguments get zeros as their gradient (what
MXNet returns) when one is asked for, None otherwise.
"""

import math

import attrs
import numpy

from ..errors import RebindError
from .base import OpDef, merge_shape, mismatch
from .params import param, positive
from .shape import normalize_axis

__all__ = ["OPS", "to_index", "scatter_add", "reduce_axis_shape"]

INDEX_DTYPES = ("float32", "float64", "float16", "uint8", "int8", "int32", "int64")


class IndexOutOfRange(RebindError, IndexError):
    """An index outside its axis with mode='raise' (an MXNetError, as MXNet reports it)."""


def to_index(xp, indices, size, mode):
    """Integer positions in ``[0, size)`` from an index array of any dtype."""
    positions = indices.astype("int64")  # truncates toward zero, like MXNet's cast
    if mode == "wrap":
        return positions % size  # Python-style modulo: already non-negative
    if mode == "raise":
        bad = (positions < 0) | (positions >= size)
        if bool(bad.any()):
            raise IndexOutOfRange(f"take: indices out of range [0, {size}) with mode='raise'")
        return positions
    return xp.clip(positions, 0, size - 1)


def scatter_add(xp, target, rows, values):
    """``target[rows[i]] += values[i]``, repeated rows accumulating (numpy.add.at).

    ``rows`` is an integer array indexing the first axis, or a tuple of them
    indexing the leading axes. On NumPy it is ``numpy.add.at``; on CuPy the
    GPU backend's ``ordered_scatter_add``, which adds each row's values in the
    same order, so gradients match NumPy's bit for bit and do not change from
    run to run (CuPy's own ``add.at`` adds with atomics, in any order).
    """
    if xp is numpy:
        numpy.add.at(target, rows, values)
        return
    from rebind.backends.cupy_kernels import ordered_scatter_add

    if isinstance(rows, tuple):  # leading axes: one flat row index over them
        lead = target.shape[: len(rows)]
        flat = target.reshape(math.prod(lead), *target.shape[len(rows) :])
        rows = xp.ravel_multi_index(xp.broadcast_arrays(*rows), lead)
        ordered_scatter_add(xp, flat, rows, values)
        return
    ordered_scatter_add(xp, target, rows, values)


def _accumulator_dtype(dtype):
    return "float32" if numpy.dtype(dtype).name == "float16" else dtype


def _index_grad(ctx, indices, needed):
    return ctx.xp.zeros_like(indices) if needed else None


def _gather_rows_backward(ctx, grad, positions, rows, shape, dtype):
    """Gradient of ``take(x, positions, axis)`` for ``x`` viewed as (pre, rows, post)."""
    xp = ctx.xp
    pre, post = shape
    moved = grad.reshape(pre, positions.size, post).transpose(1, 0, 2)
    acc = xp.zeros((rows, pre, post), dtype=_accumulator_dtype(dtype))
    scatter_add(xp, acc, positions.reshape(-1), moved.astype(acc.dtype, copy=False))
    return acc.transpose(1, 0, 2).astype(dtype, copy=False)


def _first_type(p, in_types, out_types, aux_types):
    """The output has the first argument's dtype; index arguments keep their own."""
    dtype = in_types[0] or out_types[0]
    return [dtype, *in_types[1:]], [dtype], aux_types


# -- take ------------------------------------------------------------------------------


@attrs.frozen
class TakeParams:
    axis: int = param("int", 0)
    mode: str = param("str", "clip", choices=("clip", "wrap", "raise"))


def _take_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    a, indices = in_shapes
    if a is not None and indices is not None:
        axis = normalize_axis(p.axis, len(a), a, "a")
        out = (*a[:axis], *indices, *a[axis + 1 :])
        out_shapes = [merge_shape(out, out_shapes[0], "output")]
    return in_shapes, out_shapes, aux_shapes


def _take_forward(ctx, p, inputs, aux):
    a, indices = inputs
    axis = normalize_axis(p.axis, a.ndim, a.shape, "a")
    positions = to_index(ctx.xp, indices, a.shape[axis], p.mode)
    out = ctx.xp.take(a, positions, axis=axis)
    return [out], (a.shape, a.dtype, axis, positions, indices)


def _take_backward(ctx, p, saved, out_grads, need_grad):
    shape, dtype, axis, positions, indices = saved
    grad_a = None
    if need_grad[0]:
        outer = (math.prod(shape[:axis]), math.prod(shape[axis + 1 :]))
        grad_a = _gather_rows_backward(ctx, out_grads[0], positions, shape[axis], outer, dtype)
        grad_a = grad_a.reshape(shape)
    return [grad_a, _index_grad(ctx, indices, need_grad[1])]


TAKE = OpDef(
    name="take",
    params=TakeParams,
    arguments=("a", "indices"),
    infer_shape=_take_infer_shape,
    infer_type=_first_type,
    forward=_take_forward,
    backward=_take_backward,
    doc="Gather slices of a along axis at indices (mode clip, wrap or raise).",
)


# -- pick -------------------------------------------------------------------------------


def _axis_required(instance, attribute, value):
    if value is None:
        raise ValueError("axis=None is not supported by pick (nor by MXNet 1.9); give an axis")


@attrs.frozen
class PickParams:
    axis: int = param("int", -1, optional=True, validator=_axis_required)
    keepdims: bool = param("bool", False)
    mode: str = param("str", "clip", choices=("clip", "wrap"))


def reduce_axis_shape(data, axis, keepdims):
    """MXNet's shape after reducing one axis (all of them when axis is None).

    A 1-d input, or axis None, gives (1,) (or all ones with keepdims): legacy
    arrays are never 0-d.
    """
    if axis is None or len(data) == 1:
        return (1,) * len(data) if keepdims else (1,)
    if keepdims:
        return (*data[:axis], 1, *data[axis + 1 :])
    return (*data[:axis], *data[axis + 1 :])


def _pick_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, index = in_shapes
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    axis = normalize_axis(p.axis, len(data), data)
    out = merge_shape(reduce_axis_shape(data, axis, p.keepdims), out_shapes[0], "output")
    if index is not None:  # the index may come with or without the picked axis
        keep = len(index) == len(data) and len(data) > 1
        index = merge_shape(reduce_axis_shape(data, axis, keep), index, "index")
    return [data, index], [out], aux_shapes


def _pick_positions(ctx, p, data, index):
    axis = normalize_axis(p.axis, data.ndim, data.shape)
    positions = to_index(ctx.xp, index, data.shape[axis], p.mode)
    kept = (*data.shape[:axis], 1, *data.shape[axis + 1 :])
    return axis, positions.reshape(kept)


def _pick_forward(ctx, p, inputs, aux):
    data, index = inputs
    axis, positions = _pick_positions(ctx, p, data, index)
    picked = ctx.xp.take_along_axis(data, positions, axis=axis)
    out = picked.reshape(reduce_axis_shape(data.shape, axis, p.keepdims))
    return [out], (data.shape, axis, positions, index)


def _pick_backward(ctx, p, saved, out_grads, need_grad):
    shape, axis, positions, index = saved
    grad = None
    if need_grad[0]:
        xp = ctx.xp
        along = xp.arange(shape[axis]).reshape((-1,) + (1,) * (len(shape) - axis - 1))
        head = out_grads[0].reshape(positions.shape)
        grad = xp.where(along == positions, head, xp.zeros((), dtype=head.dtype))
    return [grad, _index_grad(ctx, index, need_grad[1])]


PICK = OpDef(
    name="pick",
    aliases=("choose_element_0index",),
    params=PickParams,
    arguments=("data", "index"),
    infer_shape=_pick_infer_shape,
    infer_type=_first_type,
    forward=_pick_forward,
    backward=_pick_backward,
    doc="One element per position along axis: out[i] = data[i, index[i]] (clip or wrap).",
)


# -- one_hot ---------------------------------------------------------------------------


@attrs.frozen
class OneHotParams:
    depth: int = param("int", validator=positive)
    on_value: float = param("float", 1.0)
    off_value: float = param("float", 0.0)
    dtype: str = param("dtype", "float32", choices=INDEX_DTYPES)


def _one_hot_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    indices, out = in_shapes[0], out_shapes[0]
    if indices is not None:
        out = merge_shape((*indices, p.depth), out, "output")
    if out is not None:
        if out[-1] not in (0, p.depth):
            raise mismatch("output", tuple(out), f"last dim {p.depth}", "depth")
        in_shapes = [merge_shape(indices, out[:-1], "indices")]
    return in_shapes, [out], aux_shapes


def _one_hot_infer_type(p, in_types, out_types, aux_types):
    return in_types, [p.dtype], aux_types


def _one_hot_forward(ctx, p, inputs, aux):
    xp, indices = ctx.xp, inputs[0]
    # out-of-range positions (negative or >= depth) match no column: an all-off row
    hit = xp.arange(p.depth) == indices.astype("int64")[..., None]
    # NumPy scalars of the output dtype: a GPU kernel takes them as arguments (an array
    # made from a host value would be a copy that waits for the device)
    on, off = (numpy.asarray(v).astype(p.dtype)[()] for v in (p.on_value, p.off_value))
    return [xp.where(hit, on, off)], indices


def _one_hot_backward(ctx, p, saved, out_grads, need_grad):
    return [_index_grad(ctx, saved, need_grad[0])]


ONE_HOT = OpDef(
    name="one_hot",
    params=OneHotParams,
    arguments=("indices",),
    infer_shape=_one_hot_infer_shape,
    infer_type=_one_hot_infer_type,
    forward=_one_hot_forward,
    backward=_one_hot_backward,
    doc="Append an axis of size depth: on_value at each index, off_value elsewhere.",
)


# -- Embedding ---------------------------------------------------------------------------


@attrs.frozen
class EmbeddingParams:
    input_dim: int = param("int", validator=positive)
    output_dim: int = param("int", validator=positive)
    dtype: str = param(
        "dtype", "float32", choices=("float32", "float64", "float16", "uint8", "int32")
    )
    # row_sparse gradients hold the same values; rebind returns them dense
    sparse_grad: bool = param("bool", False)


def _embedding_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, weight = in_shapes
    weight = merge_shape((p.input_dim, p.output_dim), weight, "weight")
    out = out_shapes[0]
    if data is not None:
        out = merge_shape((*data, p.output_dim), out, "output")
    if out is not None:
        data = merge_shape(data, out[:-1], "data")
    return [data, weight], [out], aux_shapes


def _embedding_infer_type(p, in_types, out_types, aux_types):
    # as MXNet's EmbeddingOpType: the weight's dtype where known, else the output's, else
    # the ``dtype`` parameter (a float64 weight makes float64 rows whatever ``dtype`` says)
    dtype = in_types[1] or out_types[0] or p.dtype
    return [in_types[0] or p.dtype, dtype], [dtype], aux_types


def _embedding_forward(ctx, p, inputs, aux):
    data, weight = inputs
    positions = to_index(ctx.xp, data, p.input_dim, "clip")
    out = ctx.xp.take(weight, positions, axis=0)
    return [out], (positions, data, weight.dtype)


def _embedding_backward(ctx, p, saved, out_grads, need_grad):
    positions, data, dtype = saved
    grad_weight = None
    if need_grad[1]:
        grad_weight = _gather_rows_backward(
            ctx, out_grads[0], positions, p.input_dim, (1, p.output_dim), dtype
        )
        grad_weight = grad_weight.reshape(p.input_dim, p.output_dim)
    return [_index_grad(ctx, data, need_grad[0]), grad_weight]


EMBEDDING = OpDef(
    name="Embedding",
    params=EmbeddingParams,
    arguments=("data", "weight"),
    infer_shape=_embedding_infer_shape,
    infer_type=_embedding_infer_type,
    forward=_embedding_forward,
    backward=_embedding_backward,
    doc="Rows of weight (input_dim, output_dim) at the (clipped) indices in data.",
)

OPS = [TAKE, PICK, ONE_HOT, EMBEDDING]
