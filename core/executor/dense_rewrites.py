"""The feed-forward rewrites' finders (``optimize.py`` applies them, and says what each does).

Activations in place after a product (``inplace_activations``), an MLP's
hidden layers computed column-major (``column_major_products``) and a
FullyConnected read only by a plain SoftmaxOutput made one step
(``projected_softmaxes`` and ``fused_softmax_step``).
"""

import attrs
import numpy as np

from . import inplace_grads
from .batched import use_counts
from .fused_ops import PROJECTED_SOFTMAX_OUTPUT, ProjectedSoftmaxParams

__all__ = [
    "column_major_products",
    "fused_softmax_step",
    "inplace_activations",
    "projected_softmaxes",
]


# producers whose saved state never refers to their output, so a consumer may
# overwrite that output without changing their backward
_OUTPUT_NOT_SAVED = ("FullyConnected", "Convolution")


def inplace_activations(plan):
    """Activations whose input is a FullyConnected output that nothing else reads."""
    from ..ops.nn import INPLACE_ACT_TYPES

    producers = {slot: step for step in plan.steps for slot in step.outputs}
    uses = use_counts(plan.steps)
    kept = plan.kept_slots
    found = []
    for step in plan.steps:
        if step.op.name != "Activation" or step.params.act_type not in INPLACE_ACT_TYPES:
            continue
        slot = step.inputs[0]
        producer = producers.get(slot)
        if (
            producer is not None
            and producer.op.name in _OUTPUT_NOT_SAVED
            and uses.get(slot) == 1
            and slot not in kept
            and not step.moves
        ):
            found.append(step)
    return found


# steps whose input 0 is the data of a matrix product: they read it in any layout
_LAYOUT_FREE_DATA = ("FullyConnected", PROJECTED_SOFTMAX_OUTPUT.name)


def column_major_products(plan):
    """CPU FullyConnected steps whose output reaches only the data of other products.

    Directly, or through one in-place activation: an MLP's hidden layers. Their
    outputs may then be column-major (see ``OpContext.column_major_out``); the
    readers' data gradients follow that layout. Heads, arguments and single
    rows (a matrix-vector product) are left as they are.
    """
    readers = inplace_grads.readers_of(plan)
    kept = plan.kept_slots
    found = []
    for step in plan.steps:
        if step.op.name != "FullyConnected" or step.moves or step.xp is not np:
            continue
        slot = step.outputs[0]
        shape = plan.slot_shapes[slot]
        if shape is None or len(shape) != 2 or shape[0] < 2:
            continue
        if _read_as_product_data(slot, readers, kept, through_activation=True):
            found.append(step)
    return found


def _read_as_product_data(slot, readers, kept, through_activation):
    uses = readers.get(slot, ())
    if slot in kept or not uses:
        return False
    if through_activation and len(uses) == 1:
        reader, position = uses[0]
        if reader.op.name == "Activation" and reader.infer_ctx.inplace and position == 0:
            return _read_as_product_data(reader.outputs[0], readers, kept, False)
    return all(
        reader.op.name in _LAYOUT_FREE_DATA and position == 0 and not reader.moves
        for reader, position in uses
    )


# -- FullyConnected into SoftmaxOutput -------------------------------------------------------


def projected_softmaxes(plan):
    """``(FullyConnected step, SoftmaxOutput step)`` pairs the fused step can replace."""
    producers = {slot: step for step in plan.steps for slot in step.outputs}
    uses = use_counts(plan.steps)
    heads = set(plan.head_slots)
    pairs = []
    for step in plan.steps:
        if step.node.op.name != "SoftmaxOutput" or step.moves or not _plain_softmax(step.params):
            continue
        logits, label = step.inputs
        projection = producers.get(logits)
        if projection is None or projection.node.op.name != "FullyConnected":
            continue
        if projection.op is not projection.node.op or projection.moves:
            continue  # a backend's own kernel may keep its output: not ours to overwrite
        if projection.context != step.context or uses.get(logits) != 1 or logits in heads:
            continue
        shape, label_shape = plan.slot_shapes[logits], plan.slot_shapes[label]
        if shape is None or len(shape) != 2 or label_shape == shape:
            continue  # 2-D logits and class labels (not probabilities) only
        pairs.append((projection, step))
    return pairs


def _plain_softmax(params):
    """SoftmaxOutput whose gradient is exactly ``prob - onehot(label)`` per row."""
    return (
        params.grad_scale == 1.0
        and params.normalization == "null"
        and not params.use_ignore
        and not params.multi_output
        and not params.preserve_shape
        and not params.out_grad
        and not params.smooth_alpha
    )


def fused_softmax_step(plan, projection, softmax):
    has_bias = len(projection.inputs) == 3
    params = ProjectedSoftmaxParams(
        fc_op=projection.op,
        fc_params=projection.params,
        softmax_op=softmax.op,
        softmax_params=softmax.params,
        has_bias=has_bias,
        fc_unbiased=attrs.evolve(projection.params, no_bias=True) if has_bias else None,
    )
    return type(softmax)(
        softmax.node,
        PROJECTED_SOFTMAX_OUTPUT,
        softmax.context,
        [*projection.inputs, softmax.inputs[1]],
        [],
        list(softmax.outputs),
        (plan.slot_shapes[softmax.outputs[0]],),
        name=f"{projection.name}+{softmax.name}",
        params=params,
        output_names=list(softmax.output_names),
    )
