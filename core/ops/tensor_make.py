"""Operators behind ``mx.nd``/``mx.sym`` helpers: _eye, _linspace, _histogram, _split_v2,
and the creator _zeros_without_dtype.

``eye``, ``linspace``, ``histogram`` and ``split_v2`` in ``ndarray/helpers.py``
and ``symbol/helpers.py`` compose these, as MXNet's Python wrappers do.
"""

import attrs

from .base import OpDef, merge_shape, mismatch
from .params import non_negative, param

__all__ = ["OPS"]

EYE_DTYPES = ("float16", "float32", "float64", "int32", "int64", "int8", "uint8")


# -- _eye --------------------------------------------------------------------------------


@attrs.frozen
class EyeParams:
    N: int = param("int", validator=non_negative)  # noqa: N815 - MXNet's name
    M: int = param("int", 0, validator=non_negative)  # noqa: N815
    k: int = param("int", 0)
    ctx: str = param("str", "")  # placement is the caller's; the value is not used
    dtype: str = param("dtype", "float32", choices=EYE_DTYPES)


def _eye_shape(p):
    return (p.N, p.M or p.N)


def _eye_forward(ctx, p, inputs, aux):
    with ctx.backend.device(ctx.device_id):
        out = ctx.xp.eye(*_eye_shape(p), k=p.k, dtype=p.dtype)
    return [out], None


def _dtype_out(p, in_types, out_types, aux_types):
    return in_types, [p.dtype], aux_types


# -- _linspace ---------------------------------------------------------------------------

LINSPACE_DTYPES = ("float16", "float32", "float64", "int32", "int64", "int8", "uint8")


@attrs.frozen
class LinspaceParams:
    start: float = param("float")
    stop: float = param("float")
    num: int = param("int", validator=non_negative)
    endpoint: bool = param("bool", True)
    ctx: str = param("str", "")
    dtype: str = param("dtype", "float32", choices=LINSPACE_DTYPES)


def _linspace_forward(ctx, p, inputs, aux):
    xp = ctx.xp
    # MXNet computes start + step * i in double, then casts to the dtype
    step = (p.stop - p.start) / max(1, p.num - 1 if p.endpoint else p.num)
    with ctx.backend.device(ctx.device_id):
        values = p.start + step * xp.arange(p.num, dtype="float64")
        if p.endpoint and p.num > 1:
            values[-1] = p.stop
    return [values.astype(p.dtype)], None


# -- _histogram -----------------------------------------------------------------------------


def _range_pair(instance, attribute, value):
    if value is not None and len(value) != 2:
        raise ValueError(f"range must be (min, max), got {value}")


@attrs.frozen
class HistogramParams:
    bin_cnt: int = param("int", None, optional=True)
    range: tuple = param("floats", None, optional=True, validator=_range_pair)

    def __attrs_post_init__(self):
        if (self.bin_cnt is None) != (self.range is None):
            raise ValueError("_histogram: bin_cnt and range are given together or not at all")


def _histogram_arguments(p):
    return ("data",) if p.bin_cnt is not None else ("data", "bins")


def _histogram_infer(p, in_shapes, out_shapes, aux_shapes):
    if p.bin_cnt is not None:
        counts, edges = (p.bin_cnt,), (p.bin_cnt + 1,)
    else:
        bins = in_shapes[1]
        if bins is None:
            return in_shapes, out_shapes, aux_shapes
        if len(bins) != 1 or 0 < bins[0] < 2:
            raise mismatch("bins", tuple(bins), "(n,) with n >= 2", "bins holds the bin edges")
        counts, edges = (bins[0] - 1 if bins[0] else 0,), tuple(bins)
    return (
        in_shapes,
        [merge_shape(counts, out_shapes[0]), merge_shape(edges, out_shapes[1])],
        aux_shapes,
    )


def _histogram_type(p, in_types, out_types, aux_types):
    return in_types, ["int64", in_types[0] or out_types[1]], aux_types


def _histogram_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    if p.bin_cnt is not None:
        low, high = p.range
        steps = xp.arange(p.bin_cnt + 1, dtype="float64")
        edges = ((high * steps + (p.bin_cnt - steps) * low) / p.bin_cnt).astype(data.dtype)
    else:
        edges = inputs[1]
    values = data.reshape(-1)
    inside = (values >= edges[0]) & (values <= edges[-1])
    # the bin whose left edge is the last one <= value; the top edge closes the last bin
    bins = xp.searchsorted(edges, values[inside], side="right") - 1
    bins = xp.minimum(bins, edges.size - 2)
    counts = xp.bincount(bins, minlength=edges.size - 1).astype("int64")
    return [counts, edges.copy() if p.bin_cnt is None else edges], None


# -- _split_v2 -------------------------------------------------------------------------------


@attrs.frozen
class SplitV2Params:
    indices: tuple = param("shape")
    axis: int = param("int", 1)
    squeeze_axis: bool = param("bool", False)
    sections: int = param("int", 0, validator=non_negative)


def _split_count(p):
    return p.sections if p.sections > 0 else len(p.indices)


def _split_bounds(p, size):
    """[(start, end)] of each piece along the axis."""
    if p.sections > 0:
        step = size // p.sections
        starts = [i * step for i in range(p.sections)]
    else:
        starts = list(p.indices)
    ends = [*starts[1:], size]
    return list(zip(starts, ends, strict=True))


def _split_infer(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    axis = p.axis + len(data) if p.axis < 0 else p.axis
    if not 0 <= axis < len(data):
        raise mismatch("data", tuple(data), f"more than {p.axis} axes", "split axis out of range")
    if not data[axis]:
        return in_shapes, out_shapes, aux_shapes
    if p.sections > 0 and data[axis] % p.sections:
        raise mismatch(
            "data",
            tuple(data),
            f"a size divisible by {p.sections} at axis {axis}",
            "equal sections",
        )
    shapes = []
    for start, end in _split_bounds(p, data[axis]):
        if not start <= end <= data[axis]:
            raise mismatch(
                "data", tuple(data), f"size >= {end} at axis {axis}", f"indices {p.indices}"
            )
        if p.squeeze_axis and end - start != 1:
            raise mismatch(
                "data", tuple(data), f"pieces of length 1 at axis {axis}", "squeeze_axis=True"
            )
        piece = (*data[:axis], end - start, *data[axis + 1 :])
        shapes.append(piece[:axis] + piece[axis + 1 :] if p.squeeze_axis else piece)
    return (
        in_shapes,
        [merge_shape(s, o) for s, o in zip(shapes, out_shapes, strict=True)],
        aux_shapes,
    )


def _split_forward(ctx, p, inputs, aux):
    data = inputs[0]
    axis = p.axis % data.ndim
    outs = []
    for start, end in _split_bounds(p, data.shape[axis]):
        piece = data[(slice(None),) * axis + (slice(start, end),)]
        outs.append(
            piece.reshape(piece.shape[:axis] + piece.shape[axis + 1 :]) if p.squeeze_axis else piece
        )
    return outs, (data.shape, axis)


def _split_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    shape, axis = saved
    pieces = []
    for (start, end), grad in zip(_split_bounds(p, shape[axis]), out_grads, strict=True):
        pieces.append(grad.reshape((*shape[:axis], end - start, *shape[axis + 1 :])))
    return [ctx.xp.concatenate(pieces, axis=axis)]


def _split_backward_forward(ctx, p, inputs, aux):
    """_split_v2_backward: the pieces' gradients joined back (MXNet's internal op)."""
    axis = p.axis % (inputs[0].ndim + (1 if p.squeeze_axis else 0))
    pieces = [ctx.xp.expand_dims(g, axis) if p.squeeze_axis else g for g in inputs]
    return [ctx.xp.concatenate(pieces, axis=axis)], None


# -- _zeros_without_dtype ----------------------------------------------------------------------


@attrs.frozen
class ZerosWithoutDTypeParams:
    shape: tuple = param("shape", ())
    ctx: str = param("str", "")
    dtype: int = param("int", -1)


def _zeros_wd_infer(p, in_shapes, out_shapes, aux_shapes):
    return in_shapes, [merge_shape(tuple(p.shape) or None, out_shapes[0])], aux_shapes


def _zeros_wd_type(p, in_types, out_types, aux_types):
    # -1 leaves the dtype to the graph; MXNet's type flags otherwise
    flags = ("float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool")
    return (
        in_types,
        [flags[p.dtype] if 0 <= p.dtype < len(flags) else out_types[0] or "float32"],
        aux_types,
    )


def _zeros_wd_forward(ctx, p, inputs, aux):
    shape = ctx.out_shapes[0] if ctx.out_shapes and ctx.out_shapes[0] else tuple(p.shape)
    dtype = _zeros_wd_type(p, [], [None], [])[1][0]
    return [ctx.backend.full(shape, 0, dtype, ctx.device_id)], None


OPS = [
    OpDef(
        name="_eye",
        params=EyeParams,
        arguments=(),
        infer_shape=lambda p, i, o, a: (i, [merge_shape(_eye_shape(p), o[0])], a),
        infer_type=_dtype_out,
        forward=_eye_forward,
        doc="An N x M (M=0: N) matrix with ones on diagonal k.",
    ),
    OpDef(
        name="_linspace",
        params=LinspaceParams,
        arguments=(),
        infer_shape=lambda p, i, o, a: (i, [merge_shape((p.num,), o[0])], a),
        infer_type=_dtype_out,
        forward=_linspace_forward,
        doc="num evenly spaced values from start to stop (included when endpoint).",
    ),
    OpDef(
        name="_histogram",
        params=HistogramParams,
        arguments=_histogram_arguments,
        outputs=("output0", "output1"),
        infer_shape=_histogram_infer,
        infer_type=_histogram_type,
        forward=_histogram_forward,
        doc="Counts (int64) of data in bin_cnt bins over range, or in bins; and the edges.",
    ),
    OpDef(
        name="_split_v2",
        params=SplitV2Params,
        outputs=lambda p: tuple(f"output{i}" for i in range(_split_count(p))),
        infer_shape=_split_infer,
        forward=_split_forward,
        backward=_split_backward,
        doc="Split data along axis at indices (starts of pieces) or into equal sections.",
    ),
    OpDef(
        name="_split_v2_backward",
        params=SplitV2Params,
        arguments=lambda p: tuple(f"arg{i}" for i in range(_split_count(p))),
        infer_shape=lambda p, i, o, a: (i, o, a),
        forward=_split_backward_forward,
        doc="The gradient of _split_v2: its output gradients joined along axis (internal).",
    ),
    OpDef(
        name="_zeros_without_dtype",
        params=ZerosWithoutDTypeParams,
        arguments=(),
        infer_shape=_zeros_wd_infer,
        infer_type=_zeros_wd_type,
        forward=_zeros_wd_forward,
        doc="Zeros of shape whose dtype (-1) the graph decides.",
    ),
]
