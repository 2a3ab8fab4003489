"""Diagonals and triangles of the linalg family.

``sumlogdiag`` sums the logarithms of each matrix's diagonal; ``extractdiag``
and ``makediag`` move a diagonal (``offset`` above or below the main one)
between a matrix and a vector; ``extracttrian`` and ``maketrian`` do the same
for a triangle packed into a vector of n(n+1)/2 values. As in MXNet, a lower
triangle is packed row by row and an upper one column by column; ``lower``
only matters when ``offset`` is 0 (a positive offset means the upper triangle,
a negative one the lower). Each op's gradient is its partner applied to the
output gradient.
"""

import math

import attrs
import numpy as np

from .base import OpDef, merge_shape, mismatch
from .la import la_float_type, square_check
from .params import param

__all__ = ["OPS"]


@attrs.frozen
class DiagParams:
    offset: int = param("int", 0)


@attrs.frozen
class TrianParams:
    offset: int = param("int", 0)
    lower: bool = param("bool", True)


# -- sumlogdiag --------------------------------------------------------------------


def _sumlogdiag_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    a = in_shapes[0]
    if a is None or len(a) < 2:
        return in_shapes, out_shapes, aux_shapes
    square_check("A", a)  # MXNet fails only when it runs
    return in_shapes, [merge_shape(tuple(a[:-2]) or (1,), out_shapes[0])], aux_shapes


def _sumlogdiag_forward(ctx, p, inputs, aux):
    xp, a = ctx.xp, inputs[0]
    diagonal = xp.diagonal(a, axis1=-2, axis2=-1)
    out = xp.log(diagonal).sum(axis=-1)
    return [out.reshape(a.shape[:-2] or (1,))], (a, diagonal)


def _sumlogdiag_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    xp, (a, diagonal) = ctx.xp, saved
    grad = out_grads[0].reshape(*a.shape[:-2], 1)
    index = xp.arange(a.shape[-1])
    result = xp.zeros_like(a)
    result[..., index, index] = grad / diagonal
    return [result]


SUMLOGDIAG = OpDef(
    name="_linalg_sumlogdiag",
    aliases=("linalg_sumlogdiag",),
    arguments=("A",),
    infer_shape=_sumlogdiag_infer_shape,
    infer_type=la_float_type,
    forward=_sumlogdiag_forward,
    backward=_sumlogdiag_backward,
    doc="The sum of the logarithms of each square matrix's diagonal.",
)


# -- extractdiag, makediag -----------------------------------------------------------


def _inner_size(a, offset):
    """The length of the diagonal ``offset`` of the square matrices of shape ``a``."""
    square_check("A", a)
    n = a[-1] or a[-2]
    if n and n - abs(offset) <= 0:
        raise mismatch("A", tuple(a), f"matrices larger than {abs(offset)}", f"offset {offset}")
    return n - abs(offset) if n else 0


def _extract_shape(triangle):
    def infer(p, in_shapes, out_shapes, aux_shapes):
        a = in_shapes[0]
        if not a:
            return in_shapes, out_shapes, aux_shapes
        if len(a) < 2:
            raise mismatch("A", tuple(a), "(..., n, n)", "a tensor of matrices is needed")
        n = _inner_size(a, p.offset)
        size = n * (n + 1) // 2 if triangle else n
        return in_shapes, [merge_shape((*a[:-2], size), out_shapes[0])], aux_shapes

    return infer


def _packed_side(size):
    """n with n(n+1)/2 == size, or None."""
    n = (math.isqrt(8 * size + 1) - 1) // 2
    return n if n * (n + 1) // 2 == size else None


def _make_shape(triangle):
    def infer(p, in_shapes, out_shapes, aux_shapes):
        a = in_shapes[0]
        if not a:
            return in_shapes, out_shapes, aux_shapes
        n = a[-1]
        if triangle and n:
            n = _packed_side(a[-1])
            if n is None:
                raise mismatch("A", tuple(a), "(..., n*(n+1)/2)", "not a packed triangle size")
        side = n + abs(p.offset) if n else 0
        return in_shapes, [merge_shape((*a[:-1], side, side), out_shapes[0])], aux_shapes

    return infer


def _diag_index(xp, n, offset):
    """(rows, cols) of diagonal ``offset`` of a matrix whose diagonal has n values."""
    index = xp.arange(n)
    return index + max(-offset, 0), index + max(offset, 0)


def _trian_index(xp, n, offset, lower):
    """(rows, cols) of the packed triangle (n values on its longest side), in MXNet's order."""
    longer, shorter = np.tril_indices(n)
    longer = longer + abs(offset)
    if offset > 0 or (offset == 0 and not lower):  # upper: packed column by column
        return xp.asarray(shorter), xp.asarray(longer)
    return xp.asarray(longer), xp.asarray(shorter)


def _gather(xp, matrices, index):
    rows, cols = index
    return matrices[..., rows, cols]


def _scatter(xp, values, index, side):
    rows, cols = index
    out = xp.zeros((*values.shape[:-1], side, side), values.dtype)
    out[..., rows, cols] = values
    return out


def _index_of(xp, p, n, triangle):
    if triangle:
        return _trian_index(xp, n, p.offset, p.lower)
    return _diag_index(xp, n, p.offset)


def _extract_op(triangle):
    def forward(ctx, p, inputs, aux):
        a = inputs[0]
        index = _index_of(ctx.xp, p, a.shape[-1] - abs(p.offset), triangle)
        return [_gather(ctx.xp, a, index)], (index, a.shape[-1])

    def backward(ctx, p, saved, out_grads, need_grad):
        index, side = saved
        return [_scatter(ctx.xp, out_grads[0], index, side) if need_grad[0] else None]

    return forward, backward


def _make_op(triangle):
    def forward(ctx, p, inputs, aux):
        a = inputs[0]
        n = _packed_side(a.shape[-1]) if triangle else a.shape[-1]
        index = _index_of(ctx.xp, p, n, triangle)
        return [_scatter(ctx.xp, a, index, n + abs(p.offset))], index

    def backward(ctx, p, index, out_grads, need_grad):
        return [_gather(ctx.xp, out_grads[0], index) if need_grad[0] else None]

    return forward, backward


def _family_op(name, params, make, triangle, doc):
    forward, backward = (_make_op if make else _extract_op)(triangle)
    return OpDef(
        name=f"_linalg_{name}",
        aliases=(f"linalg_{name}",),
        params=params,
        arguments=("A",),
        infer_shape=(_make_shape if make else _extract_shape)(triangle),
        infer_type=la_float_type,
        forward=forward,
        backward=backward,
        doc=doc,
    )


EXTRACTDIAG = _family_op(
    "extractdiag", DiagParams, False, False, "The diagonal ``offset`` of each square matrix."
)
MAKEDIAG = _family_op(
    "makediag", DiagParams, True, False, "Square matrices with the vectors on diagonal ``offset``."
)
EXTRACTTRIAN = _family_op(
    "extracttrian",
    TrianParams,
    False,
    True,
    "The triangle (from diagonal ``offset``) of each square matrix, packed into a vector.",
)
MAKETRIAN = _family_op(
    "maketrian",
    TrianParams,
    True,
    True,
    "Square matrices whose triangle (from diagonal ``offset``) holds the packed vectors.",
)

OPS = [SUMLOGDIAG, EXTRACTDIAG, MAKEDIAG, EXTRACTTRIAN, MAKETRIAN]
