"""A Convolution and the activation after it as one plan step on a GPU.

On a GPU a convolution's forward adds its bias (a CuPy broadcast addition)
and copies its output from the working layout into (N, C, *spatial); the
activation then runs its kernel; backward, the activation's kernel, then
the copy back into the working layout that the convolution's products read.
Here the bias, the activation and the layout change are one kernel each way
(``cupy_conv_kernels``), the same float operations: three launches fewer per
convolution and step (six a LeNet batch). Elsewhere (NumPy, float16) the step
runs the two replaced steps' own forward and backward.

The rewrite (``find``) takes a plain Convolution with a bias, read only by a
relu, sigmoid or tanh Activation on the same context, neither moved nor an
output of the graph. It is made for GPU contexts only (``ANY_DEVICE`` lets
tests make it on the CPU), so CPU plans keep their own rewrites (batch-last
views, the activation's derivative applied by a max pooling).
"""

import attrs

from rebind.backends import cupy_conv_kernels
from rebind.backends.cupy_kernels import fusable

from ..ops.base import OpDef
from ..ops.conv import conv_work_backward, conv_work_forward
from .fused_dense import activation_after, in_place_of, steps_backward, steps_forward
from .fused_ops import _not_for_symbols, replaced

__all__ = ["ANY_DEVICE", "CONV_ACTIVATION", "ConvActParams", "find", "fused_step"]

# make the rewrite for every context, not only GPUs (tests)
ANY_DEVICE = False


@attrs.frozen(eq=False)
class ConvActParams:
    """The replaced steps' ops, contexts and parameters."""

    conv: tuple
    activation: tuple


def _conv_act_forward(ctx, p, inputs, aux):
    _, conv_train, conv_infer, conv_params = p.conv
    data, weight, bias = inputs
    if not fusable(data, weight, bias, contiguous=True):
        return steps_forward(ctx, p.conv, p.activation, inputs)
    conv_ctx = conv_train if ctx.is_train else conv_infer
    work, saved = conv_work_forward(conv_ctx, conv_params, [data, weight])
    shape = (data.shape[0], conv_params.num_filter, *saved.window.out)
    out = cupy_conv_kernels.bias_activation_from_work(
        ctx.xp, p.activation[3].act_type, work, bias, shape, saved.batch_last
    )
    return [out], ("fused", saved, out)


def _conv_act_backward(ctx, p, saved, out_grads, need_grad):
    _, conv_train, _, conv_params = p.conv
    kind, conv_saved, rest = saved
    grad = out_grads[0]
    if kind == "fused" and fusable(rest, grad, same_shape=True, contiguous=True):
        grad_work = cupy_conv_kernels.activation_grad_to_work(
            ctx.xp, p.activation[3].act_type, rest, grad, conv_saved.batch_last
        )
        return conv_work_backward(conv_train, conv_params, conv_saved, grad_work, need_grad)
    act_saved = (None, rest) if kind == "fused" else rest
    return steps_backward(ctx, p.conv, p.activation, (conv_saved, act_saved), grad, need_grad)


CONV_ACTIVATION = OpDef(
    name="_conv_Activation",
    params=ConvActParams,
    arguments=lambda p: ("data", "weight", "bias"),
    infer_shape=_not_for_symbols,
    forward=_conv_act_forward,
    backward=_conv_act_backward,
    doc="Convolution (with bias) and the relu, sigmoid or tanh after it as one step.",
)


def find(plan):
    """``(Convolution step, Activation step)`` pairs that one step can replace."""
    pairs = []
    for conv, act in activation_after(plan, "Convolution", ANY_DEVICE):
        if conv.params.no_bias or len(conv.inputs) != 3:
            continue
        pairs.append((conv, act))
    return pairs


def fused_step(plan, conv, act):
    """The step standing for ``conv`` and ``act`` (it takes the activation's place)."""
    params = ConvActParams(conv=replaced(conv), activation=replaced(act))
    return in_place_of(plan, conv, act, CONV_ACTIVATION, params)
