"""Matrix products: dot and batch_dot.

``dot`` contracts the last axis of ``lhs`` with the first axis of ``rhs``
(``transpose_a`` makes it the first axis of ``lhs``, ``transpose_b`` the last
of ``rhs``). Every case is computed as one 2-D matrix product on reshaped
views, so a contiguous input is never copied. A product with no axes left
(1-D . 1-D) has shape ``(1,)``, as in MXNet.

``batch_dot`` multiplies matching matrices of two N-D (N >= 3) arrays with
equal leading (batch) dimensions.

``forward_stype`` only asks MXNet for a sparse storage of the result; the
values are the same, and arrays here are always dense, so it is accepted and
has no effect.
"""

import attrs

from .base import OpDef, merge_shape, mismatch
from .params import param

__all__ = ["OPS"]

STYPES = ("default", "csr", "row_sparse")


@attrs.frozen
class DotParams:
    transpose_a: bool = param("bool", False)
    transpose_b: bool = param("bool", False)
    forward_stype: str = param("str", None, optional=True, choices=STYPES)


# -- dot ------------------------------------------------------------------------


def _dot_split(shape, first):
    """(kept dims, contracted dim) of one operand; ``first``: contract its first axis."""
    return (tuple(shape[1:]), shape[0]) if first else (tuple(shape[:-1]), shape[-1])


def _dot_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    lhs, rhs = in_shapes
    if not lhs or not rhs:  # None or () is unknown
        return in_shapes, out_shapes, aux_shapes
    lhs_kept, lhs_inner = _dot_split(lhs, p.transpose_a)
    rhs_kept, rhs_inner = _dot_split(rhs, not p.transpose_b)
    if lhs_inner and rhs_inner and lhs_inner != rhs_inner:
        axis = -1 if p.transpose_b else 0
        expected = list(rhs)
        expected[axis] = lhs_inner
        raise mismatch(
            "rhs",
            tuple(rhs),
            tuple(expected),
            f"dot contracts {lhs_inner} columns of lhs with {rhs_inner} rows of rhs",
        )
    out_shapes[0] = merge_shape(lhs_kept + rhs_kept or (1,), out_shapes[0])
    return in_shapes, out_shapes, aux_shapes


def _matrices(lhs, rhs, p):
    """lhs and rhs as the two matrices whose product is the result (views when possible)."""
    a = lhs.reshape(lhs.shape[0], -1).T if p.transpose_a else lhs.reshape(-1, lhs.shape[-1])
    b = rhs.reshape(-1, rhs.shape[-1]).T if p.transpose_b else rhs.reshape(rhs.shape[0], -1)
    return a, b


def _dot_forward(ctx, p, inputs, aux):
    lhs, rhs = inputs
    if lhs.ndim == 2 and rhs.ndim == 2:  # the hot path: no reshapes at all
        a = lhs.T if p.transpose_a else lhs
        b = rhs.T if p.transpose_b else rhs
        return [ctx.xp.dot(a, b)], (a, b, lhs.shape, rhs.shape)
    a, b = _matrices(lhs, rhs, p)
    out = ctx.xp.dot(a, b)
    lhs_kept, _ = _dot_split(lhs.shape, p.transpose_a)
    rhs_kept, _ = _dot_split(rhs.shape, not p.transpose_b)
    return [out.reshape(lhs_kept + rhs_kept or (1,))], (a, b, lhs.shape, rhs.shape)


def _dot_backward(ctx, p, saved, out_grads, need_grad):
    xp, (a, b, lhs_shape, rhs_shape) = ctx.xp, saved
    g = out_grads[0].reshape(a.shape[0], b.shape[1])
    grads = [None, None]
    if need_grad[0]:  # d lhs = g . b^T, laid out as lhs (transposed back when transpose_a)
        grad = xp.dot(b, g.T) if p.transpose_a else xp.dot(g, b.T)
        grads[0] = grad.reshape(lhs_shape)
    if need_grad[1]:  # d rhs = a^T . g, likewise
        grad = xp.dot(g.T, a) if p.transpose_b else xp.dot(a.T, g)
        grads[1] = grad.reshape(rhs_shape)
    return grads


DOT = OpDef(
    name="dot",
    params=DotParams,
    arguments=("lhs", "rhs"),
    infer_shape=_dot_infer_shape,
    forward=_dot_forward,
    backward=_dot_backward,
    doc="Tensor product over the last axis of lhs and the first axis of rhs.",
)


# -- batch_dot ------------------------------------------------------------------


def _batch_dot_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    lhs, rhs = in_shapes
    if not lhs or not rhs:
        return in_shapes, out_shapes, aux_shapes
    lhs, rhs = tuple(lhs), tuple(rhs)
    if len(lhs) < 3:
        raise mismatch("lhs", lhs, "an N-D shape, N >= 3", "batch_dot multiplies batches")
    if len(rhs) != len(lhs):
        raise mismatch("rhs", rhs, f"a {len(lhs)}-D shape", "lhs and rhs need the same rank")
    m, k = (lhs[-1], lhs[-2]) if p.transpose_a else (lhs[-2], lhs[-1])
    n = rhs[-2] if p.transpose_b else rhs[-1]
    # rhs must have lhs's batch dimensions and inner size
    rhs = merge_shape((*lhs[:-2], n, k) if p.transpose_b else (*lhs[:-2], k, n), rhs, "rhs")
    out_shapes[0] = merge_shape((*rhs[:-2], m, n), out_shapes[0])
    return in_shapes, out_shapes, aux_shapes


def _batch_dot_forward(ctx, p, inputs, aux):
    xp, (lhs, rhs) = ctx.xp, inputs
    a = xp.swapaxes(lhs, -1, -2) if p.transpose_a else lhs
    b = xp.swapaxes(rhs, -1, -2) if p.transpose_b else rhs
    return [xp.matmul(a, b)], (a, b)


def _batch_dot_backward(ctx, p, saved, out_grads, need_grad):
    xp, (a, b), g = ctx.xp, saved, out_grads[0]
    grads = [None, None]
    if need_grad[0]:
        grads[0] = (
            xp.matmul(b, xp.swapaxes(g, -1, -2))
            if p.transpose_a
            else xp.matmul(g, xp.swapaxes(b, -1, -2))
        )
    if need_grad[1]:
        grads[1] = (
            xp.matmul(xp.swapaxes(g, -1, -2), a)
            if p.transpose_b
            else xp.matmul(xp.swapaxes(a, -1, -2), g)
        )
    return grads


BATCH_DOT = OpDef(
    name="batch_dot",
    params=DotParams,
    arguments=("lhs", "rhs"),
    infer_shape=_batch_dot_infer_shape,
    forward=_batch_dot_forward,
    backward=_batch_dot_backward,
    doc="Matrix products of matching (B..., M, K) and (B..., K, N) batches.",
)

OPS = [DOT, BATCH_DOT]
