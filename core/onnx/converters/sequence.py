"""SequenceMask, SequenceLast and SequenceReverse to ONNX.

Lengths are read as MXNet does: cast to integers (truncated) and held
within [0, T]. The time axis (``axis``) has its concrete export size even
with ``g.dynamic`` (only the batch axis is symbolic), so the step indices
are constants.

- SequenceMask: ``Where(step < length, data, value)``; Identity without lengths.
- SequenceLast: ``Gather`` of step T-1, or per sample ``GatherND`` (batch
  first) of step ``max(length - 1, 0)``, as rebind reads step 0 for length 0.
- SequenceReverse: ``Slice`` with step -1, or ``ReverseSequence`` with lengths.

Small constants are 1-element tensors (they broadcast like scalars).
"""

import numpy as np

from ..graph import tensor_type
from . import converter
from .tensor_helpers import INT64_MIN, ints, scalar

__all__ = ["convert_sequence_mask", "convert_sequence_last", "convert_sequence_reverse"]


def _steps(node):
    return node.in_shapes[0][node.params.axis]


def _int_lengths(node, g, low=0):
    """sequence_length as int64, clipped to [low, T]."""
    as_int = g.add_node(
        "Cast", [node.inputs[1]], [g.fresh(f"{node.name}_len")], to=tensor_type("int64")
    )
    low = g.add_node("Max", [as_int, ints(g, [low])], [g.fresh(f"{node.name}_len_low")])
    return g.add_node("Min", [low, ints(g, [_steps(node)])], [g.fresh(f"{node.name}_len_clip")])


@converter("SequenceMask")
def convert_sequence_mask(node, g):
    """Steps at or past each length set to ``value`` (Identity without lengths)."""
    p = node.params
    data, out = node.inputs[0], node.outputs[0]
    if not p.use_sequence_length:
        g.add_node("Identity", [data], [out])
        return
    lengths = _int_lengths(node, g)
    steps = np.arange(_steps(node), dtype=np.int64)
    # (T, 1) against (N,) for time-major data, (1, T) against (N, 1) for batch-major
    if p.axis == 0:
        time = g.const(steps[:, None], np.int64, f"{node.name}_steps")
    else:
        time = g.const(steps[None, :], np.int64, f"{node.name}_steps")
        lengths = g.add_node(
            "Unsqueeze", [lengths, ints(g, [1])], [g.fresh(f"{node.name}_len_col")]
        )
    keep = g.add_node("Less", [time, lengths], [g.fresh(f"{node.name}_keep")])
    rank = len(node.in_shapes[0])
    if rank > 2:
        axes = ints(g, range(2, rank), f"{node.name}_axes")
        keep = g.add_node("Unsqueeze", [keep, axes], [g.fresh(f"{node.name}_keep_nd")])
    value = scalar(g, p.value, node.in_dtypes[0], f"{node.name}_value")
    g.add_node("Where", [keep, data, value], [out])


@converter("SequenceLast")
def convert_sequence_last(node, g):
    """The last step (of each sample's length) along ``axis``."""
    p = node.params
    data, out = node.inputs[0], node.outputs[0]
    if not p.use_sequence_length:
        last = g.add_node(
            "Gather",
            [data, ints(g, [_steps(node) - 1])],
            [g.fresh(f"{node.name}_last")],
            axis=p.axis,
        )
        g.add_node("Squeeze", [last, ints(g, [p.axis])], [out])
        return
    lengths = _int_lengths(node, g, low=1)
    last = g.add_node("Sub", [lengths, ints(g, [1])], [g.fresh(f"{node.name}_i")])
    index = g.add_node("Unsqueeze", [last, ints(g, [1])], [g.fresh(f"{node.name}_index")])
    if p.axis == 0:
        perm = [1, 0, *range(2, len(node.in_shapes[0]))]
        data = g.add_node("Transpose", [data], [g.fresh(f"{node.name}_ntc")], perm=perm)
    g.add_node("GatherND", [data, index], [out], batch_dims=1)


@converter("SequenceReverse")
def convert_sequence_reverse(node, g):
    """Each sample's first ``length`` steps reversed (all steps without lengths)."""
    data, out = node.inputs[0], node.outputs[0]
    if not node.params.use_sequence_length:
        inputs = [data, ints(g, [-1]), ints(g, [INT64_MIN]), ints(g, [0]), ints(g, [-1])]
        g.add_node("Slice", inputs, [out])
        return
    lengths = _int_lengths(node, g)
    g.add_node("ReverseSequence", [data, lengths], [out], batch_axis=1, time_axis=0)
