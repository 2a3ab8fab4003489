"""MXNet's legacy head layers: SoftmaxActivation, SVMOutput, IdentityAttachKLSparseReg.

SoftmaxActivation is a plain softmax (per row of the last axis, or across
channels). SVMOutput is a loss layer: its forward is the identity and its
backward the hinge-loss gradient, whatever head gradient it is given.
IdentityAttachKLSparseReg is the identity whose backward adds a sparseness
penalty and moves its running average of the activations.
"""

import attrs
import numpy as np

from .base import OpDef, merge_shape, mismatch
from .loss_types import check_label_dtype, data_led_type
from .params import param

__all__ = ["OPS"]


def _wide(x):
    return x.astype(np.float32, copy=False) if x.dtype == np.float16 else x


def _in_unit_interval(instance, attribute, value):
    if not 0 <= value <= 1:
        raise ValueError(f"{attribute.name} must lie in [0, 1], got {value}")


# -- SoftmaxActivation -------------------------------------------------------------


@attrs.frozen
class SoftmaxActivationParams:
    mode: str = param("str", "instance", choices=("instance", "channel"))


def _softmax_activation_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = merge_shape(in_shapes[0], out_shapes[0], "data")
    if p.mode == "channel" and data is not None and len(data) < 3:
        raise mismatch(
            "data", tuple(data), "(batch, channel, spatial...)", "mode='channel' needs 3-D data"
        )
    return [data], [data], aux_shapes


def _softmax_activation_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    axis = 1 if p.mode == "channel" else -1  # instance: each row of the (-1, last) view
    x = _wide(data)
    out = xp.exp(x - x.max(axis=axis, keepdims=True))
    out /= out.sum(axis=axis, keepdims=True)
    return [out.astype(data.dtype, copy=False)], out


def _softmax_activation_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    out, grad = saved, _wide(out_grads[0])
    # MXNet 1.9's backward reduces over axis 1 in both modes: for instance mode on
    # data of more than 2 axes that is not the derivative of the forward, but it is
    # what MXNet computes (recorded in the golden cases)
    axis = 1 if out.ndim > 1 else 0
    result = out * (grad - (grad * out).sum(axis=axis, keepdims=True))
    return [result.astype(out_grads[0].dtype, copy=False)]


SOFTMAX_ACTIVATION = OpDef(
    name="SoftmaxActivation",
    params=SoftmaxActivationParams,
    infer_shape=_softmax_activation_infer_shape,
    forward=_softmax_activation_forward,
    backward=_softmax_activation_backward,
    doc="Softmax over the last axis (instance) or over axis 1 (channel); legacy operator.",
)


# -- SVMOutput ---------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class SVMOutputParams:
    margin: float = param("float", 1.0)
    regularization_coefficient: float = param("float", 1.0)
    use_linear: bool = param("bool", False)


def _svm_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = merge_shape(in_shapes[0], out_shapes[0], "data")
    label = in_shapes[1]
    if data is not None:
        label = merge_shape(tuple(data[:-1]), label, "label")
    return [data, label], [data], aux_shapes


def _svm_forward(ctx, p, inputs, aux):
    check_label_dtype("SVMOutput", inputs[0], inputs[1])
    return [inputs[0].copy()], (inputs[0], inputs[1])


def _svm_backward(ctx, p, saved, out_grads, need_grad):
    xp, (data, label) = ctx.xp, saved
    if not need_grad[0]:
        return [None, None]
    scores = _wide(data).reshape(-1, data.shape[-1])
    rows = scores.shape[0]
    classes = label.reshape(-1)[:rows].astype(np.int64)  # C's truncating float -> int
    is_label = xp.arange(scores.shape[1])[None, :] == classes[:, None]
    margin, coefficient = p.margin, p.regularization_coefficient
    if p.use_linear:  # L1-SVM: the hinge's slope where the margin is violated
        inside = (margin > scores).astype(scores.dtype)
        violated = (margin > -scores).astype(scores.dtype)
        grad = xp.where(is_label, -inside, violated) * coefficient
    else:  # L2-SVM: twice the violation
        below = xp.maximum(margin - scores, 0)
        above = xp.maximum(margin + scores, 0)
        grad = xp.where(is_label, -2 * below, 2 * above) * coefficient
    return [grad.reshape(data.shape).astype(data.dtype, copy=False), None]


SVM_OUTPUT = OpDef(
    name="SVMOutput",
    params=SVMOutputParams,
    arguments=("data", "label"),
    infer_shape=_svm_infer_shape,
    infer_type=data_led_type,
    forward=_svm_forward,
    backward=_svm_backward,
    is_loss=True,
    doc="Identity forward; backward is the L2 (or L1, use_linear) SVM hinge-loss gradient.",
)


# -- IdentityAttachKLSparseReg ----------------------------------------------------


@attrs.frozen(kw_only=True)
class KLSparseRegParams:
    sparseness_target: float = param("float", 0.1, validator=_in_unit_interval)
    penalty: float = param("float", 0.001)
    momentum: float = param("float", 0.9, validator=_in_unit_interval)


def _kl_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = merge_shape(in_shapes[0], out_shapes[0], "data")
    if data is not None:
        if len(data) < 2:
            raise mismatch("data", tuple(data), "(batch, features)", "averages per feature")
        aux_shapes = [merge_shape((data[1],), aux_shapes[0], "moving_avg")]
    return [data], [data], aux_shapes


def _kl_forward(ctx, p, inputs, aux):
    return [inputs[0].copy()], (inputs[0], aux[0])


def _kl_backward(ctx, p, saved, out_grads, need_grad):
    data, moving_avg = saved
    flat = _wide(data).reshape(data.shape[0], -1)
    if flat.shape[1] != moving_avg.shape[0]:
        raise NotImplementedError(
            f"IdentityAttachKLSparseReg: backward needs (batch, features) data, got "
            f"{data.shape} (MXNet's backward fails on it as well)"
        )
    average = flat.mean(axis=0)
    keep = p.momentum
    moving_avg[...] = keep * moving_avg + (1 - keep) * average.astype(moving_avg.dtype)
    if not need_grad[0]:
        return [None]
    target = p.sparseness_target
    penalty = p.penalty * (-target / moving_avg + (1 - target) / (1 - moving_avg))
    grad = _wide(out_grads[0]).reshape(flat.shape) + penalty[None, :].astype(flat.dtype)
    return [grad.reshape(data.shape).astype(data.dtype, copy=False)]


KL_SPARSE_REG = OpDef(
    name="IdentityAttachKLSparseReg",
    params=KLSparseRegParams,
    aux_states=("moving_avg",),
    input_var_attrs=lambda p: {"moving_avg": {"__init__": '["zero", {}]'}},
    infer_shape=_kl_infer_shape,
    forward=_kl_forward,
    backward=_kl_backward,
    doc="Identity; backward adds a KL sparseness penalty and moves the activation average.",
)

OPS = [SOFTMAX_ACTIVATION, SVM_OUTPUT, KL_SPARSE_REG]
