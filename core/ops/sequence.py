"""Sequence operators: SequenceLast, SequenceMask, SequenceReverse.

Each works along a time axis (0, or 1 where MXNet allows it; the batch axis
is the other of the first two) with optional per-sample lengths, the
``sequence_length`` argument of shape (batch,). MXNet reads lengths stored
as floats and truncates them to integers. ``sequence_length`` gets no
gradient and keeps its own dtype (``lengths_keep_their_type``, shared with
the RNN operator).
"""

import attrs
import numpy as np

from .base import OpDef, merge_shape, mismatch, same_type
from .params import param

__all__ = ["OPS", "lengths_keep_their_type"]


def lengths_keep_their_type(p, in_types, out_types, aux_types):
    """Every array takes data's dtype except ``sequence_length`` (the last input
    when use_sequence_length), which keeps its own and defaults to data's."""
    if not p.use_sequence_length:
        return same_type(p, in_types, out_types, aux_types)
    ins, outs, aux = same_type(p, in_types[:-1], out_types, aux_types)
    lengths = in_types[-1] if in_types[-1] is not None else (ins[0] if ins else None)
    return [*ins, lengths], outs, aux


def _only_axis_zero(instance, attribute, value):
    if value != 0:
        raise ValueError(f"axis={value} is not supported: MXNet only reverses along axis 0")


@attrs.frozen
class SequenceParams:
    use_sequence_length: bool = param("bool", False)
    axis: int = param("int", 0, choices=(0, 1))


@attrs.frozen
class SequenceMaskParams:
    use_sequence_length: bool = param("bool", False)
    value: float = param("float", 0.0)
    axis: int = param("int", 0, choices=(0, 1))


@attrs.frozen
class SequenceReverseParams:
    use_sequence_length: bool = param("bool", False)
    axis: int = param("int", 0, validator=_only_axis_zero)


def _arguments(p):
    return ("data", "sequence_length") if p.use_sequence_length else ("data",)


# -- shapes ------------------------------------------------------------------------


def _check_rank(data):
    if data is not None and len(data) < 2:
        raise mismatch(
            "data", tuple(data), "(time, batch, ...)", "sequence data must have rank 2 or more"
        )


def _lengths_shape(p, data, in_shapes):
    """Fill sequence_length's shape (batch,) from data."""
    if p.use_sequence_length and data is not None:
        in_shapes[1] = merge_shape((data[1 - p.axis],), in_shapes[1], "sequence_length")
    return in_shapes


def _same_shape_infer(p, in_shapes, out_shapes, aux_shapes):
    data = merge_shape(in_shapes[0], out_shapes[0], "output")
    _check_rank(data)
    in_shapes[0] = data
    return _lengths_shape(p, data, in_shapes), [data], aux_shapes


def _last_infer(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    _check_rank(data)
    if data is not None:
        out_shapes = [merge_shape((data[1 - p.axis], *data[2:]), out_shapes[0], "output")]
    return _lengths_shape(p, data, in_shapes), out_shapes, aux_shapes


# -- kernels -------------------------------------------------------------------------


def _int_lengths(xp, lengths, steps):
    """Lengths truncated to integers (as MXNet casts them), within [0, steps]."""
    return xp.clip(lengths.astype(np.int64), 0, steps)


def _time_major(xp, array, axis):
    """A (time, batch, ...) view of ``array``."""
    return array if axis == 0 else xp.swapaxes(array, 0, 1)


def _mask_keep(xp, p, data, lengths):
    """True where (time, batch) lies within the sample's length, shaped to broadcast on data."""
    steps = data.shape[p.axis]
    keep = xp.arange(steps)[:, None] < _int_lengths(xp, lengths, steps)[None, :]
    keep = keep if p.axis == 0 else keep.T
    return keep.reshape(keep.shape + (1,) * (data.ndim - 2))


def _mask_forward(ctx, p, inputs, aux):
    data = inputs[0]
    if not p.use_sequence_length:
        return [data.copy()], None
    xp = ctx.xp
    keep = _mask_keep(xp, p, data, inputs[1])
    out = xp.where(keep, data, xp.asarray(p.value, dtype=data.dtype))
    return [out.astype(data.dtype, copy=False)], keep


def _mask_backward(ctx, p, keep, out_grads, need_grad):
    grad, extra = out_grads[0], [None] * p.use_sequence_length
    if not need_grad[0]:
        return [None, *extra]
    if keep is None:
        return [grad.copy(), *extra]
    return [ctx.xp.where(keep, grad, ctx.xp.zeros((), dtype=grad.dtype)), *extra]


def _last_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    timed = _time_major(xp, data, p.axis)
    steps, batch = timed.shape[:2]
    if p.use_sequence_length:
        # a length of 0 has no last element; MXNet reads out of bounds, we read step 0
        last = xp.maximum(_int_lengths(xp, inputs[1], steps) - 1, 0)
    else:
        last = xp.full((batch,), steps - 1, dtype=np.int64)
    samples = xp.arange(batch)
    return [timed[last, samples]], (data.shape, data.dtype, last, samples)


def _last_backward(ctx, p, saved, out_grads, need_grad):
    extra = [None] * p.use_sequence_length
    if not need_grad[0]:
        return [None, *extra]
    shape, dtype, last, samples = saved
    grad = ctx.xp.zeros(shape, dtype=dtype)
    _time_major(ctx.xp, grad, p.axis)[last, samples] = out_grads[0]
    return [grad, *extra]


def _reverse_source(xp, steps, lengths):
    """For every (time, batch), the time step it is read from: the first
    ``length`` steps reversed, the rest in place."""
    time = xp.arange(steps)[:, None]
    lengths = _int_lengths(xp, lengths, steps)[None, :]
    return xp.where(time < lengths, lengths - 1 - time, time)


def _reverse(xp, array, source):
    if source is None:
        return xp.flip(array, axis=0).copy()
    return array[source, xp.arange(array.shape[1])[None, :]]


def _reverse_forward(ctx, p, inputs, aux):
    data = inputs[0]
    source = None
    if p.use_sequence_length:
        source = _reverse_source(ctx.xp, data.shape[0], inputs[1])
    return [_reverse(ctx.xp, data, source)], source


def _reverse_backward(ctx, p, source, out_grads, need_grad):
    # the permutation is its own inverse
    grad = _reverse(ctx.xp, out_grads[0], source) if need_grad[0] else None
    return [grad] + [None] * p.use_sequence_length


SEQUENCE_LAST = OpDef(
    name="SequenceLast",
    params=SequenceParams,
    arguments=_arguments,
    infer_shape=_last_infer,
    infer_type=lengths_keep_their_type,
    forward=_last_forward,
    backward=_last_backward,
    doc="The last element of each sequence (at length - 1, or the last step).",
)

SEQUENCE_MASK = OpDef(
    name="SequenceMask",
    params=SequenceMaskParams,
    arguments=_arguments,
    infer_shape=_same_shape_infer,
    infer_type=lengths_keep_their_type,
    forward=_mask_forward,
    backward=_mask_backward,
    doc="Steps at or past each sequence's length set to `value`; identity without lengths.",
)

SEQUENCE_REVERSE = OpDef(
    name="SequenceReverse",
    params=SequenceReverseParams,
    arguments=_arguments,
    infer_shape=_same_shape_infer,
    infer_type=lengths_keep_their_type,
    forward=_reverse_forward,
    backward=_reverse_backward,
    doc="Each sequence's first `length` steps reversed (all steps without lengths).",
)

OPS = [SEQUENCE_LAST, SEQUENCE_MASK, SEQUENCE_REVERSE]
