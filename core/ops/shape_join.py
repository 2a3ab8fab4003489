"""Joining and splitting along an axis: Concat, stack, SliceChannel (split).

Concat and stack are variadic (``num_args`` inputs named arg0, arg1, ...);
SliceChannel has ``num_outputs`` outputs named output0, output1, ...
"""

import attrs

from .base import OpDef, merge_shape, mismatch
from .consecutive import stack
from .params import param, positive
from .shape import normalize_axis

__all__ = ["OPS"]


def _arg_names(p):
    return tuple(f"arg{i}" for i in range(p.num_args))


def _first_ndim(shapes, extra=0):
    """The rank implied by the first known shape (minus ``extra`` for outputs)."""
    return next((len(s) - extra for s in shapes if s is not None), None)


def _with(shape, axis, size):
    return (*shape[:axis], size, *shape[axis + 1 :])


def _without(shape, axis):
    return (*shape[:axis], *shape[axis + 1 :])


# -- Concat ------------------------------------------------------------------------


@attrs.frozen
class ConcatParams:
    num_args: int = param("int", validator=positive)
    dim: int = param("int", 1)


def _concat_common(names, in_shapes, out, ndim, axis):
    """The shape every input and the output share, with the concat axis unknown."""
    common = (0,) * ndim
    for name, shape in (*zip(names, in_shapes, strict=True), ("output", out)):
        if shape is None:
            continue
        if len(shape) != ndim:
            raise mismatch(name, tuple(shape), f"a {ndim}-d shape", "concat inputs share a rank")
        common = merge_shape(common, _with(shape, axis, 0), name)
    return common


def _concat_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    names, out = _arg_names(p), out_shapes[0]
    ndim = _first_ndim((*in_shapes, out))
    if ndim is None:
        return in_shapes, out_shapes, aux_shapes
    some = next(s for s in (*in_shapes, out) if s is not None)
    axis = normalize_axis(p.dim, ndim, some, "arg0")
    common = _concat_common(names, in_shapes, out, ndim, axis)
    sizes = [s[axis] if s is not None else 0 for s in in_shapes]
    out = merge_shape(_with(common, axis, sum(sizes) if all(sizes) else 0), out, "output")
    missing = [i for i, size in enumerate(sizes) if not size]
    if out[axis] and len(missing) == 1:  # the one unknown input size follows from the output
        rest = out[axis] - sum(sizes)
        if rest <= 0:
            raise mismatch(
                names[missing[0]],
                in_shapes[missing[0]],
                f"size > 0 at axis {axis}",
                f"the output has {out[axis]} there",
            )
        sizes[missing[0]] = rest
    ins = [
        merge_shape(_with(common, axis, size), s, name)
        for name, s, size in zip(names, in_shapes, sizes, strict=True)
    ]
    return ins, [out], aux_shapes


def _concat_forward(ctx, p, inputs, aux):
    axis = normalize_axis(p.dim, inputs[0].ndim, inputs[0].shape, "arg0")
    sizes = [a.shape[axis] for a in inputs]
    return [ctx.xp.concatenate(inputs, axis=axis)], (axis, sizes)


def _concat_backward(ctx, p, saved, out_grads, need_grad):
    axis, sizes = saved
    grads, start = [], 0
    for size, needed in zip(sizes, need_grad, strict=True):
        index = (slice(None),) * axis + (slice(start, start + size),)
        grads.append(out_grads[0][index] if needed else None)
        start += size
    return grads


CONCAT = OpDef(
    name="Concat",
    aliases=("concat",),
    params=ConcatParams,
    arguments=_arg_names,
    variadic="num_args",
    infer_shape=_concat_infer_shape,
    forward=_concat_forward,
    backward=_concat_backward,
    doc="Join num_args arrays along axis dim (default 1).",
)


# -- stack ---------------------------------------------------------------------------


@attrs.frozen
class StackParams:
    num_args: int = param("int", validator=positive)
    axis: int = param("int", 0)


def _stack_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    names, out = _arg_names(p), out_shapes[0]
    ndim = _first_ndim(in_shapes)
    ndim = _first_ndim([out], extra=1) if ndim is None else ndim
    if ndim is None:
        return in_shapes, out_shapes, aux_shapes
    some = next(s for s in (*in_shapes, out) if s is not None)
    axis = normalize_axis(p.axis, ndim, some, "arg0", extra=1)
    common = None
    for name, shape in zip(names, in_shapes, strict=True):
        common = merge_shape(common, shape, name)
    if out is not None:
        if len(out) != ndim + 1 or out[axis] not in (0, p.num_args):
            raise mismatch(
                "output", tuple(out), f"{p.num_args} at axis {axis} of a {ndim + 1}-d shape"
            )
        common = merge_shape(common, _without(out, axis), "output")
    out = (*common[:axis], p.num_args, *common[axis:])
    return [common] * p.num_args, [out], aux_shapes


def _stack_forward(ctx, p, inputs, aux):
    axis = normalize_axis(p.axis, inputs[0].ndim, inputs[0].shape, "arg0", extra=1)
    # one copy where the inputs lie end to end (a fused layer's steps), no concatenation
    return [stack(ctx.xp, inputs, axis=axis)], axis


def _stack_backward(ctx, p, saved, out_grads, need_grad):
    axis, grad = saved, out_grads[0]
    return [
        grad[(slice(None),) * axis + (i,)] if needed else None for i, needed in enumerate(need_grad)
    ]


STACK = OpDef(
    name="stack",
    params=StackParams,
    arguments=_arg_names,
    variadic="num_args",
    infer_shape=_stack_infer_shape,
    forward=_stack_forward,
    backward=_stack_backward,
    doc="Join num_args arrays of one shape along a new axis.",
)


# -- SliceChannel ---------------------------------------------------------------------


@attrs.frozen
class SliceChannelParams:
    num_outputs: int = param("int", validator=positive)
    axis: int = param("int", 1)
    squeeze_axis: bool = param("bool", False)


def _slice_channel_outputs(p):
    return tuple(f"output{i}" for i in range(p.num_outputs))


def _piece_shape(p, data, axis):
    size, count = data[axis], p.num_outputs
    if size and size % count:
        raise mismatch(
            "data",
            tuple(data),
            f"a multiple of {count} at axis {axis}",
            f"cannot split into {count} equal parts",
        )
    if p.squeeze_axis:
        if size and size != count:
            raise mismatch(
                "data",
                tuple(data),
                f"size {count} at axis {axis}",
                "squeeze_axis=True needs one element per output",
            )
        return _without(data, axis)
    return _with(data, axis, size // count)


def _data_from_piece(p, piece, axis):
    if p.squeeze_axis:
        return (*piece[:axis], p.num_outputs, *piece[axis:])
    return _with(piece, axis, piece[axis] * p.num_outputs)


def _slice_channel_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    ndim = len(data) if data is not None else _first_ndim(out_shapes, -int(p.squeeze_axis))
    if ndim is None:
        return in_shapes, out_shapes, aux_shapes
    some = data if data is not None else (0,) * ndim
    axis = normalize_axis(p.axis, ndim, some)
    piece = None
    for name, out in zip(_slice_channel_outputs(p), out_shapes, strict=True):
        piece = merge_shape(piece, out, name)
    if piece is not None:
        data = merge_shape(data, _data_from_piece(p, piece, axis), "data")
    piece = merge_shape(_piece_shape(p, data, axis), piece, "output")
    return [data], [piece] * p.num_outputs, aux_shapes


def _slice_channel_forward(ctx, p, inputs, aux):
    data = inputs[0]
    axis = normalize_axis(p.axis, data.ndim, data.shape)
    piece = _piece_shape(p, data.shape, axis)
    outs = [part.reshape(piece) for part in ctx.xp.split(data, p.num_outputs, axis=axis)]
    return outs, (axis, data.shape)


def _slice_channel_backward(ctx, p, saved, out_grads, need_grad):
    axis, shape = saved
    if not need_grad[0]:
        return [None]
    if p.squeeze_axis:
        return [ctx.xp.stack(out_grads, axis=axis)]
    return [ctx.xp.concatenate(out_grads, axis=axis).reshape(shape)]


SLICE_CHANNEL = OpDef(
    name="SliceChannel",
    aliases=("split",),
    params=SliceChannelParams,
    outputs=_slice_channel_outputs,
    infer_shape=_slice_channel_infer_shape,
    forward=_slice_channel_forward,
    backward=_slice_channel_backward,
    doc="Split into num_outputs equal parts along axis (default 1), optionally dropping it.",
)

OPS = [CONCAT, STACK, SLICE_CHANNEL]
