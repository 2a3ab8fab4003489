"""Normalization layers: BatchNorm, InstanceNorm, LayerNorm, L2Normalization.

Statistics are computed in float32 for float16 data (as MXNet does, whose
float16 BatchNorm keeps gamma, beta and the moving statistics in float32).
"""

import attrs
import numpy as np

from rebind.backends import cupy_nn_kernels
from rebind.backends.cupy_kernels import fusable

from . import norm_cpu, norm_dnnl
from .base import OpDef, merge_shape, mismatch
from .params import non_negative, param

__all__ = ["OPS"]


def _wide(x):
    return x.astype(np.float32, copy=False) if x.dtype == np.float16 else x


def _param_dtype(dtype):
    """The dtype of gamma, beta and statistics for data of ``dtype``."""
    return None if dtype is None else ("float32" if dtype == "float16" else dtype)


def _norm_axis(axis, shape):
    """``axis`` of an array of ``shape`` as a non-negative index (ShapeError if absent)."""
    ndim = len(shape)
    if not -ndim <= axis < ndim:
        raise mismatch(
            "data",
            tuple(shape),
            f"an array with axis {axis}",
            f"axis {axis} is out of range for {ndim}-D data",
        )
    return axis % ndim


def _broadcastable(vector, ndim, axis):
    shape = [1] * ndim
    shape[axis] = -1
    return vector.reshape(shape)


def _moments(xp, x, axes):
    """Mean and biased variance over ``axes``, kept as broadcastable dims."""
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    return mean, (centered * centered).mean(axis=axes, keepdims=True), centered


def _affine_grads(grad, xhat, axes, need_gamma, need_beta, product=None):
    """Gradients of gamma and beta (sums over ``axes``), None where not needed.

    The sums run over every row of a batch: they accumulate in float64 (cast
    back by the caller), so a float32 gradient of a large batch keeps its
    digits (MXNet's test_layer_norm compares 4096 rows with a float64
    reference at 1e-4). ``product`` is ``grad * xhat`` when the caller has it.
    """
    if need_gamma:
        product = grad * xhat if product is None else product
        gamma = product.sum(axis=axes, dtype=np.float64)
    else:
        gamma = None
    beta = grad.sum(axis=axes, dtype=np.float64) if need_beta else None
    return gamma, beta


def _normalized_input_grad(xp, grad, xhat, scale, axes, product=None):
    """d/dx of (x - mean)/std over ``axes`` (count elements), times ``scale``.

    ``product`` is ``grad * xhat`` when the caller has it (the same values);
    ``xp`` is the arrays' module.
    """
    mean_grad = grad.mean(axis=axes, keepdims=True)
    product = grad * xhat if product is None else product
    mean_grad_xhat = product.mean(axis=axes, keepdims=True)
    if fusable(grad, xhat, mean_grad, mean_grad_xhat, scale):  # one CuPy kernel
        return cupy_nn_kernels.batchnorm_input_grad(
            xp, grad, xhat, mean_grad, mean_grad_xhat, scale
        )
    return scale * (grad - mean_grad - xhat * mean_grad_xhat)


# -- BatchNorm ----------------------------------------------------------------


@attrs.frozen
class BatchNormParams:
    eps: float = param("float", 1e-3, validator=non_negative)
    momentum: float = param("float", 0.9)
    fix_gamma: bool = param("bool", True)
    use_global_stats: bool = param("bool", False)
    output_mean_var: bool = param("bool", False)
    axis: int = param("int", 1)
    cudnn_off: bool = param("bool", False)
    min_calib_range: float = param("float", None, optional=True)  # quantization only
    max_calib_range: float = param("float", None, optional=True)


def _bn_outputs(p):
    return ("output", "mean", "var") if p.output_mean_var else ("output",)


def _bn_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = merge_shape(in_shapes[0], out_shapes[0], "data")
    channel = None
    if data is not None:
        channel = (data[_norm_axis(p.axis, data)],)
    names = ("gamma", "beta")
    for i, name in enumerate(names, start=1):
        in_shapes[i] = merge_shape(channel, in_shapes[i], name)
    for i, name in enumerate(("moving_mean", "moving_var")):
        aux_shapes[i] = merge_shape(channel, aux_shapes[i], name)
    in_shapes[0] = data
    outs = [data] + [channel] * (len(out_shapes) - 1)
    return in_shapes, outs, aux_shapes


def _bn_infer_type(p, in_types, out_types, aux_types):
    dtype = in_types[0] or out_types[0]
    stat = _param_dtype(dtype)
    if dtype is None:
        return in_types, out_types, aux_types
    outs = [dtype] + [stat] * (len(out_types) - 1)
    return [dtype, stat, stat], outs, [stat, stat]


def _bn_forward(ctx, p, inputs, aux):
    xp, (data, gamma, beta) = ctx.xp, inputs
    axis = p.axis % data.ndim
    axes = tuple(i for i in range(data.ndim) if i != axis)
    x = _wide(data)
    batch_stats = ctx.is_train and not p.use_global_stats
    scale = xp.ones_like(gamma) if p.fix_gamma else gamma  # fix_gamma: gamma counts as 1
    if norm_dnnl.takes(xp, data, axis, batch_stats) and norm_cpu.applies(xp, data, *aux):
        return _bn_forward_dnnl(ctx, p, data, gamma, scale, beta, aux)
    if norm_cpu.applies(xp, data, *(() if batch_stats else aux)):
        stats = None if batch_stats else (aux[0], aux[1])
        out, xhat, mean, var, invstd = norm_cpu.batchnorm_forward(
            data, axis, scale, beta, p.eps, stats
        )
        outputs = [out]
        if p.output_mean_var:
            outputs += [mean.astype(gamma.dtype, copy=False), invstd.astype(gamma.dtype)]
        saved = (xhat, scale, invstd, axis, batch_stats, mean, var, aux, data.dtype, gamma)
        return outputs, saved
    if batch_stats:
        mean, var, centered = _moments(xp, x, axes)
        mean, var = mean.reshape(-1), var.reshape(-1)
    else:
        mean, var = aux[0], aux[1]
        centered = x - _broadcastable(mean.astype(x.dtype, copy=False), x.ndim, axis)
    invstd = 1 / xp.sqrt(var + p.eps)
    invstd_b = _broadcastable(invstd.astype(x.dtype, copy=False), x.ndim, axis)
    scale_b, beta_b = _broadcastable(scale, x.ndim, axis), _broadcastable(beta, x.ndim, axis)
    if fusable(centered, invstd_b, scale_b, beta_b):  # both products and the sum: one kernel
        xhat, out = cupy_nn_kernels.batchnorm_normalize(xp, centered, invstd_b, scale_b, beta_b)
    else:
        xhat = centered * invstd_b
        out = xhat * scale_b + beta_b
    outputs = [out.astype(data.dtype, copy=False)]
    if p.output_mean_var:  # MXNet's "var" output holds 1/sqrt(var + eps)
        outputs += [mean.astype(gamma.dtype, copy=False), invstd.astype(gamma.dtype)]
    saved = (xhat, scale, invstd, axis, batch_stats, mean, var, aux, data.dtype, gamma)
    return outputs, saved


def _bn_forward_dnnl(ctx, p, data, gamma, scale, beta, aux):
    """BatchNorm of channels-last float32 ``data`` with the moving statistics on oneDNN."""
    stats = (aux[0], aux[1])
    out, mean, var, state = norm_dnnl.forward(data, scale, beta, p.eps, stats, ctx.is_train)
    invstd = 1 / np.sqrt(var.astype(np.float64) + p.eps)
    outputs = [out]
    if p.output_mean_var:
        outputs += [mean.astype(gamma.dtype), invstd.astype(gamma.dtype)]
    saved = (state, scale, invstd, 1, False, mean, var, aux, data.dtype, gamma)  # given stats
    return outputs, saved


def _bn_backward(ctx, p, saved, out_grads, need_grad):
    xhat, scale, invstd, axis, batch_stats, mean, var, aux, dtype, gamma = saved
    if p.fix_gamma:
        # MXNet 1.9's backward writes 1 into gamma, so whatever an optimizer did
        # to it (weight decay) is undone at every training step
        gamma[...] = 1
    if isinstance(xhat, tuple):  # normalized by oneDNN: its state
        dx, gamma_grad, beta_grad = norm_dnnl.backward(xhat, out_grads[0])
        grads = [dx if need_grad[0] else None, None, None]
        return _bn_finish(ctx, p, saved, grads, need_grad, gamma_grad, beta_grad)
    axes = tuple(i for i in range(xhat.ndim) if i != axis)
    grad = _wide(out_grads[0])
    need_gamma = need_grad[1] and not p.fix_gamma
    if norm_cpu.applies(ctx.xp, grad, xhat):
        factor = (scale * invstd).astype(grad.dtype)
        need = (need_grad[0], need_gamma, need_grad[2])
        dx, gamma_grad, beta_grad = norm_cpu.batchnorm_backward(
            grad, xhat, axis, factor, batch_stats, need
        )
        grads = [None if dx is None else dx.astype(dtype, copy=False), None, None]
        return _bn_finish(ctx, p, saved, grads, need_grad, gamma_grad, beta_grad)
    # grad * xhat feeds gamma's gradient and the input's: made once for both
    product = grad * xhat if need_gamma or (need_grad[0] and batch_stats) else None
    gamma_grad, beta_grad = _affine_grads(grad, xhat, axes, need_gamma, need_grad[2], product)
    grads = [None, None, None]
    if need_grad[0]:
        factor = _broadcastable((scale * invstd).astype(grad.dtype), grad.ndim, axis)
        if batch_stats:
            grads[0] = _normalized_input_grad(ctx.xp, grad, xhat, factor, axes, product)
        else:  # the statistics are constants
            grads[0] = grad * factor
        grads[0] = grads[0].astype(dtype, copy=False)
    return _bn_finish(ctx, p, saved, grads, need_grad, gamma_grad, beta_grad)


def _bn_finish(ctx, p, saved, grads, need_grad, gamma_grad, beta_grad):
    """The parameters' gradients from their float64 sums; the moving statistics moved."""
    _, scale, _, _, batch_stats, mean, var, aux, _, _ = saved
    if need_grad[1]:  # fix_gamma: gamma gets a zero gradient
        grads[1] = (
            ctx.xp.zeros_like(scale) if p.fix_gamma else gamma_grad.astype(scale.dtype, copy=False)
        )
    if need_grad[2]:
        grads[2] = beta_grad.astype(scale.dtype, copy=False)
    if batch_stats:
        # MXNet 1.9 moves the running statistics here, in the backward pass, with its
        # momentum a C float: 1 - 0.9f is 0.10000002 (visible in float64 statistics)
        keep = np.float32(p.momentum)
        keep, rest = float(keep), float(np.float32(1) - keep)
        aux[0][...] = aux[0] * keep + mean.astype(aux[0].dtype) * rest
        aux[1][...] = aux[1] * keep + var.astype(aux[1].dtype) * rest
    return grads


# MXNet's BatchNorm gives its moving-statistics variables these initializers on compose
_BN_INPUT_INITS = {
    "moving_mean": {"__init__": '["zero", {}]'},
    "moving_var": {"__init__": '["one", {}]'},
}

BATCH_NORM = OpDef(
    name="BatchNorm",
    params=BatchNormParams,
    arguments=("data", "gamma", "beta"),
    aux_states=("moving_mean", "moving_var"),
    input_var_attrs=lambda p: _BN_INPUT_INITS,
    outputs=_bn_outputs,
    hidden_outputs=lambda p: 0 if p.output_mean_var else 2,
    infer_shape=_bn_infer_shape,
    infer_type=_bn_infer_type,
    forward=_bn_forward,
    backward=_bn_backward,
    doc=(
        "Batch normalization over every axis but ``axis``; moving statistics (biased "
        "variance) are updated in backward; inference and use_global_stats use them."
    ),
)


# -- InstanceNorm -------------------------------------------------------------


@attrs.frozen
class InstanceNormParams:
    eps: float = param("float", 1e-3, validator=non_negative)


def _channel_params_shape(axis, min_ndim, why):
    """An infer_shape giving gamma and beta the shape (data.shape[axis],)."""

    def infer(p, in_shapes, out_shapes, aux_shapes):
        data = merge_shape(in_shapes[0], out_shapes[0], "data")
        channel = None
        if data is not None:
            if len(data) < min_ndim:
                raise mismatch("data", tuple(data), f"at least {min_ndim} dimensions", why)
            channel = (data[_norm_axis(axis(p), data)],)
        in_shapes[0] = data
        in_shapes[1] = merge_shape(channel, in_shapes[1], "gamma")
        in_shapes[2] = merge_shape(channel, in_shapes[2], "beta")
        return in_shapes, [data] * len(out_shapes), aux_shapes

    return infer


def _scaled_norm_forward(xp, data, gamma, beta, axes, axis, eps):
    """(x - mean) / sqrt(var + eps) * gamma + beta, statistics over ``axes``."""
    x = _wide(data)
    mean, var, centered = _moments(xp, x, axes)
    std = xp.sqrt(var + eps)
    xhat = centered / std
    out = xhat * _broadcastable(gamma, x.ndim, axis) + _broadcastable(beta, x.ndim, axis)
    return out.astype(data.dtype, copy=False), (xhat, std, mean)


def _scaled_norm_backward(xp, saved, out_grads, need_grad, axes, axis):
    xhat, std, gamma, dtype = saved
    grad = _wide(out_grads[0])
    param_axes = tuple(i for i in range(grad.ndim) if i != axis)
    gamma_grad, beta_grad = _affine_grads(grad, xhat, param_axes, need_grad[1], need_grad[2])
    grads = [None, gamma_grad, beta_grad]
    if need_grad[0]:
        scaled = grad * _broadcastable(gamma.astype(grad.dtype), grad.ndim, axis)
        grads[0] = _normalized_input_grad(xp, scaled, xhat, 1 / std, axes).astype(dtype)
    for i in (1, 2):
        if grads[i] is not None:
            grads[i] = grads[i].astype(gamma.dtype, copy=False)
    return grads


def _in_forward(ctx, p, inputs, aux):
    data, gamma, beta = inputs
    axes = tuple(range(2, data.ndim))
    out, (xhat, std, _) = _scaled_norm_forward(ctx.xp, data, gamma, beta, axes, 1, p.eps)
    return [out], (xhat, std, gamma, data.dtype)


def _in_backward(ctx, p, saved, out_grads, need_grad):
    axes = tuple(range(2, saved[0].ndim))
    return _scaled_norm_backward(ctx.xp, saved, out_grads, need_grad, axes, 1)


INSTANCE_NORM = OpDef(
    name="InstanceNorm",
    params=InstanceNormParams,
    arguments=("data", "gamma", "beta"),
    hidden_outputs=2,  # MXNet's mean and var outputs
    infer_shape=_channel_params_shape(lambda p: 1, 3, "InstanceNorm needs (N, C, spatial...)"),
    forward=_in_forward,
    backward=_in_backward,
    doc="Normalizes each (sample, channel) over the spatial axes; gamma, beta per channel.",
)


# -- LayerNorm ----------------------------------------------------------------


@attrs.frozen
class LayerNormParams:
    axis: int = param("int", -1)
    eps: float = param("float", 1e-5, validator=non_negative)
    output_mean_var: bool = param("bool", False)


def _ln_outputs(p):
    return ("output", "mean", "std") if p.output_mean_var else ("output",)


def _ln_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    infer = _channel_params_shape(lambda q: q.axis, 1, "LayerNorm needs an axis")
    in_shapes, outs, aux_shapes = infer(p, in_shapes, out_shapes[:1], aux_shapes)
    data = in_shapes[0]
    stat = None
    if data is not None:
        axis = _norm_axis(p.axis, data)
        stat = tuple(1 if i == axis else d for i, d in enumerate(data))
    rest = [merge_shape(stat, s, "output") for s in out_shapes[1:]]
    return in_shapes, outs + rest, aux_shapes


def _ln_forward(ctx, p, inputs, aux):
    data, gamma, beta = inputs
    axis = p.axis % data.ndim
    out, (xhat, std, mean) = _scaled_norm_forward(ctx.xp, data, gamma, beta, axis, axis, p.eps)
    outputs = [out]
    if p.output_mean_var:
        outputs += [mean.astype(data.dtype), std.astype(data.dtype)]
    return outputs, (xhat, std, gamma, data.dtype)


def _ln_backward(ctx, p, saved, out_grads, need_grad):
    axis = p.axis % saved[0].ndim
    return _scaled_norm_backward(ctx.xp, saved, out_grads, need_grad, (axis,), axis)


LAYER_NORM = OpDef(
    name="LayerNorm",
    params=LayerNormParams,
    arguments=("data", "gamma", "beta"),
    outputs=_ln_outputs,
    hidden_outputs=lambda p: 0 if p.output_mean_var else 2,
    infer_shape=_ln_infer_shape,
    forward=_ln_forward,
    backward=_ln_backward,
    doc="Normalizes over ``axis``; gamma and beta have shape (data.shape[axis],).",
)


# -- L2Normalization ----------------------------------------------------------

_L2_MIN_NDIM = {"instance": 2, "channel": 2, "spatial": 3}


@attrs.frozen
class L2NormalizationParams:
    eps: float = param("float", 1e-10, validator=non_negative)
    mode: str = param("str", "instance", choices=tuple(_L2_MIN_NDIM))


def _l2_axes(mode, ndim):
    if mode == "instance":
        return tuple(range(1, ndim))
    return (1,) if mode == "channel" else tuple(range(2, ndim))


def _l2_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = merge_shape(in_shapes[0], out_shapes[0], "data")
    minimum = _L2_MIN_NDIM[p.mode]
    if data is not None and len(data) < minimum:
        raise mismatch("data", tuple(data), f"at least {minimum} dimensions", f"mode={p.mode}")
    return [data], [data], aux_shapes


def _l2_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    x = _wide(data)
    norm = xp.sqrt((x * x).sum(axis=_l2_axes(p.mode, x.ndim), keepdims=True) + p.eps)
    out = x / norm
    return [out.astype(data.dtype, copy=False)], (out, norm, data.dtype)


def _l2_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    out, norm, dtype = saved
    grad = _wide(out_grads[0])
    along = (grad * out).sum(axis=_l2_axes(p.mode, out.ndim), keepdims=True)
    return [((grad - out * along) / norm).astype(dtype, copy=False)]


L2_NORMALIZATION = OpDef(
    name="L2Normalization",
    params=L2NormalizationParams,
    hidden_outputs=1,  # MXNet's norm output
    infer_shape=_l2_infer_shape,
    forward=_l2_forward,
    backward=_l2_backward,
    doc=(
        "x / sqrt(sum(x^2) + eps) over all axes but 0 (instance), axis 1 (channel) "
        "or the axes after 1 (spatial)."
    ),
)

OPS = [BATCH_NORM, INSTANCE_NORM, LAYER_NORM, L2_NORMALIZATION]
