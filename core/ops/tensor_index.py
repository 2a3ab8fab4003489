"""N-d indexing: gather_nd, scatter_nd, _scatter_set_nd, ravel/unravel of indices,
batch_take, and the legacy NDArray functions fill_element_0index and _onehot_encode.

Index arrays come in any dtype and are truncated to integers (a C cast).
``gather_nd`` wraps negative indices (MXNet adds the dimension once);
``scatter_nd`` with repeated indices keeps one of the values, as MXNet leaves
the order of such writes unspecified. Index inputs get zero gradients.
"""

import math

import attrs

from .base import OpDef, merge_shape, mismatch
from .indexing import scatter_add
from .params import param
from .tensor_extra import zero_grads

__all__ = ["OPS"]


def _positions(xp, indices, shape):
    """A tuple of integer index arrays, one per leading data axis (wrapped once)."""
    ints = indices.astype("int64")
    dims = xp.asarray(shape[: ints.shape[0]], dtype="int64").reshape((-1,) + (1,) * (ints.ndim - 1))
    return tuple((ints + dims) % dims)


def _check_nd(data_name, data, indices, out_shape=None):
    if len(indices) < 1 or indices[0] > len(data):
        raise mismatch(
            "indices",
            tuple(indices),
            f"(M, ...) with M <= {len(data)}",
            f"{data_name} has {len(data)} axes",
        )


def _first_type(p, in_types, out_types, aux_types):
    dtype = in_types[0] or out_types[0]
    return [dtype, *in_types[1:]], [dtype], aux_types


# -- gather_nd ------------------------------------------------------------------------


def _gather_infer(p, in_shapes, out_shapes, aux_shapes):
    data, indices = in_shapes
    if data is not None and indices is not None:
        _check_nd("data", data, indices)
        out = (*indices[1:], *data[indices[0] :])
        out_shapes = [merge_shape(out, out_shapes[0])]
    return in_shapes, out_shapes, aux_shapes


def _check_bounds(op_name, indices, shape):
    """MXNet's gather_nd bounds, -size <= index <= size - 1, else an IndexError."""
    leading = indices.reshape(indices.shape[0], -1)
    for axis in range(indices.shape[0]):
        size = shape[axis]
        if bool(((leading[axis] > size - 1) | (leading[axis] < -size)).any()):
            raise IndexError(
                f"{op_name}: an index is out of bounds for axis {axis} with size {size}; "
                f"keep the indices in [-{size}, {size - 1}]"
            )


def _gather_forward(ctx, p, inputs, aux):
    data, indices = inputs
    _check_bounds("gather_nd", indices, data.shape)
    index = _positions(ctx.xp, indices, data.shape)
    return [data[index]], (data.shape, data.dtype, index, indices)


def _gather_backward(ctx, p, saved, out_grads, need_grad):
    shape, dtype, index, indices = saved
    grad = None
    if need_grad[0]:
        xp = ctx.xp
        work = "float32" if dtype == "float16" else dtype
        grad = xp.zeros(shape, dtype=work)
        scatter_add(xp, grad, index, out_grads[0].astype(work, copy=False))
        grad = grad.astype(dtype, copy=False)
    return [grad, ctx.xp.zeros_like(indices) if need_grad[1] else None]


# -- scatter_nd, _scatter_set_nd -------------------------------------------------------


@attrs.frozen
class ScatterNDParams:
    shape: tuple = param("shape")


def _scatter_data_shape(p, indices):
    _check_nd("the output", p.shape, indices)
    return (*indices[1:], *p.shape[indices[0] :])


def _scatter_infer(p, in_shapes, out_shapes, aux_shapes):
    data, indices = in_shapes[-2:]
    if indices is not None:
        data = merge_shape(
            _scatter_data_shape(p, indices), data, "data" if len(in_shapes) == 2 else "rhs"
        )
    ins = [*in_shapes[:-2], data, indices]
    if len(ins) == 3:
        ins[0] = merge_shape(tuple(p.shape), ins[0], "lhs")
    return ins, [merge_shape(tuple(p.shape), out_shapes[0])], aux_shapes


def _scatter_forward(ctx, p, inputs, aux):
    data, indices = inputs
    out = ctx.xp.zeros(p.shape, dtype=data.dtype)
    # MXNet writes past its buffer for an index out of range; we refuse it as gather_nd does
    _check_bounds("scatter_nd", indices, p.shape)
    index = _positions(ctx.xp, indices, p.shape)
    out[index] = data
    return [out], (index, indices)


def _scatter_backward(ctx, p, saved, out_grads, need_grad):
    index, indices = saved
    grad = out_grads[0][index] if need_grad[0] else None
    return [grad, ctx.xp.zeros_like(indices) if need_grad[1] else None]


def _scatter_set_forward(ctx, p, inputs, aux):
    lhs, rhs, indices = inputs
    out = lhs.copy()
    _check_bounds("_scatter_set_nd", indices, lhs.shape)
    out[_positions(ctx.xp, indices, lhs.shape)] = rhs
    return [out], None


def _scatter_set_type(p, in_types, out_types, aux_types):
    dtype = in_types[0] or in_types[1] or out_types[0]
    return [dtype, dtype, in_types[2]], [dtype], aux_types


# -- ravel / unravel --------------------------------------------------------------------


@attrs.frozen
class RavelParams:
    shape: tuple = param("shape", None, optional=True)


def _ravel_infer(p, in_shapes, out_shapes, aux_shapes):
    """data (len(shape), N) -> (N,); either side gives the other."""
    data, out = in_shapes[0], out_shapes[0]
    if not p.shape:
        raise mismatch("data", data, "a shape parameter", "ravel needs shape")
    if data is not None and (len(data) != 2 or data[0] not in (0, len(p.shape))):
        raise mismatch(
            "data", tuple(data), f"({len(p.shape)}, N)", f"one row per axis of {p.shape}"
        )
    count = (data[1] if data is not None else 0) or (out[0] if out is not None else 0)
    data = merge_shape((len(p.shape), count), data, "data")
    return [data], [merge_shape((count,), out)], aux_shapes


def _ravel_forward(ctx, p, inputs, aux):
    data, xp = inputs[0], ctx.xp
    strides = [math.prod(p.shape[i + 1 :]) for i in range(len(p.shape))]
    weights = xp.asarray(strides, dtype="int64").reshape((-1,) + (1,) * (data.ndim - 1))
    flat = (data.astype("int64") * weights).sum(axis=0)
    return [flat.astype(data.dtype)], data


def _unravel_infer(p, in_shapes, out_shapes, aux_shapes):
    """data (N,) -> (len(shape), N); either side gives the other."""
    data, out = in_shapes[0], out_shapes[0]
    if not p.shape:
        raise mismatch("data", data, "a shape parameter", "unravel needs shape")
    if data is not None and len(data) != 1:
        raise mismatch("data", tuple(data), "(N,)", "unravel_index takes a 1-d array of indices")
    count = (data[0] if data is not None else 0) or (out[1] if out is not None else 0)
    out = merge_shape((len(p.shape), count), out)
    return [merge_shape((count,), data, "data")], [out], aux_shapes


def _unravel_forward(ctx, p, inputs, aux):
    data, xp = inputs[0], ctx.xp
    rest = data.astype("int64")
    coords = []
    for size in reversed(p.shape[1:]):
        coords.append(rest % size)
        rest = rest // size
    # the first coordinate takes what is left, unwrapped: MXNet's kernel does so,
    # which is what lets shape=(-1, ...) leave the leading size open
    coords.append(rest)
    return [xp.stack(coords[::-1]).astype(data.dtype)], data


def _zero_backward(ctx, p, saved, out_grads, need_grad):
    return zero_grads(ctx, [saved], need_grad)


# -- batch_take --------------------------------------------------------------------------


def _batch_take_infer(p, in_shapes, out_shapes, aux_shapes):
    a, indices = in_shapes
    out = merge_shape(indices, out_shapes[0])
    if a is not None:
        if len(a) < 2:
            raise mismatch(
                "a", tuple(a), "at least 2 dimensions", "batch_take picks along the last axis"
            )
        if out is not None and all(a) and all(out) and math.prod(a) // a[-1] != math.prod(out):
            raise mismatch(
                "indices", tuple(out), f"{math.prod(a) // a[-1]} elements", "one index per row of a"
            )
    return [a, out], [out], aux_shapes


def _batch_take_type(p, in_types, out_types, aux_types):
    dtype = in_types[0] or out_types[0]
    return [dtype, "int32"], [dtype], aux_types


def _batch_take_forward(ctx, p, inputs, aux):
    a, indices = inputs
    xp, columns = ctx.xp, a.shape[-1]
    rows = a.reshape(-1, columns)
    picked = xp.clip(indices.reshape(-1).astype("int64"), 0, columns - 1)
    out = rows[xp.arange(rows.shape[0]), picked]
    return [out.reshape(indices.shape)], None


# -- fill_element_0index, _onehot_encode ---------------------------------------------------


def _fill_infer(p, in_shapes, out_shapes, aux_shapes):
    lhs, mhs, rhs = in_shapes
    out = merge_shape(lhs, out_shapes[0])
    if out is not None:
        if len(out) != 2:
            raise mismatch(
                "lhs", tuple(out), "a matrix", "fill_element_0index fills one element per row"
            )
        mhs = merge_shape((out[0],), mhs, "mhs")
        rhs = merge_shape((out[0],), rhs, "rhs")
    return [out, mhs, rhs], [out], aux_shapes


def _fill_forward(ctx, p, inputs, aux):
    lhs, mhs, rhs = inputs
    out = lhs.copy()
    columns = rhs.astype("int64")
    # a column outside the row is skipped, as MXNet does, rather than an IndexError
    inside = (columns >= 0) & (columns < lhs.shape[1])
    values = mhs.astype(lhs.dtype, copy=False)
    out[ctx.xp.arange(lhs.shape[0])[inside], columns[inside]] = values[inside]
    return [out], None


def _onehot_infer(p, in_shapes, out_shapes, aux_shapes):
    lhs, rhs = in_shapes
    out = merge_shape(rhs, out_shapes[0])
    if out is not None:
        if len(out) != 2:
            raise mismatch(
                "rhs", tuple(out), "(n, depth)", "_onehot_encode writes one row per index"
            )
        lhs = merge_shape((out[0],), lhs, "lhs")
    return [lhs, out], [out], aux_shapes


def _onehot_forward(ctx, p, inputs, aux):
    lhs, rhs = inputs
    xp = ctx.xp
    out = xp.zeros_like(rhs)
    columns = lhs.astype("int64")  # MXNet truncates the float indices
    # an index outside [0, depth) leaves its row zero, as MXNet's one_hot_encode does
    inside = (columns >= 0) & (columns < rhs.shape[1])
    out[xp.arange(rhs.shape[0])[inside], columns[inside]] = 1
    return [out], None


def _last_type(p, in_types, out_types, aux_types):
    dtype = in_types[-1] or out_types[0]
    return [*in_types[:-1], dtype], [dtype], aux_types


OPS = [
    OpDef(
        name="gather_nd",
        arguments=("data", "indices"),
        infer_shape=_gather_infer,
        infer_type=_first_type,
        forward=_gather_forward,
        backward=_gather_backward,
        doc="Gather data at the M-d coordinates held in indices' first axis.",
    ),
    OpDef(
        name="scatter_nd",
        params=ScatterNDParams,
        arguments=("data", "indices"),
        infer_shape=_scatter_infer,
        infer_type=_first_type,
        forward=_scatter_forward,
        backward=_scatter_backward,
        doc="Write data into zeros of shape at the M-d coordinates of indices.",
    ),
    OpDef(
        name="_scatter_set_nd",
        params=ScatterNDParams,
        arguments=("lhs", "rhs", "indices"),
        infer_shape=_scatter_infer,
        infer_type=_scatter_set_type,
        forward=_scatter_set_forward,
        doc="lhs with rhs written at the M-d coordinates of indices (internal).",
    ),
    OpDef(
        name="_ravel_multi_index",
        aliases=("ravel_multi_index",),
        params=RavelParams,
        infer_shape=_ravel_infer,
        forward=_ravel_forward,
        backward=_zero_backward,
        doc="Flat indices of the coordinate rows of data in an array of shape.",
    ),
    OpDef(
        name="_unravel_index",
        aliases=("unravel_index",),
        params=RavelParams,
        infer_shape=_unravel_infer,
        forward=_unravel_forward,
        backward=_zero_backward,
        doc="Coordinate rows of the flat indices of data in an array of shape.",
    ),
    OpDef(
        name="batch_take",
        arguments=("a", "indices"),
        infer_shape=_batch_take_infer,
        infer_type=_batch_take_type,
        forward=_batch_take_forward,
        doc="One element per row of a (over its last axis), at indices (clipped).",
    ),
    OpDef(
        name="fill_element_0index",
        arguments=("lhs", "mhs", "rhs"),
        infer_shape=_fill_infer,
        infer_type=_first_type,
        forward=_fill_forward,
        doc="A copy of lhs with lhs[i, rhs[i]] = mhs[i].",
    ),
    OpDef(
        name="_onehot_encode",
        arguments=("lhs", "rhs"),
        infer_shape=_onehot_infer,
        infer_type=_last_type,
        forward=_onehot_forward,
        doc="One-hot rows for the indices lhs, shaped like rhs (deprecated in MXNet: one_hot).",
    ),
]
