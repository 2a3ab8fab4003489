"""BatchNormWithReLU (mx.contrib): BatchNorm followed by ReLU, as MXNet 1.9.1's
contrib/batch_norm_relu.

Same parameters, inputs, auxiliary states and visible outputs as BatchNorm
(``output``, plus ``mean`` and ``var`` under ``output_mean_var``); MXNet keeps
a fourth hidden output, ``workspace`` (its ReLU mask), counted here only in
the JSON ``node_row_ptr`` as BatchNorm's hidden mean and var. As MXNet's kernel
(and SyncBatchNorm's), the forward overwrites gamma with ones under ``fix_gamma``.
The gradient is BatchNorm's gradient of
``out_grad * mask``; the moving statistics move in backward, as BatchNorm's.

Difference from MXNet: MXNet 1.9.1 runs this operator only through its MKL-DNN
kernel, which takes 4-D data normalized over axis 1 and otherwise fails with
"BatchNormWithReLU operator only supports MKL-DNN Backend"; rebind computes it
for any data BatchNorm takes (any rank, any axis).
"""

from . import norm
from .base import OpDef

__all__ = ["OPS"]

_BATCH_NORM = norm.BATCH_NORM


def _forward(ctx, p, inputs, aux):
    if p.fix_gamma:  # MXNet's MKL-DNN kernel writes the ones it scales by into gamma
        inputs[1][...] = 1
    outs, saved = _BATCH_NORM.forward(ctx, p, inputs, aux)
    xp, normalized = ctx.xp, outs[0]
    mask = normalized > 0
    outs[0] = xp.where(mask, normalized, xp.zeros((), dtype=normalized.dtype))
    return outs, (saved, mask)


def _backward(ctx, p, saved, out_grads, need_grad):
    bn_saved, mask = saved
    grad = out_grads[0]
    # ReLU passes the gradient where its input was positive, nothing elsewhere
    relu_grad = ctx.xp.where(mask, grad, ctx.xp.zeros((), dtype=grad.dtype))
    return _BATCH_NORM.backward(ctx, p, bn_saved, [relu_grad, *out_grads[1:3]], need_grad)


OPS = [
    OpDef(
        name="_contrib_BatchNormWithReLU",
        params=norm.BatchNormParams,
        arguments=("data", "gamma", "beta"),
        aux_states=("moving_mean", "moving_var"),
        input_var_attrs=_BATCH_NORM.input_var_attrs,
        outputs=_BATCH_NORM.outputs,
        hidden_outputs=lambda p: 1 if p.output_mean_var else 3,
        infer_shape=_BATCH_NORM.infer_shape,
        infer_type=_BATCH_NORM.infer_type,
        forward=_forward,
        backward=_backward,
        doc="Batch normalization followed by ReLU (BatchNorm's parameters and statistics).",
    ),
]
