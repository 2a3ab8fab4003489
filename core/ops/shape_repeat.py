"""Operators that replicate data: tile, repeat, broadcast_to, broadcast_axis.

Each backward sums the head gradient over the copies, by reshaping it so that
the copies form their own axes and reducing those (float16 sums in float32).
"""

import math

import attrs

from .base import OpDef, known, merge_shape, mismatch
from .params import param, positive
from .shape import normalize_axis

__all__ = ["OPS", "sum_axes"]


def sum_axes(grad, axes):
    """``grad`` summed over ``axes`` in at least float32, in its own dtype."""
    if not axes:
        return grad
    wide = "float32" if grad.dtype.name == "float16" else None
    return grad.sum(axis=tuple(axes), dtype=wide).astype(grad.dtype, copy=False)


def _all_positive(instance, attribute, value):
    if value is not None and any(v <= 0 for v in value):
        raise ValueError(f"{attribute.name} entries must be positive, got {value}")


# -- tile ------------------------------------------------------------------------------


@attrs.frozen
class TileParams:
    reps: tuple = param("shape", validator=_all_positive)


def _tile_layout(reps, shape):
    """(reps, shape) left-padded with 1s to one common rank, as numpy.tile does."""
    rank = max(len(reps), len(shape))
    return (1,) * (rank - len(reps)) + tuple(reps), (1,) * (rank - len(shape)) + tuple(shape)


def _tile_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is not None:
        reps, padded = _tile_layout(p.reps, data)
        out = tuple(r * d for r, d in zip(reps, padded, strict=True))
        out_shapes = [merge_shape(out, out_shapes[0], "output")]
    return in_shapes, out_shapes, aux_shapes


def _tile_forward(ctx, p, inputs, aux):
    data = inputs[0]
    return [ctx.xp.tile(data, p.reps)], data.shape


def _tile_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    reps, padded = _tile_layout(p.reps, saved)
    interleaved = [n for pair in zip(reps, padded, strict=True) for n in pair]
    grad = out_grads[0].reshape(interleaved)
    return [sum_axes(grad, range(0, len(interleaved), 2)).reshape(saved)]


TILE = OpDef(
    name="tile",
    params=TileParams,
    infer_shape=_tile_infer_shape,
    forward=_tile_forward,
    backward=_tile_backward,
    doc="Repeat the whole array reps[i] times along each axis (numpy.tile).",
)


# -- repeat ----------------------------------------------------------------------------


@attrs.frozen
class RepeatParams:
    repeats: int = param("int", validator=positive)
    axis: int = param("int", None, optional=True)


def _repeat_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    if p.axis is None:
        out = (p.repeats * math.prod(data) if known(data) else 0,)
    else:
        axis = normalize_axis(p.axis, len(data), data)
        out = (*data[:axis], data[axis] * p.repeats, *data[axis + 1 :])
    return in_shapes, [merge_shape(out, out_shapes[0], "output")], aux_shapes


def _repeat_forward(ctx, p, inputs, aux):
    data = inputs[0]
    axis = None if p.axis is None else normalize_axis(p.axis, data.ndim, data.shape)
    return [ctx.xp.repeat(data, p.repeats, axis=axis)], (axis, data.shape)


def _repeat_backward(ctx, p, saved, out_grads, need_grad):
    axis, shape = saved
    if not need_grad[0]:
        return [None]
    grad = out_grads[0]
    if axis is None:
        return [sum_axes(grad.reshape(-1, p.repeats), [1]).reshape(shape)]
    split = (*shape[:axis], shape[axis], p.repeats, *shape[axis + 1 :])
    return [sum_axes(grad.reshape(split), [axis + 1])]


REPEAT = OpDef(
    name="repeat",
    params=RepeatParams,
    infer_shape=_repeat_infer_shape,
    forward=_repeat_forward,
    backward=_repeat_backward,
    doc="Repeat each element repeats times along axis (flattened when axis is None).",
)


# -- broadcast_to / broadcast_axis ----------------------------------------------------


def _broadcast_dims(data, target):
    """The output of broadcasting ``data`` to ``target`` (0 in target: keep the dim)."""
    out = []
    for axis, (have, want) in enumerate(zip(data, target, strict=True)):
        if want and have not in (0, 1, want):
            raise mismatch(
                "data",
                tuple(data),
                f"1 or {want} at axis {axis}",
                f"cannot broadcast to {tuple(target)}",
            )
        out.append(want or have)
    return tuple(out)


def _broadcast_forward(target_of):
    def forward(ctx, p, inputs, aux):
        data = inputs[0]
        out = _broadcast_dims(data.shape, target_of(p, data.shape))
        # materialised, as MXNet does: a broadcast view would be read-only
        return [ctx.xp.broadcast_to(data, out).copy()], data.shape

    return forward


def _broadcast_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    grad = out_grads[0]
    axes = [i for i, (d, g) in enumerate(zip(saved, grad.shape, strict=True)) if d != g]
    return [sum_axes(grad, axes).reshape(saved)]


def _broadcast_infer(target_of):
    def infer(p, in_shapes, out_shapes, aux_shapes):
        data = in_shapes[0]
        if data is not None:
            out = _broadcast_dims(data, target_of(p, data))
            out_shapes = [merge_shape(out, out_shapes[0], "output")]
        return in_shapes, out_shapes, aux_shapes

    return infer


@attrs.frozen
class BroadcastToParams:
    shape: tuple = param("shape", ())


def _to_target(p, data):
    if len(p.shape) != len(data):
        raise mismatch(
            "data", tuple(data), f"a {len(p.shape)}-d shape", f"cannot broadcast to {p.shape}"
        )
    return p.shape


BROADCAST_TO = OpDef(
    name="broadcast_to",
    params=BroadcastToParams,
    infer_shape=_broadcast_infer(_to_target),
    forward=_broadcast_forward(_to_target),
    backward=_broadcast_backward,
    doc="Broadcast size-1 axes to shape (0 entries keep the input's size).",
)


@attrs.frozen
class BroadcastAxisParams:
    axis: tuple = param("shape", ())
    size: tuple = param("shape", (), validator=_all_positive)

    def __attrs_post_init__(self):
        if len(self.axis) != len(self.size):
            raise ValueError(f"axis {self.axis} and size {self.size} differ in length")


def _axis_target(p, data):
    target = [0] * len(data)
    for axis, size in zip(p.axis, p.size, strict=True):
        axis = normalize_axis(axis, len(data), data)
        if data[axis] not in (0, 1):
            raise mismatch(
                "data", tuple(data), f"size 1 at axis {axis}", "broadcast_axis needs size-1 axes"
            )
        target[axis] = size
    return tuple(target)


BROADCAST_AXIS = OpDef(
    name="broadcast_axis",
    aliases=("broadcast_axes",),
    params=BroadcastAxisParams,
    infer_shape=_broadcast_infer(_axis_target),
    forward=_broadcast_forward(_axis_target),
    backward=_broadcast_backward,
    doc="Broadcast the size-1 axes in axis to the sizes in size.",
)

OPS = [TILE, REPEAT, BROADCAST_TO, BROADCAST_AXIS]
