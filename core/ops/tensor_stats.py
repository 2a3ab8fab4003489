"""khatri_rao, moments, shape_array and size_array: products and statistics of arrays."""

import math

import attrs

from .base import OpDef, merge_shape, mismatch
from .params import param
from .reduce import accumulation_dtype
from .tensor_extra import normal_axis, zero_grads

__all__ = ["OPS"]


# -- khatri_rao -----------------------------------------------------------------------


@attrs.frozen
class KhatriRaoParams:
    num_args: int = param("int")


def _khatri_rao_infer(p, in_shapes, out_shapes, aux_shapes):
    names = [f"arg{i}" for i in range(p.num_args)]
    if any(s is None for s in in_shapes):
        return in_shapes, out_shapes, aux_shapes
    columns = in_shapes[0][-1] if len(in_shapes[0]) == 2 else None
    for name, shape in zip(names, in_shapes, strict=True):
        if len(shape) != 2 or shape[1] != columns:
            raise mismatch(
                name,
                tuple(shape),
                f"(rows, {columns})",
                "khatri_rao takes matrices with equal column counts",
            )
    rows = math.prod(s[0] for s in in_shapes)
    return in_shapes, [merge_shape((rows, columns), out_shapes[0])], aux_shapes


def _khatri_rao_forward(ctx, p, inputs, aux):
    out = inputs[0]
    for matrix in inputs[1:]:
        out = (out[:, None, :] * matrix[None, :, :]).reshape(-1, matrix.shape[1])
    return [ctx.xp.ascontiguousarray(out)], None


# -- moments ---------------------------------------------------------------------------


@attrs.frozen
class MomentsParams:
    axes: tuple = param("shape", None, optional=True)
    keepdims: bool = param("bool", False)


def _moment_axes(p, shape):
    if not p.axes:
        raise mismatch(
            "data",
            tuple(shape),
            "a reduction over the given axes",
            "moments needs axes (pass every axis for global moments)",
        )
    return tuple(sorted(normal_axis(a, len(shape), "data", shape) for a in p.axes))


def _moments_infer(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is not None:
        axes = _moment_axes(p, data)
        if p.keepdims:
            out = tuple(1 if i in axes else d for i, d in enumerate(data))
        else:
            out = tuple(d for i, d in enumerate(data) if i not in axes) or (1,)
        out_shapes = [merge_shape(out, s) for s in out_shapes]
    return in_shapes, out_shapes, aux_shapes


def _moments_forward(ctx, p, inputs, aux):
    data, xp = inputs[0], ctx.xp
    axes = _moment_axes(p, data.shape)
    work = data.astype(accumulation_dtype(xp, data.dtype), copy=False)
    mean = work.mean(axis=axes, keepdims=True)
    var = ((work - mean) ** 2).mean(axis=axes, keepdims=True)
    shape = _moments_infer(p, [data.shape], [None, None], [])[1][0]
    outs = [m.reshape(shape).astype(data.dtype, copy=False) for m in (mean, var)]
    return outs, (work, mean, axes, data.dtype)


def _moments_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    work, mean, axes, dtype = saved
    count = math.prod(work.shape[a] for a in axes)
    g_mean, g_var = (g.reshape(mean.shape).astype(work.dtype, copy=False) for g in out_grads)
    grad = (g_mean + 2 * g_var * (work - mean)) / count
    return [grad.astype(dtype, copy=False)]


# -- shape_array, size_array ------------------------------------------------------------


def _shape_array_infer(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    return (
        in_shapes,
        [merge_shape(None if data is None else (len(data),), out_shapes[0])],
        aux_shapes,
    )


def _int64_out(p, in_types, out_types, aux_types):
    return in_types, ["int64"], aux_types


def _shape_array_forward(ctx, p, inputs, aux):
    return [ctx.xp.asarray(inputs[0].shape, dtype="int64")], inputs[0]


def _size_array_forward(ctx, p, inputs, aux):
    return [ctx.xp.asarray([inputs[0].size], dtype="int64")], inputs[0]


def _zero_backward(ctx, p, saved, out_grads, need_grad):
    return zero_grads(ctx, [saved], need_grad)


OPS = [
    OpDef(
        name="khatri_rao",
        params=KhatriRaoParams,
        arguments=lambda p: tuple(f"arg{i}" for i in range(p.num_args)),
        variadic="num_args",
        infer_shape=_khatri_rao_infer,
        forward=_khatri_rao_forward,
        doc="Column-wise Kronecker product of matrices with equal column counts.",
    ),
    OpDef(
        name="moments",
        params=MomentsParams,
        outputs=("output0", "output1"),
        infer_shape=_moments_infer,
        forward=_moments_forward,
        backward=_moments_backward,
        doc="Mean and (biased) variance of data over axes.",
    ),
    OpDef(
        name="shape_array",
        infer_shape=_shape_array_infer,
        infer_type=_int64_out,
        forward=_shape_array_forward,
        backward=_zero_backward,
        doc="The shape of data as a 1-d int64 array.",
    ),
    OpDef(
        name="size_array",
        infer_shape=lambda p, i, o, a: (i, [merge_shape((1,), o[0])], a),
        infer_type=_int64_out,
        forward=_size_array_forward,
        backward=_zero_backward,
        doc="The number of elements of data as a (1,) int64 array.",
    ),
]
