"""Activation gradients computed in the memory of the gradient they receive.

An activation's backward multiplies the gradient reaching its output by the
local derivative. When that gradient comes from exactly one reader, and that
reader is a FullyConnected (alone, or fused with SoftmaxOutput), a
Convolution or a Pooling taking the activation's output as its data, the
gradient is a new array of that reader's backward that nothing else holds, so the activation may
multiply into it instead of allocating its result: the same products, one
array fewer per activation and step, as a NumPy programmer writes
``g *= h > 0``.
"""

import attrs

from .fused_ops import PROJECTED_SOFTMAX_OUTPUT

__all__ = ["mark", "readers_of"]

# readers whose backward returns the gradient of their data (input 0) as a new array
# (or a view of one that nothing else holds)
_FRESH_DATA_GRADIENT = ("FullyConnected", PROJECTED_SOFTMAX_OUTPUT.name, "Convolution", "Pooling")


def readers_of(plan):
    """slot -> ``[(step, input position)]`` of every step reading it (aux states included)."""
    readers = {}
    for step in plan.steps:
        for position, slot in enumerate((*step.inputs, *step.aux)):
            readers.setdefault(slot, []).append((step, position))
    return readers


def mark(plan):
    """Let such activations write their gradient in place; returns the steps marked."""
    readers = readers_of(plan)
    kept = plan.kept_slots
    marked = []
    for step in plan.steps:
        if step.op.name != "Activation" or step.moves:
            continue
        slot = step.outputs[0]
        found = readers.get(slot, [])
        if slot in kept or len(found) != 1:
            continue
        reader, position = found[0]
        if position != 0 or reader.op.name not in _FRESH_DATA_GRADIENT or reader.moves:
            continue
        if reader.op is not reader.node.op and reader.op.name != PROJECTED_SOFTMAX_OUTPUT.name:
            continue  # a backend's own kernel: its gradients' memory is not known here
        step.train_ctx = attrs.evolve(step.train_ctx, grad_inplace=True)
        marked.append(step)
    return marked
