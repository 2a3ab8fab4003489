"""A FullyConnected and the activation after it as one plan step on a GPU.

A dense layer ``act(x . W^T + b)`` is, on a GPU, a product, a CuPy broadcast
addition of the bias and the activation's kernel forward, and backward the
activation's kernel and a column sum for the bias's gradient beside the two
products. Here the bias is added inside the activation's kernel, over the
product in place (``cupy_nn_kernels.bias_activation_forward``), and backward
one kernel writes the activation's input gradient and sums it into the bias's
gradient (``activation_backward_with_bias_sums``, the rows in order, as
``column_sums`` adds them): two launches fewer a layer and step, the same
float operations. Elsewhere (NumPy, float16, more rows than the column
kernel walks) the step runs the two replaced steps' own forward and
backward.

The rewrite (``find``) takes a plain FullyConnected with a bias, 2-D
output, read only by a relu, sigmoid or tanh Activation on the same context,
neither moved nor an output of the graph. It is made for GPU contexts only
(``ANY_DEVICE`` lets tests make it on the CPU), so CPU plans keep their own
rewrites (in-place activations, column-major products).
"""

import attrs

from rebind.backends import cupy_nn_kernels, cupy_row_kernels
from rebind.backends.cupy_kernels import fusable

from ..ops.base import OpDef
from .fused_ops import _not_for_symbols, bias_in_kernel, replaced, run_replaced

__all__ = [
    "ANY_DEVICE",
    "DENSE_ACTIVATION",
    "DenseParams",
    "activation_after",
    "find",
    "fused_step",
    "in_place_of",
    "steps_backward",
    "steps_forward",
]

# make the rewrite for every context, not only GPUs (tests)
ANY_DEVICE = False


@attrs.frozen(eq=False)
class DenseParams:
    """The replaced steps' ops, contexts and parameters; the FullyConnected's without bias."""

    fc: tuple
    activation: tuple
    fc_unbiased: object


def _dense_forward(ctx, p, inputs, aux):
    data, weight, bias = inputs
    if not bias_in_kernel(data, weight, bias):
        return steps_forward(ctx, p.fc, p.activation, inputs)
    # the product: a new C-contiguous (rows, hidden) array, which the kernel overwrites
    (product,), fc_saved = run_replaced(ctx, p.fc, [data, weight], params=p.fc_unbiased)
    act_type = p.activation[3].act_type
    out = cupy_nn_kernels.bias_activation_forward(ctx.xp, act_type, product, bias)
    return [out], ("fused", fc_saved, out)


def _dense_backward(ctx, p, saved, out_grads, need_grad):
    fc_op, fc_train, _, fc_params = p.fc
    kind, fc_saved, rest = saved
    grad = out_grads[0]
    if kind == "fused" and _bias_sums_apply(rest, grad):
        inplace = ctx.grad_inplace
        d_pre = grad if inplace else ctx.xp.empty(grad.shape, dtype=grad.dtype)
        d_bias = cupy_nn_kernels.activation_backward_with_bias_sums(
            ctx.xp, p.activation[3].act_type, rest, grad, d_pre
        )
        grads = fc_op.backward(fc_train, fc_params, fc_saved, [d_pre], [*need_grad[:2], False])
        return [*grads[:2], d_bias if need_grad[2] else None]
    act_saved = (None, rest) if kind == "fused" else rest
    return steps_backward(ctx, p.fc, p.activation, (fc_saved, act_saved), grad, need_grad)


def steps_forward(ctx, producer, activation, inputs):
    """The replaced steps' forward: ``([out], ("steps", producer's saved, activation's))``."""
    (product,), producer_saved = run_replaced(ctx, producer, inputs)
    (out,), act_saved = run_replaced(ctx, activation, [product])
    return [out], ("steps", producer_saved, act_saved)


def steps_backward(ctx, producer, activation, saved, grad, need_grad):
    """The replaced steps' backward from the output's gradient; ``saved`` is both steps'."""
    op, train, _, params = producer
    act_op, act_train, _, act_params = activation
    act_ctx = attrs.evolve(act_train, grad_inplace=ctx.grad_inplace)
    (d_pre,) = act_op.backward(act_ctx, act_params, saved[1], [grad], [True])
    return op.backward(train, params, saved[0], [d_pre], need_grad)


def _bias_sums_apply(out, grad):
    """Whether the column kernel takes these: few rows, equal C-contiguous layouts."""
    return (
        fusable(out, grad, same_shape=True, contiguous=True)
        and out.ndim == 2
        and out.shape[0] <= cupy_row_kernels.MAX_COLUMN_ROWS
    )


DENSE_ACTIVATION = OpDef(
    name="_dense_Activation",
    params=DenseParams,
    arguments=lambda p: ("data", "weight", "bias"),
    infer_shape=_not_for_symbols,
    forward=_dense_forward,
    backward=_dense_backward,
    doc="FullyConnected (with bias) and the relu, sigmoid or tanh after it as one step.",
)


# -- finding them --------------------------------------------------------------------------

_ACT_TYPES = cupy_nn_kernels.FUSED_ACTIVATIONS


def activation_after(plan, producer_name, any_device):
    """``(producer, Activation)`` step pairs where the activation alone reads the output.

    The producer is the plain ``producer_name`` op (not a backend's own), the
    activation a relu, sigmoid or tanh on the same context, on a GPU (or any
    context with ``any_device``); neither moves arrays nor has aux states, and
    the value between them is no output of the graph nor kept.
    """
    producers = {slot: step for step in plan.steps for slot in step.outputs}
    uses = {}
    for step in plan.steps:
        for slot in (*step.inputs, *step.aux):
            uses[slot] = uses.get(slot, 0) + 1
    unreadable = set(plan.head_slots) | plan.kept_slots
    for act in plan.steps:
        if act.op.name != "Activation" or act.op is not act.node.op or act.moves:
            continue
        if act.params.act_type not in _ACT_TYPES:
            continue
        if not (any_device or act.context.device_type == "gpu"):
            continue
        slot = act.inputs[0]
        producer = producers.get(slot)
        if producer is None or producer.op.name != producer_name:
            continue
        if producer.op is not producer.node.op or producer.moves or producer.aux:
            continue
        if producer.context != act.context or uses.get(slot) != 1 or slot in unreadable:
            continue
        yield producer, act


def find(plan):
    """``(FullyConnected step, Activation step)`` pairs that one step can replace."""
    pairs = []
    for fc, act in activation_after(plan, "FullyConnected", ANY_DEVICE):
        shape = plan.slot_shapes[act.inputs[0]]
        if fc.params.no_bias or len(fc.inputs) != 3 or shape is None or len(shape) != 2:
            continue
        pairs.append((fc, act))
    return pairs


def fused_step(plan, fc, act):
    """The step standing for ``fc`` and ``act`` (it takes the activation's place)."""
    params = DenseParams(
        fc=replaced(fc),
        activation=replaced(act),
        fc_unbiased=attrs.evolve(fc.params, no_bias=True),
    )
    return in_place_of(plan, fc, act, DENSE_ACTIVATION, params)


def in_place_of(plan, producer, act, op, params):
    """A step of ``op`` over ``producer``'s inputs giving ``act``'s outputs."""
    return type(act)(
        act.node,
        op,
        act.context,
        list(producer.inputs),
        [],
        list(act.outputs),
        (plan.slot_shapes[act.outputs[0]],),
        name=f"{producer.name}+{act.name}",
        params=params,
        output_names=list(act.output_names),
    )
