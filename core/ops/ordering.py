"""Sorting and arg-reductions: topk, sort, argsort, argmax, argmin, argmax_channel.

Indices come out as floats by default (MXNet's legacy convention: argmax and
argmin in the input's dtype, topk and argsort in their ``dtype`` parameter).
Sorting is stable; among equal values the lower index comes first in both
directions (MXNet's CPU sort leaves ties in no defined order).
"""

import attrs

from .base import OpDef, merge_shape, mismatch
from .indexing import reduce_axis_shape
from .params import param
from .shape import normalize_axis

__all__ = ["OPS", "stable_order"]

INDEX_TYPES = ("uint8", "int32", "int64", "float16", "float32", "float64")


def stable_order(xp, x, axis, ascending):
    """Positions that sort ``x`` along ``axis``, ties keeping their original order."""
    if ascending:
        return xp.argsort(x, axis=axis, kind="stable")
    # descending yet stable: sort the reversed array, then reverse and re-number
    flipped = xp.argsort(xp.flip(x, axis=axis), axis=axis, kind="stable")
    return (x.shape[axis] - 1) - xp.flip(flipped, axis=axis)


def _prefix(axis, stop):
    return (slice(None),) * axis + (slice(0, stop),)


def _layout(axis, shape):
    """(axis to sort along, element count there) with axis None meaning flattened."""
    if axis is None:
        size = 1
        for d in shape:
            size *= d
        return None, size
    axis = normalize_axis(axis, len(shape), shape)
    return axis, shape[axis]


def _chosen_k(k, count, shape):
    chosen = count if k <= 0 else k  # k < 1 asks for a full sort
    if count and not 1 <= chosen <= count:
        raise mismatch(
            "data",
            tuple(shape),
            f"at least {chosen} elements along the axis",
            f"k={k} exceeds {count}",
        )
    return chosen


def _sorted_input(xp, data, axis):
    """(array to sort, axis in it): flattened when axis is None."""
    return (data.reshape(-1), 0) if axis is None else (data, axis)


def _scatter_by_rank(ctx, order, head, axis, shape):
    """Gradient of gathering ``order[:k]``: each head value goes back to its source."""
    xp = ctx.xp
    ranks = xp.argsort(order, axis=axis)  # inverse permutation along axis
    padded_shape = list(head.shape)
    padded_shape[axis] = order.shape[axis]
    padded = xp.zeros(padded_shape, dtype=head.dtype)
    padded[_prefix(axis, head.shape[axis])] = head
    return xp.take_along_axis(padded, ranks, axis=axis).reshape(shape)


def _zero_grads(ctx, p, saved, out_grads, need_grad):
    return [ctx.xp.zeros(saved[-1], dtype=saved[-2]) if need_grad[0] else None]


# -- topk ---------------------------------------------------------------------------------


@attrs.frozen
class TopKParams:
    axis: int = param("int", -1, optional=True)
    k: int = param("int", 1)
    ret_typ: str = param("str", "indices", choices=("value", "indices", "mask", "both"))
    is_ascend: bool = param("bool", False)
    dtype: str = param("dtype", "float32", choices=INDEX_TYPES)


def _topk_outputs(p):
    if p.ret_typ in ("indices", "mask"):
        return ("output",)
    # MXNet numbers outputs once the op has two, even when only one is visible
    return ("output0", "output1") if p.ret_typ == "both" else ("output0",)


def _topk_shape(p, shape):
    axis, count = _layout(p.axis, shape)
    k = _chosen_k(p.k, count, shape)
    if p.ret_typ == "mask":
        return tuple(shape)
    if axis is None:
        return (k,)
    return (*shape[:axis], k, *shape[axis + 1 :])


def _topk_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is not None:
        out = _topk_shape(p, data)
        out_shapes = [merge_shape(out, s, "output") for s in out_shapes]
    return in_shapes, out_shapes, aux_shapes


def _topk_infer_type(p, in_types, out_types, aux_types):
    data = in_types[0]
    if p.ret_typ == "indices":
        return in_types, [p.dtype], aux_types
    if p.ret_typ == "both":
        return in_types, [data, p.dtype], aux_types
    return in_types, [data], aux_types


def _topk_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    axis, count = _layout(p.axis, data.shape)
    k = _chosen_k(p.k, count, data.shape)
    x, along = _sorted_input(xp, data, axis)
    order = stable_order(xp, x, along, p.is_ascend)
    top = order[_prefix(along, k)]
    saved = (order, along, data.shape, data.dtype)
    if p.ret_typ == "mask":
        ranks = xp.argsort(order, axis=along)
        return [(ranks < k).astype(data.dtype).reshape(data.shape)], saved
    indices = top.astype(p.dtype)
    if p.ret_typ == "indices":
        return [indices], saved
    values = xp.take_along_axis(x, top, axis=along)
    return ([values, indices] if p.ret_typ == "both" else [values]), saved


def _topk_backward(ctx, p, saved, out_grads, need_grad):
    order, along, shape, dtype = saved
    if not need_grad[0]:
        return [None]
    if p.ret_typ in ("indices", "mask"):  # piecewise constant: zero gradient
        return [ctx.xp.zeros(shape, dtype=dtype)]
    return [_scatter_by_rank(ctx, order, out_grads[0], along, shape)]


TOPK = OpDef(
    name="topk",
    params=TopKParams,
    outputs=_topk_outputs,
    hidden_outputs=lambda p: 1 if p.ret_typ == "value" else 0,
    infer_shape=_topk_infer_shape,
    infer_type=_topk_infer_type,
    forward=_topk_forward,
    backward=_topk_backward,
    doc="The k largest (or smallest) along axis: values, indices, a 0/1 mask, or both.",
)


# -- sort / argsort ---------------------------------------------------------------------


@attrs.frozen
class SortParams:
    axis: int = param("int", -1, optional=True)
    is_ascend: bool = param("bool", True)


def _full_sort_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is not None:
        axis, count = _layout(p.axis, data)
        out = (count,) if axis is None else tuple(data)
        out_shapes = [merge_shape(out, out_shapes[0], "output")]
    return in_shapes, out_shapes, aux_shapes


def _sort_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    axis, _ = _layout(p.axis, data.shape)
    x, along = _sorted_input(xp, data, axis)
    order = stable_order(xp, x, along, p.is_ascend)
    return [xp.take_along_axis(x, order, axis=along)], (order, along, data.shape)


def _sort_backward(ctx, p, saved, out_grads, need_grad):
    order, along, shape = saved
    return [_scatter_by_rank(ctx, order, out_grads[0], along, shape) if need_grad[0] else None]


SORT = OpDef(
    name="sort",
    params=SortParams,
    outputs=("output0",),
    hidden_outputs=1,  # MXNet keeps the indices as a hidden second output
    infer_shape=_full_sort_shape,
    forward=_sort_forward,
    backward=_sort_backward,
    doc="Values sorted along axis (flattened when axis is None).",
)


@attrs.frozen
class ArgSortParams:
    axis: int = param("int", -1, optional=True)
    is_ascend: bool = param("bool", True)
    dtype: str = param("dtype", "float32", choices=INDEX_TYPES)


def _argsort_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    axis, _ = _layout(p.axis, data.shape)
    x, along = _sorted_input(xp, data, axis)
    order = stable_order(xp, x, along, p.is_ascend)
    return [order.astype(p.dtype)], (data.dtype, data.shape)


ARGSORT = OpDef(
    name="argsort",
    params=ArgSortParams,
    infer_shape=_full_sort_shape,
    infer_type=lambda p, ins, outs, auxs: (ins, [p.dtype], auxs),
    forward=_argsort_forward,
    backward=_zero_grads,
    doc="Positions that sort data along axis, as dtype (float32 by default).",
)


# -- argmax / argmin / argmax_channel ------------------------------------------------------


@attrs.frozen
class ReduceAxisParams:
    axis: int = param("int", None, optional=True)
    keepdims: bool = param("bool", False)


def _reduce_axis(p, shape):
    # a 1-d input reduces to (1,) whatever the axis, as in MXNet
    if p.axis is None or len(shape) == 1:
        return None
    return normalize_axis(p.axis, len(shape), shape)


def _arg_reduce_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is not None:
        axis = _reduce_axis(p, data)
        out = reduce_axis_shape(data, axis, p.keepdims)
        out_shapes = [merge_shape(out, out_shapes[0], "output")]
    return in_shapes, out_shapes, aux_shapes


def _arg_reduce_forward(pick_first):
    def forward(ctx, p, inputs, aux):
        data = inputs[0]
        axis = _reduce_axis(p, data.shape)
        found = getattr(ctx.xp, pick_first)(data, axis=axis)
        out = found.reshape(reduce_axis_shape(data.shape, axis, p.keepdims))
        return [out.astype(data.dtype)], (data.dtype, data.shape)

    return forward


ARGMAX = OpDef(
    name="argmax",
    params=ReduceAxisParams,
    infer_shape=_arg_reduce_shape,
    forward=_arg_reduce_forward("argmax"),
    backward=_zero_grads,
    doc="Position of the first maximum along axis (all axes when None), in data's dtype.",
)

ARGMIN = OpDef(
    name="argmin",
    params=ReduceAxisParams,
    infer_shape=_arg_reduce_shape,
    forward=_arg_reduce_forward("argmin"),
    backward=_zero_grads,
    doc="Position of the first minimum along axis (all axes when None), in data's dtype.",
)

_CHANNEL = ReduceAxisParams(axis=1, keepdims=False)


def _channel_shape(p, in_shapes, out_shapes, aux_shapes):
    return _arg_reduce_shape(_CHANNEL, in_shapes, out_shapes, aux_shapes)


def _channel_forward(ctx, p, inputs, aux):
    return _arg_reduce_forward("argmax")(ctx, _CHANNEL, inputs, aux)


ARGMAX_CHANNEL = OpDef(
    name="argmax_channel",
    infer_shape=_channel_shape,
    forward=_channel_forward,
    backward=_zero_grads,
    doc="argmax along axis 1 (MXNet's legacy per-sample class picker).",
)

OPS = [TOPK, SORT, ARGSORT, ARGMAX, ARGMIN, ARGMAX_CHANNEL]
