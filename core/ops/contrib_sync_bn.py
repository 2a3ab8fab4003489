"""SyncBatchNorm (mx.contrib): BatchNorm whose batch statistics MXNet shares across ``ndev``
devices, as MXNet 1.9.1's sync_batch_norm.

On one device it is BatchNorm over axis 1 (same eps, momentum, fix_gamma,
use_global_stats and output_mean_var; moving statistics updated in backward),
so this module runs BatchNorm's kernels with SyncBatchNorm's parameters.

Difference from MXNet: rebind's data-parallel executor group runs each device's
copy of the graph independently and has no collective operations between
devices, so under several contexts every device normalizes with its own batch
statistics (as BatchNorm does); ``ndev`` and ``key`` are accepted and not used.

As MXNet's kernel, the forward overwrites the gamma input with ones under
``fix_gamma`` (BatchNorm only ignores it), so a module's gamma reads back as ones.
"""

import attrs

from . import norm
from .base import OpDef
from .params import non_negative, param, positive

__all__ = ["OPS"]


@attrs.frozen(kw_only=True)
class SyncBatchNormParams:
    eps: float = param("float", 1e-3, validator=non_negative)
    momentum: float = param("float", 0.9)
    fix_gamma: bool = param("bool", True)
    use_global_stats: bool = param("bool", False)
    output_mean_var: bool = param("bool", False)
    ndev: int = param("int", 1, validator=positive)
    key: str = param("str")

    @property
    def axis(self):
        """The channel axis: always 1 (SyncBatchNorm has no axis parameter)."""
        return 1

    @property
    def batch_norm(self):
        """The BatchNorm parameters that compute this layer on one device."""
        return norm.BatchNormParams(
            eps=self.eps,
            momentum=self.momentum,
            fix_gamma=self.fix_gamma,
            use_global_stats=self.use_global_stats,
            output_mean_var=self.output_mean_var,
            axis=1,
        )


def _on_batch_norm(function):
    """``function`` of BatchNorm, called with the equivalent BatchNorm parameters."""

    def call(first, p, *rest):
        return function(first, p.batch_norm, *rest)

    call.__name__ = function.__name__
    return call


_BATCH_NORM = next(op for op in norm.OPS if op.name == "BatchNorm")


def _forward(ctx, p, inputs, aux):
    if p.fix_gamma:  # MXNet writes the ones it normalizes with into gamma itself
        inputs[1][...] = 1
    outs, saved = _BATCH_NORM.forward(ctx, p.batch_norm, inputs, aux)
    if p.output_mean_var and ctx.is_train and not p.use_global_stats:
        outs[2] = _variance(ctx.xp, inputs[0], outs[1])
    return outs, saved


def _variance(xp, data, mean):
    """The biased batch variance SyncBatchNorm outputs (BatchNorm outputs 1 / std)."""
    axes = (0, *range(2, data.ndim))
    wide = data.astype(mean.dtype, copy=False)
    shape = (1, -1) + (1,) * (data.ndim - 2)
    return xp.mean(xp.square(wide - mean.reshape(shape)), axis=axes).astype(mean.dtype)


OPS = [
    OpDef(
        name="_contrib_SyncBatchNorm",
        params=SyncBatchNormParams,
        arguments=("data", "gamma", "beta"),
        aux_states=("moving_mean", "moving_var"),
        input_var_attrs=lambda p: _BATCH_NORM.input_var_attrs(p.batch_norm),
        outputs=lambda p: _BATCH_NORM.outputs(p.batch_norm),
        hidden_outputs=lambda p: 0 if p.output_mean_var else 2,
        infer_shape=lambda p, *shapes: _BATCH_NORM.infer_shape(p.batch_norm, *shapes),
        infer_type=lambda p, *types: _BATCH_NORM.infer_type(p.batch_norm, *types),
        forward=_forward,
        backward=_on_batch_norm(_BATCH_NORM.backward),
        doc="Batch normalization over axis 1 (statistics per device in rebind).",
    ),
]
