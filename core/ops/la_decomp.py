"""Factorizations of the linalg family: potrf, potri, gelqf, syevd, inverse, det, slogdet.

All are batched over the leading axes and differentiate as MXNet does
(la_op-inl.h, after Seeger et al. 2017, arXiv:1710.08717):

* ``potrf`` (Cholesky, A = L L^T) reads only the ``lower`` (or upper)
  triangle of A; ``potri`` takes such a factor and returns (L L^T)^-1. The
  upper forms are the lower ones on transposed matrices.
* ``gelqf`` gives Q (rows orthonormal) and L (lower) with A = L Q, from a
  QR factorization of A^T, so the signs follow LAPACK's Householder choice.
* ``syevd`` gives U (eigenvectors as rows) and the ascending eigenvalues L of
  a symmetric A (its lower triangle is read); each row of U is signed so that
  its largest entry is positive, as MXNet does.
* ``det`` and ``slogdet`` pass no gradient through singular matrices, and
  ``slogdet`` none through ``sign``. MXNet keeps the LU factors and pivots as
  two hidden outputs; they count here for the JSON layout only.
"""

import attrs

from .base import OpDef, merge_shape, mismatch
from .la import la_float_type, square_check, swap
from .params import param

__all__ = ["OPS"]


@attrs.frozen
class CholeskyParams:
    lower: bool = param("bool", True)


def _square_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    square_check("A", in_shapes[0])
    shape = merge_shape(in_shapes[0], out_shapes[0])
    return [shape], [shape], aux_shapes


def _left_solve(xp, m, x):
    """m^-1 x for stacks of (triangular) matrices."""
    return xp.linalg.solve(m, x)


def _right_solve(xp, x, m):
    """x m^-1 for stacks of (triangular) matrices."""
    return swap(xp, xp.linalg.solve(swap(xp, m), swap(xp, x)))


def _as_lower(xp, x, lower):
    return x if lower else swap(xp, x)


def _symmetric_from_lower(xp, x):
    """tril(x) mirrored onto the strict upper triangle."""
    return xp.tril(x) + swap(xp, xp.tril(x, -1))


# -- potrf, potri -------------------------------------------------------------------


def _potrf_forward(ctx, p, inputs, aux):
    xp = ctx.xp
    a = _symmetric_from_lower(xp, _as_lower(xp, inputs[0], p.lower))
    factor = xp.linalg.cholesky(a)
    return [_as_lower(xp, factor, p.lower)], factor


def _potrf_backward(ctx, p, factor, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    xp, grad = ctx.xp, _as_lower(ctx.xp, out_grads[0], p.lower)
    inner = _symmetric_from_lower(xp, xp.matmul(swap(xp, factor), grad))
    result = 0.5 * _right_solve(xp, _left_solve(xp, swap(xp, factor), inner), factor)
    return [_as_lower(xp, result, p.lower)]


def _potri_forward(ctx, p, inputs, aux):
    xp = ctx.xp
    factor = xp.tril(_as_lower(xp, inputs[0], p.lower))
    eye = xp.broadcast_to(xp.eye(factor.shape[-1], dtype=factor.dtype), factor.shape)
    inverse = _left_solve(xp, factor, eye)
    out = xp.matmul(swap(xp, inverse), inverse)
    return [out], (factor, out)


def _potri_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    xp, (factor, out), grad = ctx.xp, saved, out_grads[0]
    product = xp.matmul(out, grad + swap(xp, grad))
    result = -xp.tril(_right_solve(xp, product, swap(xp, factor)))
    return [_as_lower(xp, result, p.lower)]


POTRF = OpDef(
    name="_linalg_potrf",
    aliases=("linalg_potrf",),
    params=CholeskyParams,
    arguments=("A",),
    infer_shape=_square_infer_shape,
    infer_type=la_float_type,
    forward=_potrf_forward,
    backward=_potrf_backward,
    doc="The Cholesky factor of each symmetric positive definite matrix.",
)

POTRI = OpDef(
    name="_linalg_potri",
    aliases=("linalg_potri",),
    params=CholeskyParams,
    arguments=("A",),
    infer_shape=_square_infer_shape,
    infer_type=la_float_type,
    forward=_potri_forward,
    backward=_potri_backward,
    doc="The inverse of L L^T from each Cholesky factor L.",
)


# -- gelqf ----------------------------------------------------------------------------


def _gelqf_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    a = merge_shape(in_shapes[0], out_shapes[0], "A")
    if a is None:
        return in_shapes, out_shapes, aux_shapes
    if len(a) < 2:
        raise mismatch("A", tuple(a), "(..., m, n)", "gelqf needs a tensor of matrices")
    if a[-2] and a[-1] and a[-2] > a[-1]:
        raise mismatch(
            "A", tuple(a), "(..., m, n) with m <= n", "A needs no more rows than columns"
        )
    lower = merge_shape((*a[:-1], a[-2]), out_shapes[1], "L")
    return [a], [a, lower], aux_shapes


def _gelqf_forward(ctx, p, inputs, aux):
    xp = ctx.xp
    q, r = xp.linalg.qr(swap(xp, inputs[0]))
    q, lower = swap(xp, q), swap(xp, r)
    return [q, lower], (q, lower)


def _gelqf_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    xp, (q, lower), (dq, dl) = ctx.xp, saved, out_grads
    inner = xp.matmul(swap(xp, lower), dl) - xp.matmul(dq, swap(xp, q))
    grad = dq + xp.matmul(_symmetric_from_lower(xp, inner), q)
    return [_left_solve(xp, swap(xp, lower), grad)]


GELQF = OpDef(
    name="_linalg_gelqf",
    aliases=("linalg_gelqf",),
    arguments=("A",),
    outputs=("output0", "output1"),
    infer_shape=_gelqf_infer_shape,
    infer_type=la_float_type,
    forward=_gelqf_forward,
    backward=_gelqf_backward,
    doc="The LQ factorization A = L Q of each matrix with no more rows than columns: (Q, L).",
)


# -- syevd ------------------------------------------------------------------------------

_EIGENGAP_FLOOR = {"float32": 1e-30, "float64": 1e-100}  # MXNet's clamp of tiny gaps


def _syevd_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    a = merge_shape(in_shapes[0], out_shapes[0], "A")
    square_check("A", a)
    if a is None:
        return in_shapes, out_shapes, aux_shapes
    return [a], [a, merge_shape(a[:-1], out_shapes[1], "L")], aux_shapes


def _syevd_forward(ctx, p, inputs, aux):
    xp = ctx.xp
    values, vectors = xp.linalg.eigh(inputs[0])
    rows = swap(xp, vectors)
    largest = xp.take_along_axis(rows, xp.argmax(xp.abs(rows), axis=-1)[..., None], axis=-1)
    rows = xp.where(largest < 0, -rows, rows)
    return [rows, values], (rows, values)


def _syevd_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    xp, (rows, values), (du, dl) = ctx.xp, saved, out_grads
    x = xp.matmul(du, swap(xp, rows))
    gaps = xp.maximum(values[..., :, None] - values[..., None, :], _EIGENGAP_FLOOR[x.dtype.name])
    below = xp.tril((x - swap(xp, x)) / (2 * gaps), -1)
    middle = below + swap(xp, below)
    index = xp.arange(values.shape[-1])
    middle[..., index, index] = dl
    return [xp.matmul(xp.matmul(swap(xp, rows), middle), rows)]


SYEVD = OpDef(
    name="_linalg_syevd",
    arguments=("A",),
    outputs=("output0", "output1"),
    infer_shape=_syevd_infer_shape,
    infer_type=la_float_type,
    forward=_syevd_forward,
    backward=_syevd_backward,
    doc="Eigenvectors (rows of U) and ascending eigenvalues L of each symmetric matrix: (U, L).",
)


# -- inverse, det, slogdet ------------------------------------------------------------------


def _inverse_forward(ctx, p, inputs, aux):
    out = ctx.xp.linalg.inv(inputs[0])
    return [out], out


def _inverse_backward(ctx, p, out, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    xp, out_t = ctx.xp, swap(ctx.xp, out)
    return [-xp.matmul(xp.matmul(out_t, out_grads[0]), out_t)]


INVERSE = OpDef(
    name="_linalg_inverse",
    aliases=("linalg_inverse",),
    arguments=("A",),
    infer_shape=_square_infer_shape,
    infer_type=la_float_type,
    forward=_inverse_forward,
    backward=_inverse_backward,
    doc="The inverse of each square matrix.",
)


def _det_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    a = in_shapes[0]
    square_check("A", a)
    if a is None:
        return in_shapes, out_shapes, aux_shapes
    shape = tuple(a[:-2]) or (1,)
    return in_shapes, [merge_shape(shape, o) for o in out_shapes], aux_shapes


def _inverse_transposed(xp, a, singular):
    """inv(A)^T, with the identity standing in for singular matrices."""
    eye = xp.eye(a.shape[-1], dtype=a.dtype)
    safe = xp.where(singular[..., None, None], eye, a)
    return swap(xp, xp.linalg.inv(safe))


def _det_forward(ctx, p, inputs, aux):
    a = inputs[0]
    det = ctx.xp.linalg.det(a).reshape(a.shape[:-2] or (1,))
    return [det], (a, det)


def _det_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    xp, (a, det) = ctx.xp, saved
    det = det.reshape(a.shape[:-2])
    scale = (out_grads[0].reshape(det.shape) * det)[..., None, None]
    grad = scale * _inverse_transposed(xp, a, det == 0)
    return [xp.where((det == 0)[..., None, None], xp.zeros_like(grad), grad)]


def _slogdet_forward(ctx, p, inputs, aux):
    a = inputs[0]
    sign, logabsdet = ctx.xp.linalg.slogdet(a)
    shape = a.shape[:-2] or (1,)
    return [sign.reshape(shape), logabsdet.reshape(shape)], (a, logabsdet)


def _slogdet_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    xp, (a, logabsdet) = ctx.xp, saved
    singular = xp.isneginf(logabsdet).reshape(a.shape[:-2])
    scale = out_grads[1].reshape(singular.shape)[..., None, None]
    grad = scale * _inverse_transposed(xp, a, singular)
    return [xp.where(singular[..., None, None], xp.zeros_like(grad), grad)]


DET = OpDef(
    name="_linalg_det",
    aliases=("linalg_det",),
    arguments=("A",),
    outputs=("output0",),
    hidden_outputs=2,  # MXNet's LU factors and pivots
    infer_shape=_det_infer_shape,
    infer_type=la_float_type,
    forward=_det_forward,
    backward=_det_backward,
    doc="The determinant of each square matrix.",
)

SLOGDET = OpDef(
    name="_linalg_slogdet",
    aliases=("linalg_slogdet",),
    arguments=("A",),
    outputs=("output0", "output1"),
    hidden_outputs=2,  # MXNet's LU factors and pivots
    infer_shape=_det_infer_shape,
    infer_type=la_float_type,
    forward=_slogdet_forward,
    backward=_slogdet_backward,
    doc="The sign and the log of the absolute value of each square matrix's determinant.",
)

OPS = [POTRF, POTRI, GELQF, SYEVD, INVERSE, DET, SLOGDET]
