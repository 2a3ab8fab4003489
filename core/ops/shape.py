"""Shape-only operators on one array: Reshape, Flatten, transpose, SwapAxis,
expand_dims, squeeze; plus the axis helpers the other shape modules share.

None of these moves data arithmetically: forward and backward are reshapes or
axis permutations of the incoming array (views where the backend allows).
"""

import math

import attrs

from ..errors import ShapeError
from ..ndarray.shape_spec import infer_reshape
from .base import OpDef, known, merge_shape, mismatch
from .params import param

__all__ = ["OPS", "normalize_axis"]


# -- helpers shared by the shape family -----------------------------------------


def normalize_axis(axis, ndim, shape, argument="data", extra=0):
    """``axis`` in ``[0, ndim + extra)``, counting negatives from the end.

    ``extra=1`` is for ops that insert an axis (expand_dims, stack).
    """
    limit = ndim + extra
    if not -limit <= axis < limit:
        raise mismatch(
            argument,
            tuple(shape),
            f"an array for which axis {axis} exists",
            f"axis {axis} is out of range for {ndim} dims",
        )
    return axis % limit


def _product(dims):
    return math.prod(dims) if known(dims) else 0


def _fill_single_unknown(shape, total):
    """MXNet's reverse reshape rule: one unknown input dim follows from the output size."""
    if shape is None or total == 0:
        return shape
    unknown = [i for i, d in enumerate(shape) if not d]
    if len(unknown) != 1:
        return shape
    rest = math.prod(d for d in shape if d)
    if total % rest:
        raise mismatch("data", tuple(shape), f"a shape with {total} elements")
    filled = list(shape)
    filled[unknown[0]] = total // rest
    return tuple(filled)


# -- Reshape ----------------------------------------------------------------------


@attrs.frozen
class ReshapeParams:
    shape: tuple = param("shape", ())
    reverse: bool = param("bool", False)
    # MXNet's deprecated spelling: 0 marks the one inferred dim; keep_highest keeps dim 0
    target_shape: tuple = param("shape", None, optional=True)
    keep_highest: bool = param("bool", False)


def _partial_reshape(source, spec):
    """The codes applied to a source with unknown (0) dims: unknown where undecidable."""
    out, src, j = [], 0, 0

    def dim(i):
        if i >= len(source):
            raise mismatch(
                "data",
                tuple(source),
                f"at least {i + 1} dims",
                f"reshape spec {spec} needs more input dims",
            )
        return source[i]

    while j < len(spec):
        code = spec[j]
        if code > 0 or code == -1:
            out.append(code)
            src += 1
        elif code == 0:
            out.append(dim(src))
            src += 1
        elif code == -2:
            out.extend(source[src:])
            src = len(source)
        elif code == -3:
            out.append(dim(src) * dim(src + 1))
            src += 2
        elif code == -4 and len(spec) >= j + 3:
            whole, (first, second) = dim(src), spec[j + 1 : j + 3]
            first = (whole // second if whole else 0) if first == -1 else first
            second = (whole // first if whole and first else 0) if second == -1 else second
            out.extend((first, second))
            src, j = src + 1, j + 2
        else:
            raise mismatch(
                "data",
                tuple(source),
                "a valid reshape spec",
                f"code {code} is invalid or incomplete in {spec}",
            )
        j += 1
    return tuple(0 if d == -1 else d for d in out)


def _reshape_from_spec(p, source):
    spec = p.shape
    if known(source):
        try:
            return infer_reshape(source, spec, p.reverse)
        except ShapeError as exc:
            raise mismatch("data", tuple(source), f"a shape that fits {spec}", str(exc)) from None
    if p.reverse:
        return _partial_reshape(source[::-1], spec[::-1])[::-1]
    return _partial_reshape(source, spec)


def _reshape_legacy(p, source):
    out = list(p.target_shape)
    if p.keep_highest and out:
        out[0] = source[0]
    start = 1 if p.keep_highest else 0
    zeros = [i for i in range(start, len(out)) if out[i] == 0]
    if len(zeros) == 1 and known(source):
        rest = math.prod(d for i, d in enumerate(out) if i != zeros[0])
        out[zeros[0]] = math.prod(source) // rest if rest else 0
    if known(source) and known(out) and math.prod(out) != math.prod(source):
        raise mismatch(
            "data",
            tuple(source),
            f"{math.prod(out)} elements",
            f"target_shape {tuple(out)} does not fit",
        )
    return tuple(out)


def reshape_target(p, source):
    """The output shape of Reshape for input ``source`` (None: decided by the output)."""
    if p.shape:
        return _reshape_from_spec(p, source)
    if p.target_shape is not None:
        return _reshape_legacy(p, source)
    return None


def _reshape_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, out = in_shapes[0], out_shapes[0]
    if data is not None:
        out = merge_shape(reshape_target(p, data), out, "output")
    if out is not None and known(out):
        in_shapes[0] = _fill_single_unknown(data, math.prod(out))
        if known(in_shapes[0]) and math.prod(in_shapes[0]) != math.prod(out):
            raise mismatch(
                "data",
                tuple(in_shapes[0]),
                f"{math.prod(out)} elements",
                f"the output has shape {out}",
            )
    return in_shapes, [out], aux_shapes


def _reshape_forward(ctx, p, inputs, aux):
    data = inputs[0]
    target = reshape_target(p, data.shape)
    if target is None:
        raise ShapeError(
            "Reshape: neither shape nor target_shape is given; the output shape "
            "can only come from shape inference, which the forward pass lacks"
        )
    return [data.reshape(target)], data.shape


def _reshape_backward(ctx, p, saved, out_grads, need_grad):
    return [out_grads[0].reshape(saved) if need_grad[0] else None]


RESHAPE = OpDef(
    name="Reshape",
    aliases=("reshape",),
    params=ReshapeParams,
    infer_shape=_reshape_infer_shape,
    forward=_reshape_forward,
    backward=_reshape_backward,
    doc="Reshape with MXNet's codes 0 (copy), -1 (infer), -2 (rest), -3 (merge), -4 (split).",
)


# -- Flatten ----------------------------------------------------------------------


def _flatten_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, out = in_shapes[0], out_shapes[0]
    if data is not None:
        out = merge_shape((data[0], _product(data[1:])), out, "output")
        if not data[0] and out[0]:
            in_shapes[0] = (out[0], *data[1:])  # batch size learned from the consumer
    return in_shapes, [out], aux_shapes


def _flatten_forward(ctx, p, inputs, aux):
    data = inputs[0]
    out = data.reshape(data.shape[0], -1)
    if data.ndim > 2 and not out.flags.c_contiguous:
        # a view in another memory order (a batch-last convolution stack's, see
        # executor/batch_last.py): rows in MXNet's order, as products expect them
        out = ctx.xp.ascontiguousarray(out)
    return [out], data.shape


FLATTEN = OpDef(
    name="Flatten",
    aliases=("flatten",),
    infer_shape=_flatten_infer_shape,
    forward=_flatten_forward,
    backward=_reshape_backward,
    doc="Collapse every axis but the first: (d0, d1, ..., dk) -> (d0, d1*...*dk).",
)


# -- transpose ----------------------------------------------------------------------


@attrs.frozen
class TransposeParams:
    axes: tuple = param("shape", ())


def _transpose_axes(p, ndim, shape):
    if not p.axes:
        return tuple(range(ndim - 1, -1, -1))
    perm = tuple(a + ndim if a < 0 else a for a in p.axes)
    if sorted(perm) != list(range(ndim)):
        raise mismatch(
            "data",
            tuple(shape),
            f"{len(p.axes)} dims to permute with axes {p.axes}",
            "axes must be a permutation of the input's axes",
        )
    return perm


def _permute_infer(perm_of):
    """infer_shape for an axis permutation, both ways (out[i] = in[perm[i]])."""

    def infer(p, in_shapes, out_shapes, aux_shapes):
        data, out = in_shapes[0], out_shapes[0]
        ndim = len(data) if data is not None else (len(out) if out is not None else None)
        if ndim is None:
            return in_shapes, out_shapes, aux_shapes
        perm = perm_of(p, ndim, data if data is not None else out)
        if data is not None:
            out = merge_shape(tuple(data[a] for a in perm), out, "output")
        back = [0] * ndim
        for i, a in enumerate(perm):
            back[a] = out[i]
        return [merge_shape(data, tuple(back), "data")], [out], aux_shapes

    return infer


def _transpose_forward(ctx, p, inputs, aux):
    data = inputs[0]
    perm = _transpose_axes(p, data.ndim, data.shape)
    return [data.transpose(perm)], perm


def _inverse_permute_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    inverse = [0] * len(saved)
    for i, a in enumerate(saved):
        inverse[a] = i
    return [out_grads[0].transpose(inverse)]


TRANSPOSE = OpDef(
    name="transpose",
    params=TransposeParams,
    infer_shape=_permute_infer(_transpose_axes),
    forward=_transpose_forward,
    backward=_inverse_permute_backward,
    doc="Permute axes (reverse them when axes is empty).",
)


# -- SwapAxis -------------------------------------------------------------------------


@attrs.frozen
class SwapAxisParams:
    dim1: int = param("int", 0)
    dim2: int = param("int", 0)


def _swap_perm(p, ndim, shape):
    first, second = normalize_axis(p.dim1, ndim, shape), normalize_axis(p.dim2, ndim, shape)
    perm = list(range(ndim))
    perm[first], perm[second] = perm[second], perm[first]
    return tuple(perm)


def _swap_forward(ctx, p, inputs, aux):
    data = inputs[0]
    perm = _swap_perm(p, data.ndim, data.shape)
    return [data.transpose(perm)], perm


SWAP_AXIS = OpDef(
    name="SwapAxis",
    aliases=("swapaxes",),
    params=SwapAxisParams,
    infer_shape=_permute_infer(_swap_perm),
    forward=_swap_forward,
    backward=_inverse_permute_backward,
    doc="Exchange axes dim1 and dim2 (both default to 0: a copy).",
)


# -- expand_dims ----------------------------------------------------------------------


@attrs.frozen
class ExpandDimsParams:
    axis: int = param("int")


def _expand_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, out = in_shapes[0], out_shapes[0]
    if data is None and out is None:
        return in_shapes, out_shapes, aux_shapes
    ndim = len(data) if data is not None else len(out) - 1
    axis = normalize_axis(p.axis, ndim, data if data is not None else (0,) * ndim, extra=1)
    if data is not None:
        out = merge_shape((*data[:axis], 1, *data[axis:]), out, "output")
    if out[axis] != 1:
        raise mismatch("output", tuple(out), f"size 1 at axis {axis}")
    data = merge_shape(data, (*out[:axis], *out[axis + 1 :]), "data")
    return [data], [out], aux_shapes


def _expand_forward(ctx, p, inputs, aux):
    data = inputs[0]
    axis = normalize_axis(p.axis, data.ndim, data.shape, extra=1)
    return [data.reshape(*data.shape[:axis], 1, *data.shape[axis:])], data.shape


EXPAND_DIMS = OpDef(
    name="expand_dims",
    params=ExpandDimsParams,
    infer_shape=_expand_infer_shape,
    forward=_expand_forward,
    backward=_reshape_backward,
    doc="Insert an axis of size 1 at position axis (in [-ndim-1, ndim]).",
)


# -- squeeze ----------------------------------------------------------------------------


@attrs.frozen
class SqueezeParams:
    axis: tuple = param("shape", None, optional=True)


def _squeezed(p, shape):
    """(output shape, input shape with the squeezed dims set to 1), or (None, shape)."""
    ndim = len(shape)
    if p.axis is None:
        if not known(shape):
            return None, shape  # an unknown dim may or may not be 1
        axes = {i for i, d in enumerate(shape) if d == 1}
    else:
        axes = {normalize_axis(a, ndim, shape) for a in p.axis}
        for a in axes:
            if shape[a] not in (0, 1):
                raise mismatch("data", tuple(shape), f"size 1 at axis {a}", "squeeze axis")
    kept = tuple(d for i, d in enumerate(shape) if i not in axes)
    # legacy arrays cannot be 0-d: squeezing everything leaves (1,)
    filled = tuple(1 if i in axes else d for i, d in enumerate(shape))
    return kept or (1,), filled


def _squeeze_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, out = in_shapes[0], out_shapes[0]
    if data is not None:
        computed, data = _squeezed(p, data)
        out = merge_shape(computed, out, "output")
    return [data], [out], aux_shapes


def _squeeze_forward(ctx, p, inputs, aux):
    data = inputs[0]
    out, _ = _squeezed(p, data.shape)
    return [data.reshape(out)], data.shape


SQUEEZE = OpDef(
    name="squeeze",
    params=SqueezeParams,
    infer_shape=_squeeze_infer_shape,
    forward=_squeeze_forward,
    backward=_reshape_backward,
    doc="Remove size-1 axes (all of them, or those in axis); never below 1-D.",
)

OPS = [RESHAPE, FLATTEN, TRANSPOSE, SWAP_AXIS, EXPAND_DIMS, SQUEEZE]
