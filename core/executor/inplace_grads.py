"""Activation gradients computed in the memory of the gradient they receive.

An activation's backward multiplies the gradient reaching its output by the
local derivative. When that gradient comes from exactly one reader, and that
reader is a FullyConnected (alone, or fused with SoftmaxOutput), a
Convolution or a Pooling taking the activation's output as its data, the
gradient is a new array of that reader's backward that nothing else holds, so
the activation may multiply into it instead of allocating its result: the
same products, one array fewer per activation and step, as a NumPy programmer
writes ``g *= h > 0``.

``fold_into_pooling`` goes further for an activation read by a max pooling:
the pooling applies the derivative, at its (fewer) outputs.
"""

import attrs
import numpy as np

from .fused_conv import CONV_ACTIVATION
from .fused_dense import DENSE_ACTIVATION
from .fused_ops import PROJECTED_SOFTMAX_OUTPUT

__all__ = ["fold_into_pooling", "mark", "readers_of"]

# readers whose backward returns the gradient of their data (input 0) as a new array
# (or a view of one that nothing else holds)
_FRESH_DATA_GRADIENT = (
    "FullyConnected",
    PROJECTED_SOFTMAX_OUTPUT.name,
    DENSE_ACTIVATION.name,
    CONV_ACTIVATION.name,
    "Convolution",
    "Pooling",
)
# plan-only steps whose backward gives their data a fresh gradient
_FUSED_READERS = (PROJECTED_SOFTMAX_OUTPUT.name, DENSE_ACTIVATION.name, CONV_ACTIVATION.name)
# steps ending in an activation that can multiply into the gradient it receives
_ACTIVATIONS = ("Activation", DENSE_ACTIVATION.name)


def readers_of(plan):
    """slot -> ``[(step, input position)]`` of every step reading it (aux states included)."""
    readers = {}
    for step in plan.steps:
        for position, slot in enumerate((*step.inputs, *step.aux)):
            readers.setdefault(slot, []).append((step, position))
    return readers


def _activations_with_one_reader(plan):
    """``(activation step, its reader)`` where that reader alone takes the output, as data."""
    readers = readers_of(plan)
    kept = plan.kept_slots
    for step in plan.steps:
        if step.op.name not in _ACTIVATIONS or step.moves:
            continue
        slot = step.outputs[0]
        found = readers.get(slot, [])
        if slot in kept or len(found) != 1:
            continue
        reader, position = found[0]
        if position == 0 and not reader.moves:
            yield step, reader


def mark(plan):
    """Let such activations write their gradient in place; returns the steps marked."""
    marked = []
    for step, reader in _activations_with_one_reader(plan):
        if reader.op.name not in _FRESH_DATA_GRADIENT:
            continue
        if reader.op is not reader.node.op and reader.op.name not in _FUSED_READERS:
            continue  # a backend's own kernel: its gradients' memory is not known here
        step.train_ctx = attrs.evolve(step.train_ctx, grad_inplace=True)
        marked.append(step)
    return marked


def fold_into_pooling(plan):
    """Let max pooling apply the derivative of the activation before it; returns the pairs.

    An activation whose derivative follows from its output (relu, sigmoid, tanh),
    read only by a max pooling whose windows lie apart: each input element gets
    the gradient of at most one window, at its maximum, where the activation's
    output equals the pooled one. So the derivative taken at the pooled outputs,
    multiplying the gradient the pooling receives, gives the same products as
    multiplying the pooling's (four times larger) data gradient, and the
    activation passes its gradient through. Equal bit for bit, except in windows
    holding a NaN, whose every element then gets a NaN gradient. NumPy steps
    only: on a GPU the activation's backward is one fused kernel, fewer
    launches than the derivative's operations at the pooled outputs.
    """
    from ..ops.nn import INPLACE_ACT_TYPES
    from ..ops.pooling import window_of

    folded = []
    for step, pool in _activations_with_one_reader(plan):
        if step.op is not step.node.op or step.xp is not np:
            continue
        if step.params.act_type not in INPLACE_ACT_TYPES:
            continue
        if pool.op.name != "Pooling" or pool.op is not pool.node.op:
            continue
        params, shape = pool.params, plan.slot_shapes[step.outputs[0]]
        if params.pool_type != "max" or params.global_pool or not shape or len(shape) < 3:
            continue
        if window_of(params, shape[2:]).overlapping:
            continue
        pool.train_ctx = attrs.evolve(pool.train_ctx, grad_activation=step.params.act_type)
        step.train_ctx = attrs.evolve(step.train_ctx, grad_passthrough=True)
        folded.append((step, pool))
    return folded
