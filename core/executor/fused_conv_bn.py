"""A Convolution, the BatchNorm after it and a relu as one oneDNN convolution in inference.

In an inference pass BatchNorm is an affine map per channel with constants
(the moving statistics), so it folds into the convolution before it:

    scale = gamma / sqrt(moving_var + eps)      (gamma counts as 1 with fix_gamma)
    weight' = weight * scale                    (per output channel)
    bias' = (bias - moving_mean) * scale + beta (bias 0 without one)

and a relu after it becomes the kernel's own post-op: one oneDNN call
(``conv_dnnl.inference_forward``) instead of a convolution, a BatchNorm and
an activation each passing over the whole output. The weights are folded
again on each call, by the reorder into the kernel's blocked layout that
every call makes anyway (``conv_dnnl``'s scaled reorder), so writes into
the parameters are always seen at no extra pass. The result
differs from the separate steps by rounding only (another order of the same
operations).

A training pass (``forward(is_train=True)`` of such an executor), and
inference where oneDNN does not take the arrays (not float32 NumPy,
``REBIND_CONV_KERNELS`` naming other kernels), run the replaced steps' own
forward and backward with their own contexts: the same values bit for bit,
the moving statistics updated as BatchNorm does.

The rewrite is made for plans bound without gradients (``Plan.inference_only``:
a module bound ``for_training=False``), so training plans keep their own
rewrites (the relu's gradient in place, its derivative applied by a max
pooling). ``find`` takes, on CPU (NumPy) plans, a plain Convolution with
a channel-first layout whose output only a plain BatchNorm (``axis`` the
channels, one visible output) reads, on the same context; neither moves its
inputs and the value between them is no output of the graph. A relu
Activation joins when it alone reads the BatchNorm's output, likewise.
"""

import attrs
import numpy as np

from ..ops import conv_dnnl, conv_ort
from ..ops.base import OpDef
from ..ops.conv import _conv_window
from .fused_ops import _not_for_symbols, replaced
from .inplace_grads import readers_of

__all__ = ["CONV_BATCHNORM", "ConvBatchNormParams", "find", "fused_step", "replace"]

_CHANNEL_FIRST = (None, "NCW", "NCHW", "NCDHW")


@attrs.frozen(eq=False)
class ConvBatchNormParams:
    """The replaced steps' ops, contexts and parameters (``activation``: None without one)."""

    conv: tuple
    batch_norm: tuple
    activation: object = None


def _run(ctx, kept, inputs, aux):
    """A replaced step's forward in ``ctx``'s mode (training or inference)."""
    op, train_ctx, infer_ctx, params = kept
    return op.forward(train_ctx if ctx.is_train else infer_ctx, params, inputs, aux)


def _forward(ctx, p, inputs, aux):
    if not ctx.is_train:
        out = _folded_forward(ctx, p, inputs, aux)
        if out is not None:
            return [out], None
    split = len(inputs) - 2  # the convolution's inputs, then gamma and beta
    (out,), conv_saved = _run(ctx, p.conv, inputs[:split], [])
    outs, bn_saved = _run(ctx, p.batch_norm, [out, *inputs[split:]], aux)
    out, act_saved = outs[0], None
    if p.activation is not None:
        (out,), act_saved = _run(ctx, p.activation, [out], [])
    return [out], (conv_saved, bn_saved, act_saved)


def _folded_forward(ctx, p, inputs, aux):
    """The inference output as one oneDNN convolution; None where oneDNN does not take it."""
    conv_params, bn_params = p.conv[3], p.batch_norm[3]
    split = len(inputs) - 2
    data, weight, *bias = inputs[:split]
    (gamma, beta), (mean, var) = inputs[split:], aux
    window = _conv_window(conv_params, data.shape[2:])
    setting = conv_ort.kernels_setting()
    if not conv_dnnl.takes(ctx.xp, [*inputs, *aux], len(window.kernel), setting):
        return None
    # the per-channel constants in float64 (vectors: cheap), the weights in float32
    scale = 1 / np.sqrt(var.astype(np.float64) + bn_params.eps)
    if not bn_params.fix_gamma:
        scale *= gamma
    shift = beta - mean * scale
    if bias:
        shift += bias[0] * scale
    relu, groups = p.activation is not None, conv_params.num_group
    # the weights are scaled by the reorder into the kernel's layout, made each call anyway
    scale, shift = scale.astype(np.float32), shift.astype(np.float32)
    return conv_dnnl.inference_forward(data, weight, shift, window, groups, relu, scale)


def _backward(ctx, p, saved, out_grads, need_grad):
    conv_saved, bn_saved, act_saved = saved
    split = len(need_grad) - 2
    need_conv = list(need_grad[:split])
    need_bn = [any(need_conv), *need_grad[split:]]
    grad = out_grads[0]
    if p.activation is not None and any(need_bn):
        act_op, act_train, _, act_params = p.activation
        (grad,) = act_op.backward(act_train, act_params, act_saved, [grad], [True])
    # always run: BatchNorm moves its statistics in backward
    bn_op, bn_train, _, bn_params = p.batch_norm
    bn_grads = bn_op.backward(bn_train, bn_params, bn_saved, [grad], need_bn)
    conv_grads = [None] * split
    if any(need_conv):
        conv_op, conv_train, _, conv_params = p.conv
        conv_grads = conv_op.backward(conv_train, conv_params, conv_saved, [bn_grads[0]], need_conv)
    return [*conv_grads, *bn_grads[1:]]


def _arguments(p):
    conv_op, _, _, conv_params = p.conv
    return (*conv_op.arguments(conv_params), "gamma", "beta")


CONV_BATCHNORM = OpDef(
    name="_conv_BatchNorm",
    params=ConvBatchNormParams,
    arguments=_arguments,
    aux_states=("moving_mean", "moving_var"),
    infer_shape=_not_for_symbols,
    forward=_forward,
    backward=_backward,
    doc="Convolution, BatchNorm and an optional relu; one oneDNN convolution in inference.",
)


# -- finding them --------------------------------------------------------------------------


def _plain(step):
    """The op's own kernel on NumPy, its inputs on its own context."""
    return step.op is step.node.op and not step.moves and step.xp is np


def _sole_reader(slot, readers, kept):
    """The step reading ``slot`` as input 0 when it alone reads it and the value is not kept."""
    found = readers.get(slot, ())
    if slot in kept or len(found) != 1 or found[0][1] != 0:
        return None
    return found[0][0]


def find(plan):
    """``(Convolution, BatchNorm, relu Activation or None)`` step triples one step can replace."""
    readers, kept = readers_of(plan), plan.kept_slots
    found = []
    for conv in plan.steps:
        if conv.op.name != "Convolution" or not _plain(conv):
            continue
        if conv.params.layout not in _CHANNEL_FIRST:
            continue
        bn = _sole_reader(conv.outputs[0], readers, kept)
        shape = plan.slot_shapes[conv.outputs[0]]
        if bn is None or bn.op.name != "BatchNorm" or not _plain(bn) or shape is None:
            continue
        if bn.context != conv.context or len(bn.outputs) != 1 or bn.params.axis % len(shape) != 1:
            continue
        act = _sole_reader(bn.outputs[0], readers, kept)
        relu = (
            act is not None
            and act.op.name == "Activation"
            and act.params.act_type == "relu"
            and _plain(act)
            and act.context == bn.context
        )
        found.append((conv, bn, act if relu else None))
    return found


def fused_step(plan, conv, bn, act):
    """The step standing for ``conv``, ``bn`` and ``act`` (it takes the last one's place)."""
    last = bn if act is None else act
    params = ConvBatchNormParams(
        conv=replaced(conv),
        batch_norm=replaced(bn),
        activation=None if act is None else replaced(act),
    )
    return type(last)(
        last.node,
        CONV_BATCHNORM,
        last.context,
        [*conv.inputs, *bn.inputs[1:]],
        list(bn.aux),
        list(last.outputs),
        (plan.slot_shapes[last.outputs[0]],),
        name="+".join(s.name for s in (conv, bn, act) if s is not None),
        params=params,
        output_names=list(last.output_names),
    )


def replace(plan, conv, bn, act):
    """Put the fused step in the plan where the last replaced step was; returns it."""
    fused = fused_step(plan, conv, bn, act)
    last = bn if act is None else act
    dropped = {id(conv), id(bn)} - {id(last)}
    plan.steps = [fused if s is last else s for s in plan.steps if id(s) not in dropped]
    return fused
