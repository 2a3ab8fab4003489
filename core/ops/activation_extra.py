"""LeakyReLU (leaky, prelu, rrelu, elu, selu, gelu) and Dropout.

GELU uses the shared float64 ``erf`` of ``special.py`` (NumPy has none).
"""

import math

import attrs
import numpy as np

from rebind.backends import cupy_nn_kernels
from rebind.backends.cupy_kernels import fusable

from .base import OpDef, elementwise_shape, known, merge_shape, mismatch
from .params import param
from .special import erf

__all__ = ["OPS"]


def _compute_dtype(x):
    """float16 is computed in float32 (exp and erf lose too much otherwise)."""
    return np.float32 if x.dtype == np.float16 else x.dtype


# -- LeakyReLU ----------------------------------------------------------------

ACT_TYPES = ("leaky", "prelu", "rrelu", "elu", "selu", "gelu")
_SELU_LAMBDA = 1.0507009873554804934193349852946
_SELU_ALPHA = 1.6732632423543772848170429916717


@attrs.frozen
class LeakyReLUParams:
    act_type: str = param("str", "leaky", choices=ACT_TYPES)
    slope: float = param("float", 0.25)
    lower_bound: float = param("float", 0.125)
    upper_bound: float = param("float", 0.334)

    def __attrs_post_init__(self):
        if self.act_type == "rrelu" and self.lower_bound > self.upper_bound:
            raise ValueError(
                f"lower_bound={self.lower_bound} must not exceed upper_bound={self.upper_bound}"
            )


def _lrelu_arguments(p):
    return ("data", "gamma") if p.act_type == "prelu" else ("data",)


def _lrelu_outputs(p):
    # MXNet 1.9 lists rrelu's random slopes as a second visible output.
    return ("output", "mask") if p.act_type == "rrelu" else ("output",)


def _lrelu_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = merge_shape(in_shapes[0], out_shapes[0], "data")
    if p.act_type == "prelu" and data is not None:
        if len(data) < 2:
            raise mismatch("data", data, "(N, C, ...)", "prelu needs a channel axis 1")
        gamma = in_shapes[1]
        if gamma is None:
            in_shapes[1] = (data[1],)
        elif known(gamma) and known(data) and gamma_layout(tuple(gamma), tuple(data)) is None:
            raise mismatch(
                "gamma",
                tuple(gamma),
                f"(1,), ({data[1]},) or a shape matching data's first two axes",
                "prelu broadcasts gamma along axes 0 and 1 of data",
            )
    in_shapes[0] = data
    return in_shapes, [data] * len(out_shapes), aux_shapes


def gamma_layout(gamma, data):
    """The shape gamma broadcasts as against ``data``, or None when it cannot (MXNet's rule).

    Gamma's axes align from the right with data's axes 0 and 1 only, each equal
    to data's or 1: (C,) is one slope per channel, (1,) one for all, (N, C)
    one per sample and channel; every other axis of data is 1 in the layout.
    """
    layout, remaining = [1] * len(data), list(gamma)
    for axis in (1, 0):
        if remaining and axis < len(data) and remaining[-1] in (data[axis], 1):
            layout[axis] = remaining.pop()
    return None if remaining else tuple(layout)


def _gamma_view(gamma, shape):
    return gamma.reshape(gamma_layout(tuple(gamma.shape), tuple(shape)))


def _lrelu_forward(ctx, p, inputs, aux):
    xp, x = ctx.xp, inputs[0]
    act, positive = p.act_type, x > 0
    if act == "leaky":
        return [xp.where(positive, x, x * x.dtype.type(p.slope))], (x, None)
    if act == "prelu":
        gamma = _gamma_view(inputs[1], x.shape)
        out = xp.where(positive, x, x * gamma).astype(x.dtype, copy=False)
        return [out], (x, (gamma, inputs[1].shape))
    if act == "rrelu":
        return _rrelu_forward(ctx, p, x)
    wide = x.astype(_compute_dtype(x), copy=False)
    if act == "elu":
        out = xp.where(positive, wide, p.slope * xp.expm1(xp.minimum(wide, 0)))
    elif act == "selu":
        negative = _SELU_ALPHA * xp.expm1(xp.minimum(wide, 0))
        out = _SELU_LAMBDA * xp.where(positive, wide, negative)
    else:
        out = 0.5 * wide * (1 + erf(xp, wide / math.sqrt(2)))
    return [out.astype(x.dtype, copy=False)], (x, None)


def _rrelu_forward(ctx, p, x):
    xp = ctx.xp
    if ctx.is_train:
        mask = ctx.backend.uniform(p.lower_bound, p.upper_bound, x.shape, x.dtype, ctx.device_id)
    else:
        # MXNet leaves the mask unset at inference; we report the fixed slope used.
        mask = xp.full(x.shape, (p.lower_bound + p.upper_bound) / 2, dtype=x.dtype)
    out = xp.where(x > 0, x, x * mask)
    return [out, mask], (x, mask)


def _lrelu_backward(ctx, p, saved, out_grads, need_grad):
    xp, (x, extra), grad = ctx.xp, saved, out_grads[0]
    act, positive = p.act_type, x > 0
    grads = [None] * len(need_grad)
    if act == "prelu":
        extra, gamma_shape = extra
    if act == "prelu" and need_grad[1]:
        # sum over the axes gamma is broadcast along, back to gamma's own shape
        axes = tuple(i for i in range(x.ndim) if extra.shape[i] == 1)
        gamma_grad = (xp.where(positive, 0, x) * grad).sum(axis=axes, keepdims=True)
        grads[1] = gamma_grad.reshape(gamma_shape)
    if not need_grad[0]:
        return grads
    if act in ("leaky", "prelu", "rrelu"):
        slope = x.dtype.type(p.slope) if act == "leaky" else extra
        grads[0] = (grad * xp.where(positive, 1, slope)).astype(x.dtype, copy=False)
        return grads
    wide = x.astype(_compute_dtype(x), copy=False)
    if act == "elu":
        local = xp.where(positive, 1, p.slope * xp.exp(xp.minimum(wide, 0)))
    elif act == "selu":
        # MXNet 1.9.1 computes lambda * (out + alpha) below zero, from the output;
        # the true derivative is out + lambda * alpha. Kept for parity (golden data).
        out = _SELU_LAMBDA * _SELU_ALPHA * xp.expm1(xp.minimum(wide, 0))
        local = _SELU_LAMBDA * xp.where(positive, 1, out + _SELU_ALPHA)
    else:
        cdf = 0.5 * (1 + erf(xp, wide / math.sqrt(2)))
        local = cdf + wide * xp.exp(-0.5 * wide * wide) / math.sqrt(2 * math.pi)
    grads[0] = (grad * local).astype(x.dtype, copy=False)
    return grads


# MXNet starts a PReLU slope at 0.25 by tagging gamma on compose
_PRELU_GAMMA_INIT = {"gamma": {"__init__": '["Constant", {"value": 0.25}]'}}

LEAKY_RELU = OpDef(
    name="LeakyReLU",
    params=LeakyReLUParams,
    arguments=_lrelu_arguments,
    input_var_attrs=lambda p: _PRELU_GAMMA_INIT if p.act_type == "prelu" else {},
    outputs=_lrelu_outputs,
    infer_shape=_lrelu_infer_shape,
    forward=_lrelu_forward,
    backward=_lrelu_backward,
    doc=(
        "Leaky ReLU family: leaky (slope*x for x<0), prelu (learnt per-channel slope "
        "gamma on axis 1), rrelu (random slope in [lower_bound, upper_bound) when "
        "training, their mean otherwise; second output mask), elu, selu, gelu (erf)."
    ),
)


# -- Dropout ------------------------------------------------------------------


def _probability(instance, attribute, value):
    if not 0 <= value <= 1:
        raise ValueError(f"{attribute.name} must be in [0, 1], got {value}")


@attrs.frozen
class DropoutParams:
    p: float = param("float", 0.5, validator=_probability)
    mode: str = param("str", "training", choices=("training", "always"))
    axes: tuple = param("shape", ())
    cudnn_off: bool = param("bool", False, optional=True)


def _dropout_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    in_shapes, out_shapes, aux_shapes = elementwise_shape(p, in_shapes, out_shapes, aux_shapes)
    data = in_shapes[0]
    bad = [a for a in p.axes if data is not None and not -len(data) <= a < len(data)]
    if bad:
        raise mismatch(
            "data",
            tuple(data),
            f"an array with axis {bad[0]}",
            f"Dropout axes={p.axes} do not fit {len(data)}-D data",
        )
    return in_shapes, out_shapes, aux_shapes


def _dropout_forward(ctx, p, inputs, aux):
    x = inputs[0]
    if p.p == 0 or not (ctx.is_train or p.mode == "always"):
        return [x.copy()], None
    # The mask is drawn once per position of the non-shared axes and broadcast
    # along ``axes`` (variational dropout): same keep/drop on a shared axis.
    _dropout_infer_shape(p, [x.shape], [None], [])
    shape = list(x.shape)
    for axis in p.axes:
        shape[axis] = 1
    keep = 1 - p.p
    draws = ctx.backend.uniform(0, 1, tuple(shape), np.float32, ctx.device_id)
    scale = 0.0 if keep == 0 else 1 / keep  # p=1 drops everything (no 0 * inf)
    if not p.axes and fusable(x, same_shape=True):  # mask and product in one CuPy kernel
        out, mask = cupy_nn_kernels.dropout_forward(
            ctx.xp, x, draws, np.float32(keep), x.dtype.type(scale)
        )
        return [out], mask
    mask = (draws < keep).astype(x.dtype) * x.dtype.type(scale)
    return [x * mask], mask


def _dropout_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    grad = out_grads[0]
    return [grad.copy() if saved is None else grad * saved]


DROPOUT = OpDef(
    name="Dropout",
    params=DropoutParams,
    outputs=("output",),
    hidden_outputs=1,  # MXNet's mask output
    infer_shape=_dropout_infer_shape,
    forward=_dropout_forward,
    backward=_dropout_backward,
    doc=(
        "Zeroes each element with probability p and scales the rest by 1/(1-p), when "
        "training or with mode='always'; identity otherwise. ``axes`` share the mask."
    ),
)

OPS = [LEAKY_RELU, DROPOUT]
