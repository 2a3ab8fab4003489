"""Basic slicing: slice (alias crop) over several axes, slice_axis over one.

Both follow MXNet's bounds rules: slice clips a begin or end outside the axis
(as Python does) but refuses an empty result; slice_axis refuses a range that
does not fit the axis.
The gradient scatters the head gradient into zeros at the sliced region.
"""

import ast

import attrs

from .base import OpDef, merge_shape, mismatch
from .params import param
from .shape import normalize_axis

__all__ = ["OPS", "optional_ints"]


def _to_optional_ints(value):
    """``"(None, 1, -2)"`` or ``(None, 1)`` -> a tuple of ints and Nones."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = ast.literal_eval(text) if text else ()
        except (ValueError, SyntaxError):
            raise ValueError(f"expected a tuple of integers or None, got {value!r}") from None
    if value is None:
        return ()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, (tuple, list)):
        raise ValueError(f"expected a tuple of integers or None, got {value!r}")
    out = []
    for item in value:
        if item is None or (isinstance(item, str) and item.strip() == "None"):
            out.append(None)
        elif isinstance(item, bool) or float(item) != int(item):
            raise ValueError(f"expected a tuple of integers or None, got {value!r}")
        else:
            out.append(int(item))
    return tuple(out)


def optional_ints(default=attrs.NOTHING):
    """A parameter holding a tuple whose entries are ints or None (slice's begin/end/step).

    The string arrives unconverted (kind "str") and is parsed here, since the
    shared kinds have no tuple-with-None.
    """
    return attrs.field(
        default=default,
        converter=_to_optional_ints,
        metadata={"kind": "str", "choices": None, "optional": False},
    )


# -- slice ---------------------------------------------------------------------------


@attrs.frozen
class SliceParams:
    begin: tuple = optional_ints()
    end: tuple = optional_ints()
    step: tuple = optional_ints(())

    def __attrs_post_init__(self):
        if len(self.begin) != len(self.end):
            raise ValueError(f"begin {self.begin} and end {self.end} differ in length")
        if self.step and len(self.step) != len(self.begin):
            raise ValueError(f"step {self.step} and begin {self.begin} differ in length")
        if any(s == 0 for s in self.step):
            raise ValueError(f"step {self.step} contains 0")


def _axis_range(begin, end, step, size):
    """MXNet's (begin, end) of one axis: negatives count back, then both are clipped.

    A begin past the axis (for the step's direction) becomes -1 and an end is
    clipped into [-1, size], -1 meaning 'before 0' for a negative step; the
    range is empty where begin is -1 or the pair does not run in the step's
    direction.
    """
    b = (size - 1 if step < 0 else 0) if begin is None else begin
    e = (-1 if step < 0 else size) if end is None else end
    b = b + size if b < 0 else b
    e = e + size if end is not None and e < 0 else e
    b = 0 if b < 0 and step > 0 else b
    b = size - 1 if b > size - 1 and step < 0 else b
    b = -1 if b < 0 or b > size - 1 else b
    return b, min(max(e, -1), size)


def _length(b, e, step):
    if b < 0:
        return 0
    if step > 0:
        return (e - b - 1) // step + 1 if e > b else 0
    return (b - e - 1) // -step + 1 if b > e else 0


def _slice_plan(p, shape, allow_empty=False):
    """(index tuple, output shape); dims of unknown size stay 0 in the output.

    An empty result raises (MXNet's slice cannot give a zero-size array)
    unless ``allow_empty``: slice assignment to an empty range does nothing.
    """
    if len(p.begin) > len(shape):
        raise mismatch(
            "data",
            tuple(shape),
            f"at least {len(p.begin)} dims",
            f"begin has {len(p.begin)} entries",
        )
    index, out = [], list(shape)
    for axis, (begin, end) in enumerate(zip(p.begin, p.end, strict=True)):
        step = p.step[axis] if p.step and p.step[axis] is not None else 1
        size = shape[axis]
        if not size:  # unknown size (inference only): the output size stays unknown
            index.append(slice(None))
            out[axis] = 0
            continue
        b, e = _axis_range(begin, end, step, size)
        out[axis] = _length(b, e, step)
        index.append(slice(b, None if e < 0 else e, step) if out[axis] else slice(0, 0))
        if not out[axis] and not allow_empty:
            raise mismatch(
                "data",
                tuple(shape),
                "a non-empty slice",
                f"begin {begin}, end {end}, step {step} select nothing at axis {axis} "
                f"of size {size}",
            )
    return tuple(index), tuple(out)


def _slice_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is not None:
        out_shapes = [merge_shape(_slice_plan(p, data)[1], out_shapes[0], "output")]
    return in_shapes, out_shapes, aux_shapes


def _slice_forward(ctx, p, inputs, aux):
    data = inputs[0]
    index, _ = _slice_plan(p, data.shape)
    return [data[index]], (index, data.shape, data.dtype)


def _scatter_into_zeros(ctx, p, saved, out_grads, need_grad):
    index, shape, dtype = saved
    if not need_grad[0]:
        return [None]
    grad = ctx.xp.zeros(shape, dtype=out_grads[0].dtype)
    grad[index] = out_grads[0]
    return [grad]


SLICE = OpDef(
    name="slice",
    aliases=("crop",),
    params=SliceParams,
    infer_shape=_slice_infer_shape,
    forward=_slice_forward,
    backward=_scatter_into_zeros,
    doc="data[begin:end:step] over the leading axes; None entries take the default.",
)


# -- slice_axis ----------------------------------------------------------------------


@attrs.frozen
class SliceAxisParams:
    axis: int = param("int")
    begin: int = param("int")
    end: int = param("int", optional=True)


def _slice_axis_plan(p, shape):
    axis = normalize_axis(p.axis, len(shape), shape)
    size = shape[axis]
    out = list(shape)
    if not size:
        return axis, None, tuple(out)
    begin = p.begin + size if p.begin < 0 else p.begin
    end = size if p.end is None else (p.end + size if p.end < 0 else p.end)
    if not (0 <= begin < end <= size):
        raise mismatch(
            "data",
            tuple(shape),
            f"a size at axis {axis} that fits [{p.begin}, {p.end})",
            f"begin {p.begin}, end {p.end} do not fit size {size}",
        )
    out[axis] = end - begin
    return axis, slice(begin, end), tuple(out)


def _slice_axis_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is not None:
        out_shapes = [merge_shape(_slice_axis_plan(p, data)[2], out_shapes[0], "output")]
    return in_shapes, out_shapes, aux_shapes


def _slice_axis_forward(ctx, p, inputs, aux):
    data = inputs[0]
    axis, span, _ = _slice_axis_plan(p, data.shape)
    index = (slice(None),) * axis + (span,)
    return [data[index]], (index, data.shape, data.dtype)


SLICE_AXIS = OpDef(
    name="slice_axis",
    params=SliceAxisParams,
    infer_shape=_slice_axis_infer_shape,
    forward=_slice_axis_forward,
    backward=_scatter_into_zeros,
    doc="data[begin:end] along one axis (end None: to the end; negatives count back).",
)

OPS = [SLICE, SLICE_AXIS]
