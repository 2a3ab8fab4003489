"""The softmax family: softmax, log_softmax, softmin and softmax_cross_entropy.

All are computed stably (the maximum along the axis is subtracted before
``exp``), in float32 for float16 inputs. With ``use_length=True`` a second
input ``length`` (the data's shape without ``axis``) says how many leading
positions along ``axis`` take part: the others get output 0 and gradient 0.
``dtype`` chooses the output dtype; gradients keep the input's dtype.

(SoftmaxOutput, the loss layer, lives elsewhere.)
"""

import math

import attrs

from .base import OpDef, merge_shape, mismatch
from .loss_types import check_label_dtype, uniform_type
from .params import param

__all__ = ["OPS"]

OUT_DTYPES = ("float16", "float32", "float64")


@attrs.frozen
class SoftmaxParams:
    axis: int = param("int", -1)
    temperature: float = param("float", None, optional=True)
    dtype: str = param("dtype", None, optional=True, choices=OUT_DTYPES)
    use_length: bool = param("bool", False, optional=True)


def _arguments(p):
    return ("data", "length") if p.use_length else ("data",)


def _infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = merge_shape(in_shapes[0], out_shapes[0], "output")
    if data is not None and not -len(data) <= p.axis < len(data):
        raise mismatch(
            "data",
            data,
            f"at least {max(p.axis, -p.axis - 1) + 1} dimensions",
            f"softmax axis {p.axis} is out of range",
        )
    in_shapes[0], out_shapes[0] = data, data
    if p.use_length and data is not None:
        axis = p.axis % len(data)
        length = tuple(d for i, d in enumerate(data) if i != axis) or (1,)
        in_shapes[1] = merge_shape(length, in_shapes[1], "length")
    return in_shapes, out_shapes, aux_shapes


def _infer_type(p, in_types, out_types, aux_types):
    data = in_types[0]
    if data is None and not p.dtype:
        data = out_types[0]  # without dtype the output has the data's dtype
    return [data, *in_types[1:]], [p.dtype or data], aux_types


def _wide(xp, x):
    return x.astype(xp.float32) if x.dtype == xp.float16 else x


def _axis(p, ndim):
    if not -ndim <= p.axis < ndim:
        raise ValueError(f"softmax axis {p.axis} is out of range for {ndim} dimensions")
    return p.axis % ndim


def _length_mask(xp, x, length, axis):
    """True where a position along ``axis`` is below its row's length."""
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    positions = xp.arange(x.shape[axis]).reshape(shape)
    shape = list(x.shape)
    shape[axis] = 1
    return positions < length.reshape(shape)


def _scale(p, sign):
    """sign / temperature; temperature 0 divides by zero as MXNet does (every row NaN)."""
    if p.temperature is None:
        return sign
    return sign / p.temperature if p.temperature else math.copysign(math.inf, sign)


def _softmax_parts(xp, x, p, sign, mask):
    """(shifted logits, sum of their exps): softmax = exp(shifted) / sum."""
    axis = _axis(p, x.ndim)
    x = _wide(xp, x)
    scale = _scale(p, sign)
    if scale != 1:
        x = x * scale
    if mask is not None:
        x = xp.where(mask, x, -xp.inf)
    top = xp.max(x, axis=axis, keepdims=True)
    if mask is not None:
        top = xp.where(xp.isfinite(top), top, 0)  # rows with length 0 have no maximum
    shifted = x - top
    exps = xp.exp(shifted)
    return shifted, exps, xp.sum(exps, axis=axis, keepdims=True)


def _family(name, sign, log, doc):
    """softmax (sign 1), softmin (sign -1) or log_softmax (log=True) as an OpDef."""

    def forward(ctx, p, inputs, aux):
        xp, x = ctx.xp, inputs[0]
        mask = _length_mask(xp, x, inputs[1], _axis(p, x.ndim)) if p.use_length else None
        shifted, exps, total = _softmax_parts(xp, x, p, sign, mask)
        if mask is not None:
            total = xp.where(total == 0, 1, total)
        if log:
            out = shifted - xp.log(total)
        else:
            out = exps
            out /= total
        if mask is not None:
            out = xp.where(mask, out, 0)
        return [out.astype(p.dtype or x.dtype, copy=False)], (x.dtype, out, mask)

    def backward(ctx, p, saved, out_grads, need_grad):
        grads = [None] * len(_arguments(p))
        if not need_grad[0]:
            return grads
        xp, (dtype, out, mask) = ctx.xp, saved
        axis = p.axis % out.ndim
        g = out_grads[0].astype(out.dtype, copy=False)
        if log:
            if mask is not None:
                g = xp.where(mask, g, 0)
            probs = xp.exp(out) if mask is None else xp.where(mask, xp.exp(out), 0)
            grad = g - probs * xp.sum(g, axis=axis, keepdims=True)
        else:
            grad = out * (g - xp.sum(g * out, axis=axis, keepdims=True))
        scale = _scale(p, sign)
        if scale != 1:
            grad *= scale
        grads[0] = grad.astype(dtype, copy=False)
        return grads

    return OpDef(
        name=name,
        params=SoftmaxParams,
        arguments=_arguments,
        infer_shape=_infer_shape,
        infer_type=_infer_type,
        forward=forward,
        backward=backward,
        doc=doc,
    )


# -- softmax_cross_entropy ------------------------------------------------------


def _ce_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is not None:
        if len(data) != 2:
            raise mismatch(
                "data", tuple(data), "(batch, classes)", "softmax_cross_entropy takes 2-D data"
            )
        in_shapes[1] = merge_shape((data[0],), in_shapes[1], "label")
    out_shapes[0] = merge_shape((1,), out_shapes[0])
    return in_shapes, out_shapes, aux_shapes


def _ce_forward(ctx, p, inputs, aux):
    xp, (x, label) = ctx.xp, inputs
    check_label_dtype("softmax_cross_entropy", x, label)
    rows = xp.arange(x.shape[0])
    # labels out of range are clipped to the nearest class rather than read out of bounds
    classes = xp.clip(label.astype(xp.int64), 0, x.shape[1] - 1)
    shifted, exps, total = _softmax_parts(xp, x, SoftmaxParams(), 1, None)
    loss = xp.sum(xp.log(total[:, 0]) - shifted[rows, classes]).reshape(1)
    return [loss.astype(x.dtype, copy=False)], (x.dtype, exps / total, rows, classes)


def _ce_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None, None]
    dtype, probs, rows, classes = saved
    grad = probs.copy()
    grad[rows, classes] -= 1
    grad *= out_grads[0].astype(grad.dtype, copy=False)
    return [grad.astype(dtype, copy=False), None]


SOFTMAX_CROSS_ENTROPY = OpDef(
    name="softmax_cross_entropy",
    arguments=("data", "label"),
    infer_shape=_ce_infer_shape,
    infer_type=uniform_type,
    forward=_ce_forward,
    backward=_ce_backward,
    doc="Total cross-entropy of softmax(data) against class indices label; shape (1,).",
)

OPS = [
    _family("softmax", 1, False, "exp(x/T) / sum(exp(x/T)) along axis."),
    _family("log_softmax", 1, True, "log(softmax(x)) along axis."),
    _family("softmin", -1, False, "softmax(-x) along axis."),
    SOFTMAX_CROSS_ENTROPY,
]
