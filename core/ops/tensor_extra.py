"""Shape-borrowing and small tensor operators: slice_like, reshape_like, broadcast_like,
diag, cumsum (khatri_rao, moments and the shape arrays are in tensor_stats.py).

The ``*_like`` operators take their target shape from a second input whose
values are never read; that input's gradient is zeros, as in MXNet.
"""

import math

import attrs

from .base import OpDef, forward_only_shape, merge_shape, mismatch
from .params import param
from .reduce import accumulation_dtype

__all__ = ["OPS", "zero_grads", "normal_axis"]


def zero_grads(ctx, saved_inputs, need_grad):
    """Zeros shaped like each saved input where a gradient is asked, else None."""
    return [
        ctx.xp.zeros_like(a) if needed else None
        for a, needed in zip(saved_inputs, need_grad, strict=True)
    ]


def _first_type(p, in_types, out_types, aux_types):
    """The output has the first input's dtype; other inputs keep theirs."""
    dtype = in_types[0] or out_types[0]
    return [dtype, *in_types[1:]], [dtype] * len(out_types), aux_types


def normal_axis(axis, ndim, name, shape):
    normal = axis + ndim if axis < 0 else axis
    if not 0 <= normal < ndim:
        raise mismatch(
            name,
            tuple(shape),
            f"at least {axis + 1 if axis >= 0 else -axis} axes",
            f"axis {axis} is out of range",
        )
    return normal


# -- slice_like -----------------------------------------------------------------------


@attrs.frozen
class SliceLikeParams:
    axes: tuple = param("shape", ())


def _slice_like_shape(p, data, like):
    if not p.axes:
        if len(data) != len(like):
            raise mismatch(
                "shape_like", like, f"a {len(data)}-d shape", "axes=() slices every axis"
            )
        axes = range(len(data))
    else:
        axes = [normal_axis(a, len(data), "data", data) for a in p.axes]
        for axis in axes:
            if axis >= len(like):
                raise mismatch(
                    "shape_like", like, f"more than {axis} axes", f"axis {axis} is sliced"
                )
    out = list(data)
    for axis in axes:
        if like[axis] > data[axis]:
            raise mismatch(
                "shape_like", like, f"size <= {data[axis]} at axis {axis}", "it slices data"
            )
        out[axis] = like[axis]
    return tuple(out)


def _inferred_from(shape_of):
    """The infer_shape of a one-output op whose shape is ``shape_of(p, *input shapes)``."""
    return forward_only_shape(lambda p, shapes: [shape_of(p, *shapes)], partial=True)


_slice_like_infer = _inferred_from(_slice_like_shape)


def _slice_like_forward(ctx, p, inputs, aux):
    data, like = inputs
    out = _slice_like_shape(p, data.shape, like.shape)
    return [data[tuple(slice(0, n) for n in out)]], (data, like, out)


def _slice_like_backward(ctx, p, saved, out_grads, need_grad):
    data, like, out = saved
    grad = None
    if need_grad[0]:
        grad = ctx.xp.zeros_like(data)
        grad[tuple(slice(0, n) for n in out)] = out_grads[0]
    return [grad, ctx.xp.zeros_like(like) if need_grad[1] else None]


# -- reshape_like ---------------------------------------------------------------------


@attrs.frozen
class ReshapeLikeParams:
    lhs_begin: int = param("int", None, optional=True)
    lhs_end: int = param("int", None, optional=True)
    rhs_begin: int = param("int", None, optional=True)
    rhs_end: int = param("int", None, optional=True)


def _span(side, shape, begin, end):
    ndim = len(shape)
    first = 0 if begin is None else begin + ndim if begin < 0 else begin
    last = ndim if end is None else end + ndim if end < 0 else end
    if not 0 <= first < last <= ndim:
        raise mismatch(
            side,
            tuple(shape),
            f"axes [{begin}, {end}) to exist",
            f"invalid {side}_begin/{side}_end",
        )
    return first, last


def _reshape_like_shape(p, lhs, rhs):
    lb, le = _span("lhs", lhs, p.lhs_begin, p.lhs_end)
    rb, re = _span("rhs", rhs, p.rhs_begin, p.rhs_end)
    out = (*lhs[:lb], *rhs[rb:re], *lhs[le:])
    if all(lhs) and all(out) and math.prod(out) != math.prod(lhs):
        raise mismatch(
            "rhs",
            tuple(rhs),
            f"dimensions holding {math.prod(lhs)} elements",
            f"lhs {tuple(lhs)} cannot become {out}",
        )
    return out


_reshape_like_infer = _inferred_from(_reshape_like_shape)


def _reshape_like_forward(ctx, p, inputs, aux):
    lhs, rhs = inputs
    return [lhs.reshape(_reshape_like_shape(p, lhs.shape, rhs.shape))], (lhs, rhs)


def _reshape_like_backward(ctx, p, saved, out_grads, need_grad):
    lhs, rhs = saved
    grad = out_grads[0].reshape(lhs.shape) if need_grad[0] else None
    return [grad, ctx.xp.zeros_like(rhs) if need_grad[1] else None]


# -- broadcast_like -------------------------------------------------------------------


@attrs.frozen
class BroadcastLikeParams:
    lhs_axes: tuple = param("shape", None, optional=True)
    rhs_axes: tuple = param("shape", None, optional=True)


def _broadcast_like_shape(p, lhs, rhs):
    if p.lhs_axes is None or p.rhs_axes is None:
        if len(lhs) != len(rhs):
            raise mismatch(
                "rhs",
                tuple(rhs),
                f"a {len(lhs)}-d shape",
                f"lhs {tuple(lhs)} cannot broadcast to it",
            )
        for size, target in zip(lhs, rhs, strict=True):
            if target and size not in (1, target):
                raise mismatch(
                    "lhs", tuple(lhs), f"1 or {target} at each axis of {tuple(rhs)}", "broadcast"
                )
        return tuple(t or s for s, t in zip(lhs, rhs, strict=True))
    if len(p.lhs_axes) != len(p.rhs_axes) or not p.lhs_axes:
        raise mismatch(
            "lhs", tuple(lhs), "lhs_axes and rhs_axes of one non-zero length", "bad axes"
        )
    out = list(lhs)
    for la, ra in zip(p.lhs_axes, p.rhs_axes, strict=True):
        la, ra = normal_axis(la, len(lhs), "lhs", lhs), normal_axis(ra, len(rhs), "rhs", rhs)
        if lhs[la] not in (1, rhs[ra]):
            raise mismatch("lhs", tuple(lhs), f"1 at axis {la}", f"it broadcasts to {rhs[ra]}")
        out[la] = rhs[ra]
    return tuple(out)


_broadcast_like_infer = _inferred_from(_broadcast_like_shape)


def _broadcast_like_forward(ctx, p, inputs, aux):
    lhs, rhs = inputs
    out = ctx.xp.broadcast_to(lhs, _broadcast_like_shape(p, lhs.shape, rhs.shape))
    return [ctx.xp.ascontiguousarray(out)], (lhs, rhs)


def _broadcast_like_backward(ctx, p, saved, out_grads, need_grad):
    lhs, rhs = saved
    grad = None
    if need_grad[0]:
        head = out_grads[0]
        axes = tuple(
            i for i, (a, b) in enumerate(zip(lhs.shape, head.shape, strict=True)) if a != b
        )
        total = head.sum(axis=axes, keepdims=True, dtype=accumulation_dtype(ctx.xp, head.dtype))
        grad = total.astype(lhs.dtype, copy=False)
    return [grad, ctx.xp.zeros_like(rhs) if need_grad[1] else None]


# -- diag -----------------------------------------------------------------------------


@attrs.frozen
class DiagParams:
    k: int = param("int", 0)
    axis1: int = param("int", 0)
    axis2: int = param("int", 1)


def _diag_shape(p, data):
    if len(data) == 0:
        raise mismatch("data", tuple(data), "at least 1 dimension", "diag of a scalar")
    if len(data) == 1:
        return (data[0] + abs(p.k),) * 2
    a1, a2 = (
        normal_axis(p.axis1, len(data), "data", data),
        normal_axis(p.axis2, len(data), "data", data),
    )
    if a1 == a2:
        raise mismatch("data", tuple(data), "two distinct axes", f"axis1 and axis2 are both {a1}")
    n1, n2 = (data[a1], data[a2] - p.k) if p.k >= 0 else (data[a1] + p.k, data[a2])
    rest = tuple(d for i, d in enumerate(data) if i not in (a1, a2))
    if min(n1, n2) < 0 and data[a1] and data[a2]:
        raise mismatch(
            "data", tuple(data), f"a diagonal at offset k={p.k}", "the diagonal does not exist"
        )
    return (*rest, max(0, min(n1, n2)))


_diag_infer = _inferred_from(_diag_shape)


def _diag_forward(ctx, p, inputs, aux):
    data, xp = inputs[0], ctx.xp
    if data.ndim == 1:
        return [xp.diag(data, p.k)], data.shape
    out = xp.diagonal(data, p.k, p.axis1, p.axis2)
    return [xp.ascontiguousarray(out)], data.shape


def _diag_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    xp, shape, head = ctx.xp, saved, out_grads[0]
    if len(shape) == 1:
        return [xp.ascontiguousarray(xp.diagonal(head, p.k))]
    grad = xp.zeros(shape, dtype=head.dtype)
    view = xp.diagonal(grad, p.k, p.axis1, p.axis2)  # read-only in NumPy: write through indices
    a1, a2 = p.axis1 % len(shape), p.axis2 % len(shape)
    n = view.shape[-1]
    rows = xp.arange(n) + max(0, -p.k)
    cols = xp.arange(n) + max(0, p.k)
    moved = xp.moveaxis(grad, (a1, a2), (-2, -1))
    moved[..., rows, cols] = head
    return [grad]


# -- cumsum ---------------------------------------------------------------------------

CUMSUM_DTYPES = ("float16", "float32", "float64", "int32", "int64", "int8")


@attrs.frozen
class CumsumParams:
    axis: int = param("int", None, optional=True)
    dtype: str = param("dtype", None, optional=True, choices=CUMSUM_DTYPES)


def _cumsum_infer(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is not None:
        if p.axis is None:
            out = (math.prod(data),) if all(data) else (0,)
        else:
            normal_axis(p.axis, len(data), "a", data)
            out = tuple(data)
        out_shapes = [merge_shape(out, out_shapes[0])]
    return in_shapes, out_shapes, aux_shapes


def _cumsum_type(p, in_types, out_types, aux_types):
    return in_types, [p.dtype or in_types[0] or out_types[0]], aux_types


def _cumsum_forward(ctx, p, inputs, aux):
    a = inputs[0]
    flat = a.reshape(-1) if p.axis is None else a
    axis = 0 if p.axis is None else p.axis
    out = ctx.xp.cumsum(flat, axis=axis, dtype=p.dtype or a.dtype)
    return [out], (a.shape, a.dtype, axis)


def _cumsum_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    shape, dtype, axis = saved
    xp, head = ctx.xp, out_grads[0]
    reverse = xp.flip(xp.cumsum(xp.flip(head, axis), axis=axis), axis)
    return [reverse.astype(dtype, copy=False).reshape(shape)]


OPS = [
    OpDef(
        name="slice_like",
        params=SliceLikeParams,
        arguments=("data", "shape_like"),
        infer_shape=_slice_like_infer,
        infer_type=_first_type,
        forward=_slice_like_forward,
        backward=_slice_like_backward,
        doc="Slice data to the shape of shape_like (on axes, or every axis).",
    ),
    OpDef(
        name="reshape_like",
        params=ReshapeLikeParams,
        arguments=("lhs", "rhs"),
        infer_shape=_reshape_like_infer,
        infer_type=_first_type,
        forward=_reshape_like_forward,
        backward=_reshape_like_backward,
        doc="Reshape lhs, replacing its axes [lhs_begin, lhs_end) by rhs's [rhs_begin, rhs_end).",
    ),
    OpDef(
        name="broadcast_like",
        params=BroadcastLikeParams,
        arguments=("lhs", "rhs"),
        infer_shape=_broadcast_like_infer,
        infer_type=_first_type,
        forward=_broadcast_like_forward,
        backward=_broadcast_like_backward,
        doc="Broadcast lhs to rhs's shape (or only lhs_axes to rhs's rhs_axes).",
    ),
    OpDef(
        name="diag",
        params=DiagParams,
        infer_shape=_diag_infer,
        forward=_diag_forward,
        backward=_diag_backward,
        doc="A diagonal of data (k, axis1, axis2), or the matrix with a 1-d data on diagonal k.",
    ),
    OpDef(
        name="_np_cumsum",
        aliases=("cumsum",),
        params=CumsumParams,
        arguments=("a",),
        infer_shape=_cumsum_infer,
        infer_type=_cumsum_type,
        forward=_cumsum_forward,
        backward=_cumsum_backward,
        doc="Cumulative sum along axis (of the flattened array when axis is None).",
    ),
]
