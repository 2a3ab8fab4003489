"""Tensor helpers of mx.contrib: arange_like, div_sqrt_dim, index_copy, index_array,
boolean_mask, allclose, gradientmultiplier, round_ste and sign_ste (the attention
matmuls: contrib_attention.py).

boolean_mask's output length depends on the mask's values, so, as in MXNet, it
runs imperatively (``mx.nd.contrib.boolean_mask``) but a bound graph cannot
infer its shape.
"""

import math

import attrs
import numpy as np

from .base import OpDef, forward_only_shape, merge_shape, mismatch
from .params import param, positive

__all__ = ["OPS"]


# -- small elementwise helpers ----------------------------------------------------------


def _div_sqrt_dim_forward(ctx, p, inputs, aux):
    data = inputs[0]
    scale = data.dtype.type(1 / math.sqrt(data.shape[-1])) if data.ndim else data.dtype.type(1)
    return [data * scale], scale


def _div_sqrt_dim_backward(ctx, p, scale, out_grads, need_grad):
    return [out_grads[0] * scale if need_grad[0] else None]


@attrs.frozen(kw_only=True)
class GradientMultiplierParams:
    scalar: float = param("float", 1.0)
    is_int: bool = param("bool", True)


def _identity_forward(ctx, p, inputs, aux):
    return [inputs[0].copy()], None


def _multiplier_backward(ctx, p, saved, out_grads, need_grad):
    head = out_grads[0]
    return [head * head.dtype.type(p.scalar) if need_grad[0] else None]


def _round_ste_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    if data.dtype.kind != "f":
        return [data.copy()], None
    half = data.dtype.type(0.5)  # MXNet rounds half away from zero
    return [xp.sign(data) * xp.floor(xp.abs(data) + half)], None


def _sign_ste_forward(ctx, p, inputs, aux):
    return [ctx.xp.sign(inputs[0])], None


def _straight_through(ctx, p, saved, out_grads, need_grad):
    """The straight-through estimator: the gradient passes unchanged."""
    return [out_grads[0].copy() if need_grad[0] else None]


# -- arange_like / index_array ------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ArangeLikeParams:
    start: float = param("float", 0.0)
    step: float = param("float", 1.0)
    repeat: int = param("int", 1, validator=positive)
    ctx: str = param("str", "")
    axis: int = param("int", None, optional=True)


def _arange_like_shape(p, in_shapes):
    data = in_shapes[0]
    if p.axis is None:
        return [data]
    if not -len(data) <= p.axis < len(data):
        raise mismatch("data", data, f"at least {abs(p.axis) + (p.axis >= 0)} axes", "axis")
    return [(data[p.axis],)]


def _arange_like_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    (shape,) = _arange_like_shape(p, [data.shape])
    dtype = data.dtype.type
    steps = xp.arange(math.prod(shape)) // p.repeat
    out = dtype(p.start) + steps.astype(data.dtype) * dtype(p.step)
    return [out.astype(data.dtype).reshape(shape)], data


def _zero_grads(ctx, p, saved, out_grads, need_grad):
    """MXNet passes zeros to every input (the output does not depend on input values)."""
    inputs = saved if isinstance(saved, tuple) else (saved,)
    pairs = zip(inputs, need_grad, strict=True)
    return [ctx.xp.zeros_like(x) if need else None for x, need in pairs]


@attrs.frozen(kw_only=True)
class IndexArrayParams:
    axes: tuple = param("shape", None, optional=True)


def _index_array_axes(p, ndim):
    axes = range(ndim) if p.axes is None else p.axes
    for axis in axes:
        if not -ndim <= axis < ndim:
            raise mismatch("data", (ndim,), f"an array with axis {axis}", "axes out of range")
    return [axis % ndim for axis in axes]


def _index_array_shape(p, in_shapes):
    data = in_shapes[0]
    return [(*data, len(_index_array_axes(p, len(data))))]


def _index_array_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    axes = _index_array_axes(p, data.ndim)
    grids = xp.indices(data.shape, dtype=np.int64) if data.ndim else xp.zeros((0,), np.int64)
    out = xp.stack([grids[a] for a in axes], axis=-1) if axes else grids[..., None][..., :0]
    return [out.reshape(*data.shape, len(axes))], data


def _int64_out(p, in_types, out_types, aux_types):
    return in_types, ["int64"], aux_types


# -- index_copy ------------------------------------------------------------------------


def _index_copy_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    old, index, new = in_shapes
    old = merge_shape(old, out_shapes[0], "old_tensor")
    if index is not None and len(index) != 1:
        raise mismatch("index_vector", index, "(n,)", "the index vector must be 1-D")
    if old is not None and new is not None:
        if len(old) != len(new) or tuple(old[1:]) != tuple(new[1:]) or new[0] > old[0]:
            raise mismatch("new_tensor", new, f"(n <= {old[0]}, *{tuple(old[1:])})", "rows")
    if index is not None and new is not None and index[0] != new[0]:
        raise mismatch("index_vector", index, f"({new[0]},)", "one index per new row")
    return [old, index, new], [old], aux_shapes


def _index_copy_infer_type(p, in_types, out_types, aux_types):
    dtype = next((t for t in (in_types[0], in_types[2], out_types[0]) if t is not None), None)
    return [dtype, in_types[1], dtype], [dtype], aux_types  # the index keeps its own dtype


def _index_copy_forward(ctx, p, inputs, aux):
    old, index, new = inputs
    rows = index.astype(np.int64)
    out = old.copy()
    out[rows] = new
    return [out], (rows, index)


def _index_copy_backward(ctx, p, saved, out_grads, need_grad):
    rows, index = saved
    head = out_grads[0]
    grad_old = None
    if need_grad[0]:
        grad_old = head.copy()
        grad_old[rows] = 0
    grad_index = ctx.xp.zeros_like(index) if need_grad[1] else None
    return [grad_old, grad_index, head[rows] if need_grad[2] else None]


# -- boolean_mask / allclose ----------------------------------------------------------------


@attrs.frozen(kw_only=True)
class BooleanMaskParams:
    axis: int = param("int", 0)


def _boolean_mask_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, index = in_shapes
    if p.axis != 0:
        raise mismatch("data", data, "masking along axis 0", "MXNet supports axis=0 only")
    if index is not None and len(index) != 1:
        raise mismatch("index", index, "a 1-D mask", "one flag per row of data")
    if data is not None and index is not None and data[0] and index[0] and data[0] != index[0]:
        raise mismatch("index", index, f"({data[0]},)", "one flag per row of data")
    out = None if data is None else (0, *data[1:])  # the kept rows are known only at run time
    return in_shapes, [merge_shape(out, out_shapes[0], "output")], aux_shapes


def _first_type(p, in_types, out_types, aux_types):
    """Output 0 and input 0 share a dtype; the other inputs keep theirs (indices, masks)."""
    dtype = in_types[0] if in_types[0] is not None else out_types[0]
    return [dtype, *in_types[1:]], [dtype], aux_types


def _boolean_mask_forward(ctx, p, inputs, aux):
    xp, (data, index) = ctx.xp, inputs
    (rows,) = xp.nonzero(index != 0)
    return [data[rows]], (rows, data.shape, index)


def _boolean_mask_backward(ctx, p, saved, out_grads, need_grad):
    rows, shape, index = saved
    grad = None
    if need_grad[0]:
        grad = ctx.xp.zeros(shape, dtype=out_grads[0].dtype)
        grad[rows] = out_grads[0]
    return [grad, ctx.xp.zeros_like(index) if need_grad[1] else None]


@attrs.frozen(kw_only=True)
class AllCloseParams:
    rtol: float = param("float", 1e-05)
    atol: float = param("float", 1e-08)
    equal_nan: bool = param("bool", True)


def _allclose_shape(p, in_shapes):
    if tuple(in_shapes[0]) != tuple(in_shapes[1]):
        raise mismatch("b", in_shapes[1], in_shapes[0], "allclose compares equal shapes")
    return [()]


def _allclose_forward(ctx, p, inputs, aux):
    xp, (a, b) = ctx.xp, inputs
    if a.dtype.kind == "f" and a.dtype != np.float64:
        a, b = a.astype(np.float32), b.astype(np.float32)  # MXNet's float parameters
    tolerance = a.dtype.type(np.float32(p.atol)) + xp.abs(b) * a.dtype.type(np.float32(p.rtol))
    with np.errstate(invalid="ignore"):
        close = (a == b) | (xp.abs(a - b) <= tolerance)
    nan_a, nan_b = xp.isnan(a), xp.isnan(b)
    close = xp.where(nan_a | nan_b, p.equal_nan & (nan_a == nan_b), close)
    return [xp.asarray(close.all(), dtype=np.uint8)], None


def _uint8_out(p, in_types, out_types, aux_types):
    return in_types, ["uint8"], aux_types


OPS = [
    OpDef(
        name="_contrib_div_sqrt_dim",
        forward=_div_sqrt_dim_forward,
        backward=_div_sqrt_dim_backward,
        doc="data / sqrt(data.shape[-1]).",
    ),
    OpDef(
        name="_contrib_gradientmultiplier",
        params=GradientMultiplierParams,
        forward=_identity_forward,
        backward=_multiplier_backward,
        doc="Identity forward; the gradient is multiplied by scalar.",
    ),
    OpDef(
        name="_contrib_round_ste",
        forward=_round_ste_forward,
        backward=_straight_through,
        doc="Round half away from zero, with the straight-through gradient.",
    ),
    OpDef(
        name="_contrib_sign_ste",
        forward=_sign_ste_forward,
        backward=_straight_through,
        doc="Sign, with the straight-through gradient.",
    ),
    OpDef(
        name="_contrib_arange_like",
        params=ArangeLikeParams,
        infer_shape=forward_only_shape(_arange_like_shape, partial=True),
        forward=_arange_like_forward,
        backward=_zero_grads,
        doc="start + (i // repeat) * step, shaped like data (or like one of its axes).",
    ),
    OpDef(
        name="_contrib_index_array",
        params=IndexArrayParams,
        infer_shape=forward_only_shape(_index_array_shape, partial=True),
        infer_type=_int64_out,
        forward=_index_array_forward,
        backward=_zero_grads,
        doc="The index of every element along the given axes, as a trailing axis (int64).",
    ),
    OpDef(
        name="_contrib_index_copy",
        arguments=("old_tensor", "index_vector", "new_tensor"),
        infer_shape=_index_copy_infer_shape,
        infer_type=_index_copy_infer_type,
        forward=_index_copy_forward,
        backward=_index_copy_backward,
        doc="A copy of old_tensor whose rows index_vector[i] are new_tensor[i].",
    ),
    OpDef(
        name="_contrib_boolean_mask",
        params=BooleanMaskParams,
        arguments=("data", "index"),
        infer_shape=_boolean_mask_infer_shape,
        infer_type=_first_type,
        forward=_boolean_mask_forward,
        backward=_boolean_mask_backward,
        doc="The rows of data whose index flag is non-zero.",
    ),
    OpDef(
        name="_contrib_allclose",
        params=AllCloseParams,
        arguments=("a", "b"),
        infer_shape=forward_only_shape(_allclose_shape),
        infer_type=_uint8_out,
        forward=_allclose_forward,
        doc="1 (uint8, shape ()) where every |a - b| <= atol + rtol * |b| (NaNs equal if asked).",
    ),
]
