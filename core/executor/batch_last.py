"""Convolution stacks kept in the convolution's own memory order between steps (CPU).

NumPy's convolution works batch last: its columns, products and sums run over
``(C, *spatial, N)`` arrays (``ops/conv_utils.py``), and every call converted
its input to that order and its output back to MXNet's ``(N, C, *spatial)``:
two transposes of every activation in forward, two more of every gradient in
backward. Between two convolutions of a LeNet-style stack the activations and
pooling in between then run on ``(N, C, *spatial)`` arrays, whose pooling taps
step through memory two elements at a time.

When every reader of a convolution's output takes any memory layout, the
convolution hands over its batch-last result as it is, as a transposed view
that has MXNet's shape and values (``OpContext.batch_last_out``):

* activations (element-wise ufuncs) and pooling (ufuncs over strided taps,
  results allocated in their input's memory order) give their results in the
  same order, so the whole stack runs with the batch as the innermost,
  contiguous axis;
* a following convolution takes the view back as its working array, no copy;
* Flatten and FullyConnected, where the stack ends, copy it into MXNet's
  order (what the transpose did), so their products are the plain graph's.

The data gradient of a convolution whose input is such a view flows back the
same way (``OpContext.batch_last_grad``). The same kernels make the same sums,
so values are unchanged bit for bit, with two exceptions, equal to float
rounding: a convolution with output rows of 16 or more, which alone works as
``(C, N, *spatial)``, works batch last here, so its weight and bias gradients
sum the columns in another order; and global pooling of a view reduces it in
its memory order. Heads, kept slots (arguments, aux states) and anything read
by another operator keep MXNet's order. The rewrite is for NumPy steps only,
and off with the rest under ``REBIND_GRAPH_OPT=0`` or a monitor.
"""

import attrs
import numpy as np

from .fused_ops import PROJECTED_SOFTMAX_OUTPUT
from .inplace_grads import readers_of

__all__ = ["mark"]

# one input, one output in the memory order of that input
_FOLLOWING = ("Activation", "Pooling")
# read an array in any layout and write their own in C order
_TAKING = ("Convolution", "Flatten", "FullyConnected", PROJECTED_SOFTMAX_OUTPUT.name)


def mark(plan):
    """Flag the convolutions that may hand over batch-last views; returns their steps."""
    readers = readers_of(plan)
    kept = plan.kept_slots

    def plain(step):
        # the generic kernel on NumPy (or the fused output layer made of them), inputs
        # on its own context, no aux states
        generic = step.op is step.node.op or step.op is PROJECTED_SOFTMAX_OUTPUT
        return generic and not step.moves and not step.aux and step.xp is np

    def takes_any_layout(slot):
        uses = readers.get(slot, ())
        if slot in kept or not uses:
            return False
        for reader, position in uses:
            if position != 0 or not plain(reader):
                return False
            name = reader.op.name
            if name in _TAKING:
                continue
            if name not in _FOLLOWING:
                return False
            first, *hidden = reader.outputs
            if any(s in kept or s in readers for s in hidden):
                return False
            if not takes_any_layout(first):
                return False
        return True

    marked = []
    region = set()  # slots holding batch-last views in forward
    for step in plan.steps:
        name = step.op.name
        if name == "Convolution" and plain(step) and takes_any_layout(step.outputs[0]):
            step.train_ctx = attrs.evolve(step.train_ctx, batch_last_out=True)
            step.infer_ctx = attrs.evolve(step.infer_ctx, batch_last_out=True)
            region.add(step.outputs[0])
            marked.append(step)
        elif name in _FOLLOWING and step.inputs and step.inputs[0] in region:
            region.add(step.outputs[0])
    for step in plan.steps:
        if step.op.name == "Convolution" and plain(step) and step.inputs[0] in region:
            # its data gradient goes to a step whose output is a batch-last view
            step.train_ctx = attrs.evolve(step.train_ctx, batch_last_grad=True)
    return marked
