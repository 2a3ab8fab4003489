"""Matrix products of the linalg family: gemm, gemm2, trmm, trsm, syrk.

Every operator works on the trailing two axes and is batched over the
leading ones (gemm and gemm2 can take the rows from another ``axis``). The
triangular operators read only the triangle of ``A`` that ``lower`` names,
as BLAS does, and their gradient of ``A`` is zero outside it. Triangular
solves go through ``xp.linalg.solve`` on the masked matrix, batched.

MXNet computes these in float32 and float64 only; ``la_float_type`` is the
type rule every linalg operator shares (the diagonal and decomposition
families in ``la_diag.py`` and ``la_decomp.py`` import it with the helpers).
"""

import math

import attrs

from ..errors import DTypeMismatchError
from .base import OpDef, merge_shape, mismatch, same_type
from .params import param

__all__ = ["OPS", "la_float_type", "swap", "triangle", "square_check"]

FLOAT_TYPES = ("float32", "float64")


def la_float_type(p, in_types, out_types, aux_types):
    """Every input and output shares one dtype, float32 or float64 (as MXNet requires)."""
    in_types, out_types, aux_types = same_type(p, in_types, out_types, aux_types)
    dtype = next((t for t in (*in_types, *out_types) if t is not None), None)
    if dtype is not None and dtype not in FLOAT_TYPES:
        raise DTypeMismatchError(
            f"linalg operators support float32 and float64 only, got {dtype}; "
            "cast the input with astype('float32')"
        )
    return in_types, out_types, aux_types


def swap(xp, x):
    """The transposes of a stack of matrices."""
    return xp.swapaxes(x, -1, -2)


def triangle(xp, a, lower):
    """The lower (or upper) triangle of each matrix, zeros elsewhere."""
    return xp.tril(a) if lower else xp.triu(a)


def square_check(name, shape):
    """Raise unless ``shape`` is a (partial) stack of square matrices."""
    if shape is None:
        return
    if len(shape) < 2:
        raise mismatch(name, tuple(shape), "(..., n, n)", "linalg needs a tensor of matrices")
    if shape[-1] and shape[-2] and shape[-1] != shape[-2]:
        raise mismatch(name, tuple(shape), (*shape[:-1], shape[-2]), "the matrices must be square")


# -- gemm, gemm2 -----------------------------------------------------------------


@attrs.frozen
class GemmParams:
    transpose_a: bool = param("bool", False)
    transpose_b: bool = param("bool", False)
    alpha: float = param("float", 1.0)
    beta: float = param("float", 1.0)
    axis: int = param("int", -2)


@attrs.frozen
class Gemm2Params:
    transpose_a: bool = param("bool", False)
    transpose_b: bool = param("bool", False)
    alpha: float = param("float", 1.0)
    axis: int = param("int", -2)


def scale(xp, alpha, product):
    """``alpha * product``, or zeros for alpha 0: BLAS reads no operand then (NaN stays out)."""
    return xp.zeros_like(product) if alpha == 0 else alpha * product


def _row_axis(p, shape):
    axis = p.axis + len(shape) if p.axis < 0 else p.axis
    if not 0 <= axis < len(shape) - 1:
        raise mismatch("A", tuple(shape), f"a rank above {p.axis}", f"invalid row axis {p.axis}")
    return axis


def _dim_check(name, got, want, shape, expected, reason):
    if got and want and got != want:
        raise mismatch(name, tuple(shape), tuple(expected), reason)


def _product_shape(p, a, b):
    """The shape of op(A) op(B) with rows on ``p.axis`` (0 where unknown)."""
    if len(a) < 2 or len(b) != len(a):
        raise mismatch("B", tuple(b), f"a {len(a)}-D shape like A", "A and B need one rank")
    axis, last = _row_axis(p, a), len(a) - 1
    out = list(a)
    for i in range(last):
        if i != axis:
            expected = list(b)
            expected[i] = a[i]
            _dim_check("B", a[i], b[i], b, expected, "A and B differ outside the matrix axes")
            out[i] = a[i] or b[i]
    inner_a = a[axis] if p.transpose_a else a[last]
    inner_b, b_inner_axis = (b[last], last) if p.transpose_b else (b[axis], axis)
    expected = list(b)
    expected[b_inner_axis] = inner_a
    _dim_check("B", inner_a, inner_b, b, expected, "incompatible matrix dimensions")
    out[axis] = a[last] if p.transpose_a else a[axis]
    out[last] = b[axis] if p.transpose_b else b[last]
    return tuple(out)


def _gemm_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    a, b = in_shapes[0], in_shapes[1]
    out = out_shapes[0]
    if a is not None and b is not None:
        out = merge_shape(_product_shape(p, a, b), out)
    if len(in_shapes) == 3:  # gemm's C has the shape of the result
        out = merge_shape(out, in_shapes[2], "C")
        in_shapes[2] = out
    return in_shapes, [out], aux_shapes


def _rows_last(xp, x, axis):
    return x if axis == x.ndim - 2 else xp.moveaxis(x, axis, -2)


def _rows_back(xp, x, axis):
    return x if axis == x.ndim - 2 else xp.moveaxis(x, -2, axis)


def _operands(ctx, p, inputs):
    """op(A), op(B) with the rows on axis -2, and the row axis."""
    xp, axis = ctx.xp, _row_axis(p, inputs[0].shape)
    a, b = (_rows_last(xp, x, axis) for x in inputs[:2])
    return (swap(xp, a) if p.transpose_a else a), (swap(xp, b) if p.transpose_b else b), axis


def _gemm_forward(ctx, p, inputs, aux):
    xp = ctx.xp
    a, b, axis = _operands(ctx, p, inputs)
    out = scale(xp, p.alpha, xp.matmul(a, b))
    if len(inputs) == 3 and p.beta != 0:  # beta 0: C is not read (BLAS)
        out = out + p.beta * _rows_last(xp, inputs[2], axis)
    return [_rows_back(xp, out.astype(inputs[0].dtype, copy=False), axis)], (a, b, axis)


def _gemm_backward(ctx, p, saved, out_grads, need_grad):
    xp, (a, b, axis) = ctx.xp, saved
    grad = _rows_last(xp, out_grads[0], axis)
    grads = [None] * len(need_grad)
    if need_grad[0]:  # d op(A) = alpha dOut op(B)^T
        da = scale(xp, p.alpha, xp.matmul(grad, swap(xp, b)))
        grads[0] = _rows_back(xp, swap(xp, da) if p.transpose_a else da, axis)
    if need_grad[1]:  # d op(B) = alpha op(A)^T dOut
        db = scale(xp, p.alpha, xp.matmul(swap(xp, a), grad))
        grads[1] = _rows_back(xp, swap(xp, db) if p.transpose_b else db, axis)
    if len(need_grad) == 3 and need_grad[2]:
        grads[2] = scale(xp, p.beta, out_grads[0])
    return grads


GEMM = OpDef(
    name="_linalg_gemm",
    aliases=("linalg_gemm",),
    params=GemmParams,
    arguments=("A", "B", "C"),
    infer_shape=_gemm_infer_shape,
    infer_type=la_float_type,
    forward=_gemm_forward,
    backward=_gemm_backward,
    doc="alpha * op(A) op(B) + beta * C over batches of matrices (BLAS gemm).",
)

GEMM2 = OpDef(
    name="_linalg_gemm2",
    aliases=("linalg_gemm2",),
    params=Gemm2Params,
    arguments=("A", "B"),
    infer_shape=_gemm_infer_shape,
    infer_type=la_float_type,
    forward=_gemm_forward,
    backward=_gemm_backward,
    doc="alpha * op(A) op(B) over batches of matrices.",
)


# -- trmm, trsm --------------------------------------------------------------------


@attrs.frozen
class TriangularParams:
    transpose: bool = param("bool", False)
    rightside: bool = param("bool", False)
    lower: bool = param("bool", True)
    alpha: float = param("float", 1.0)


def _triangular_forward_shape(p, a, b):
    square_check("A", a)
    if len(b) != len(a):
        raise mismatch("B", tuple(b), f"a {len(a)}-D shape like A", "A and B need one rank")
    n = a[-1] or a[-2]
    batch = tuple(merge_shape(a[:-2], b[:-2], "B"))
    rows, cols = b[-2], b[-1]
    side, index = (cols, -1) if p.rightside else (rows, -2)
    if n and side and n != side:
        expected = list(b)
        expected[index] = n
        raise mismatch("B", tuple(b), tuple(expected), "incompatible matrix dimensions")
    if p.rightside:
        return (*batch, rows, n or cols)
    return (*batch, n or rows, cols)


def _triangular_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    a, b = in_shapes
    out = out_shapes[0]
    if a is not None and b is not None and len(a) >= 2:
        out = merge_shape(_triangular_forward_shape(p, a, b), out)
    elif out is not None and len(out) >= 2:  # MXNet also infers A and B from the result
        n = out[-1] if p.rightside else out[-2]
        in_shapes[0] = merge_shape((*out[:-2], n, n), a, "A")
        in_shapes[1] = merge_shape(out, b, "B")
    return in_shapes, [out], aux_shapes


def triangular_product(xp, a, b, p, transpose):
    """alpha * op(tri(A)) B, or B op(tri(A)) with ``rightside``."""
    tri = triangle(xp, a, p.lower)
    tri = swap(xp, tri) if transpose else tri
    product = xp.matmul(b, tri) if p.rightside else xp.matmul(tri, b)
    return scale(xp, p.alpha, product)


def triangular_solve(xp, a, b, p, transpose):
    """alpha * op(tri(A))^-1 B, or alpha * B op(tri(A))^-1 with ``rightside``."""
    tri = triangle(xp, a, p.lower)
    tri = swap(xp, tri) if transpose else tri
    if p.alpha == 0:  # BLAS sets the result to zero without reading A or B
        return xp.zeros_like(b)
    if p.rightside:  # X op = B  <=>  op^T X^T = B^T
        return p.alpha * swap(xp, xp.linalg.solve(swap(xp, tri), swap(xp, b)))
    return p.alpha * xp.linalg.solve(tri, b)


def _trmm_forward(ctx, p, inputs, aux):
    a, b = inputs
    return [triangular_product(ctx.xp, a, b, p, p.transpose).astype(b.dtype, copy=False)], (a, b)


def _grad_of_triangle(xp, p, left, right):
    """The gradient of A from the products that give op(A)'s: masked to A's triangle."""
    # MXNet's four cases: left^T right, left right^T, right^T left, right left^T
    if p.rightside == p.transpose:
        grad = xp.matmul(swap(xp, left), right) if p.transpose else xp.matmul(left, swap(xp, right))
    else:
        grad = xp.matmul(swap(xp, right), left) if p.rightside else xp.matmul(right, swap(xp, left))
    return triangle(xp, grad, p.lower)


def _trmm_backward(ctx, p, saved, out_grads, need_grad):
    xp, (a, b), grad = ctx.xp, saved, out_grads[0]
    grads = [None, None]
    if need_grad[0]:
        grads[0] = scale(xp, p.alpha, _grad_of_triangle(xp, p, grad, b))
    if need_grad[1]:
        grads[1] = triangular_product(xp, a, grad, p, not p.transpose)
    return grads


def _trsm_forward(ctx, p, inputs, aux):
    a, b = inputs
    out = triangular_solve(ctx.xp, a, b, p, p.transpose).astype(b.dtype, copy=False)
    return [out], (a, out)


def _trsm_backward(ctx, p, saved, out_grads, need_grad):
    xp, (a, out), grad = ctx.xp, saved, out_grads[0]
    db = triangular_solve(xp, a, grad, p, not p.transpose)
    grads = [None, None]
    if need_grad[0]:
        # MXNet scales by -1/alpha (-inf for alpha 0, which makes NaN) and masks afterwards
        factor = -1.0 / p.alpha if p.alpha else -math.inf
        grads[0] = triangle(xp, factor * _grad_of_triangle(xp, p, db, out), p.lower)
    if need_grad[1]:
        grads[1] = db
    return grads


TRMM = OpDef(
    name="_linalg_trmm",
    aliases=("linalg_trmm",),
    params=TriangularParams,
    arguments=("A", "B"),
    infer_shape=_triangular_infer_shape,
    infer_type=la_float_type,
    forward=_trmm_forward,
    backward=_trmm_backward,
    doc="alpha * op(A) B (or B op(A)) with A triangular (BLAS trmm).",
)

TRSM = OpDef(
    name="_linalg_trsm",
    aliases=("linalg_trsm",),
    params=TriangularParams,
    arguments=("A", "B"),
    infer_shape=_triangular_infer_shape,
    infer_type=la_float_type,
    forward=_trsm_forward,
    backward=_trsm_backward,
    doc="Solves op(A) X = alpha B (or X op(A) = alpha B) with A triangular (BLAS trsm).",
)


# -- syrk --------------------------------------------------------------------------


@attrs.frozen
class SyrkParams:
    transpose: bool = param("bool", False)
    alpha: float = param("float", 1.0)


def _syrk_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    a = in_shapes[0]
    if a is None:
        return in_shapes, out_shapes, aux_shapes
    if len(a) < 2:
        raise mismatch("A", tuple(a), "(..., m, n)", "syrk needs a tensor of matrices")
    m = a[-1] if p.transpose else a[-2]
    return in_shapes, [merge_shape((*a[:-2], m, m), out_shapes[0])], aux_shapes


def _syrk_forward(ctx, p, inputs, aux):
    xp, a = ctx.xp, inputs[0]
    product = xp.matmul(swap(xp, a), a) if p.transpose else xp.matmul(a, swap(xp, a))
    return [scale(xp, p.alpha, product).astype(a.dtype, copy=False)], a


def _syrk_backward(ctx, p, a, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    xp, grad = ctx.xp, out_grads[0]
    sym = grad + swap(xp, grad)
    return [scale(xp, p.alpha, xp.matmul(a, sym) if p.transpose else xp.matmul(sym, a))]


SYRK = OpDef(
    name="_linalg_syrk",
    aliases=("linalg_syrk",),
    params=SyrkParams,
    infer_shape=_syrk_infer_shape,
    arguments=("A",),
    infer_type=la_float_type,
    forward=_syrk_forward,
    backward=_syrk_backward,
    doc="alpha * A A^T (or alpha * A^T A) over batches of matrices (BLAS syrk).",
)

OPS = [GEMM, GEMM2, TRMM, TRSM, SYRK]
