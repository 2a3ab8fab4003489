"""GroupNorm: normalization over groups of channels, with one gamma and beta per group.

The channels of (N, C, spatial...) data are split into ``num_groups`` groups
of C / num_groups; each (sample, group) is normalized by its own mean and
biased variance. As in MXNet 1.9.1, gamma and beta have shape
(num_groups,), and the hidden ``mean`` and ``std`` outputs (N, num_groups).
"""

import attrs

from .base import OpDef, merge_shape, mismatch
from .norm import _affine_grads, _moments, _normalized_input_grad, _wide
from .params import non_negative, param, positive

__all__ = ["OPS"]


@attrs.frozen(kw_only=True)
class GroupNormParams:
    num_groups: int = param("int", 1, validator=positive)
    eps: float = param("float", 1e-5, validator=non_negative)
    output_mean_var: bool = param("bool", False)


def _outputs(p):
    return ("output", "mean", "std") if p.output_mean_var else ("output",)


def _infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = merge_shape(in_shapes[0], out_shapes[0], "data")
    groups = (p.num_groups,)
    in_shapes[1] = merge_shape(groups, in_shapes[1], "gamma")
    in_shapes[2] = merge_shape(groups, in_shapes[2], "beta")
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    if len(data) < 3:
        raise mismatch("data", tuple(data), "(batch, channel, spatial...)", "3-D data or more")
    if data[1] and data[1] % p.num_groups:
        raise mismatch(
            "data",
            tuple(data),
            f"channels divisible by num_groups={p.num_groups}",
            f"{data[1]} channels cannot be split into {p.num_groups} groups",
        )
    in_shapes[0] = data
    moments = (data[0], p.num_groups)
    rest = [merge_shape(moments, s, "output") for s in out_shapes[1:]]
    return in_shapes, [data, *rest], aux_shapes


def _grouped(x, groups):
    """(N, C, *spatial) -> (N, groups, C // groups, *spatial)."""
    return x.reshape(x.shape[0], groups, x.shape[1] // groups, *x.shape[2:])


def _per_group(vector, ndim):
    return vector.reshape(1, -1, *(1,) * (ndim - 2))


def _forward(ctx, p, inputs, aux):
    xp, (data, gamma, beta) = ctx.xp, inputs
    x = _grouped(_wide(data), p.num_groups)
    axes = tuple(range(2, x.ndim))
    mean, var, centered = _moments(xp, x, axes)
    std = xp.sqrt(var + p.eps)
    xhat = centered / std
    out = xhat * _per_group(gamma, x.ndim) + _per_group(beta, x.ndim)
    outputs = [out.reshape(data.shape).astype(data.dtype, copy=False)]
    if p.output_mean_var:
        moments = (data.shape[0], p.num_groups)
        outputs += [a.reshape(moments).astype(data.dtype) for a in (mean, std)]
    return outputs, (xhat, std, gamma, data.dtype)


def _backward(ctx, p, saved, out_grads, need_grad):
    xhat, std, gamma, dtype = saved
    grad = _grouped(_wide(out_grads[0]), p.num_groups)
    axes = tuple(range(2, grad.ndim))
    param_axes = (0, *axes)
    gamma_grad, beta_grad = _affine_grads(grad, xhat, param_axes, need_grad[1], need_grad[2])
    grads = [None, gamma_grad, beta_grad]
    if need_grad[0]:
        scaled = grad * _per_group(gamma.astype(grad.dtype), grad.ndim)
        data_grad = _normalized_input_grad(ctx.xp, scaled, xhat, 1 / std, axes)
        shape = (grad.shape[0], grad.shape[1] * grad.shape[2], *grad.shape[3:])
        grads[0] = data_grad.reshape(shape).astype(dtype, copy=False)
    for i in (1, 2):
        if grads[i] is not None:
            grads[i] = grads[i].astype(gamma.dtype, copy=False)
    return grads


GROUP_NORM = OpDef(
    name="GroupNorm",
    params=GroupNormParams,
    arguments=("data", "gamma", "beta"),
    outputs=_outputs,
    hidden_outputs=lambda p: 0 if p.output_mean_var else 2,
    infer_shape=_infer_shape,
    forward=_forward,
    backward=_backward,
    doc="Normalizes each group of channels per sample; gamma and beta per group.",
)

OPS = [GROUP_NORM]
