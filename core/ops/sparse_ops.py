"""Operators that exist for sparse storage: SparseEmbedding, _sparse_retain, quadratic.

Their dense kernels are here (what runs on dense inputs and in a bound graph);
the kernels on row_sparse parts are ``sparse_kernels``'s. SparseEmbedding is
MXNet's Embedding whose weight gradient is always row_sparse (``deterministic``
only changes MXNet's GPU summation order: rebind's sums are ordered anyway).
"""

import attrs

from .base import OpDef, elementwise_shape, merge_shape, same_type
from .indexing import EMBEDDING
from .params import param, positive

__all__ = ["OPS"]


@attrs.frozen
class SparseEmbeddingParams:
    input_dim: int = param("int", validator=positive)
    output_dim: int = param("int", validator=positive)
    dtype: str = param(
        "dtype", "float32", choices=("float32", "float64", "float16", "uint8", "int32")
    )
    deterministic: bool = param("bool", False)
    # the gradient is row_sparse whatever this says: Embedding's rules read it
    sparse_grad: bool = True


SPARSE_EMBEDDING = OpDef(
    name="_contrib_SparseEmbedding",
    params=SparseEmbeddingParams,
    arguments=("data", "weight"),
    infer_shape=EMBEDDING.infer_shape,
    infer_type=EMBEDDING.infer_type,
    forward=EMBEDDING.forward,
    backward=EMBEDDING.backward,
    doc="Embedding whose weight gradient is row_sparse: rows of weight at the indices in data.",
)


def _retain_shape(p, in_shapes, out_shapes, aux_shapes):
    data, indices = in_shapes
    data = merge_shape(data, out_shapes[0], "data")
    return [data, indices], [data], aux_shapes


def _retain_type(p, in_types, out_types, aux_types):
    dtype = in_types[0] or out_types[0]
    return [dtype, in_types[1]], [dtype], aux_types


def _retain_forward(ctx, p, inputs, aux):
    data, indices = inputs
    keep = _kept_rows(ctx.xp, data.shape[0], indices)
    out = data * keep.reshape(-1, *([1] * (data.ndim - 1))).astype(data.dtype)
    return [out], (keep, indices)


def _kept_rows(xp, rows, indices):
    keep = xp.zeros(rows, dtype=bool)
    keep[indices.astype("int64")] = True
    return keep


def _retain_backward(ctx, p, saved, out_grads, need_grad):
    keep, indices = saved
    grad = out_grads[0]
    data_grad = None
    if need_grad[0]:
        data_grad = grad * keep.reshape(-1, *([1] * (grad.ndim - 1))).astype(grad.dtype)
    return [data_grad, ctx.xp.zeros_like(indices) if need_grad[1] else None]


SPARSE_RETAIN = OpDef(
    name="_sparse_retain",
    arguments=("data", "indices"),
    infer_shape=_retain_shape,
    infer_type=_retain_type,
    forward=_retain_forward,
    backward=_retain_backward,
    doc="The rows of a row_sparse array listed in indices (the others become zero).",
)


@attrs.frozen
class QuadraticParams:
    a: float = param("float", 0.0)
    b: float = param("float", 0.0)
    c: float = param("float", 0.0)


def _quadratic_forward(ctx, p, inputs, aux):
    (x,) = inputs
    out = (p.a * x * x + p.b * x + p.c).astype(x.dtype, copy=False)
    return [out], x


def _quadratic_backward(ctx, p, saved, out_grads, need_grad):
    x = saved
    return [(out_grads[0] * (2 * p.a * x + p.b)).astype(x.dtype, copy=False)]


QUADRATIC = OpDef(
    name="_contrib_quadratic",
    params=QuadraticParams,
    arguments=("data",),
    infer_shape=elementwise_shape,
    infer_type=same_type,
    forward=_quadratic_forward,
    backward=_quadratic_backward,
    doc="a * x**2 + b * x + c, elementwise (csr stays csr when c is 0).",
)


@attrs.frozen
class GetnnzParams:
    axis: int = param("int", None, optional=True)


def _getnnz_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    if p.axis not in (None, 0, 1):
        raise ValueError(f"getnnz: unexpected value for axis({p.axis}); candidates are None, 0, 1")
    out = (1,) if p.axis is None else (data[1 - p.axis],)
    return in_shapes, [out], aux_shapes


def _getnnz_forward(ctx, p, inputs, aux):
    """Stored-element counts of a dense 2-d array (csr inputs go to sparse_kernels)."""
    nonzero = inputs[0] != 0
    if p.axis is None:
        return [nonzero.sum().reshape(1).astype("int64")], None
    return [nonzero.sum(axis=1 - p.axis).astype("int64")], None


GETNNZ = OpDef(
    name="_contrib_getnnz",
    params=GetnnzParams,
    arguments=("data",),
    infer_shape=_getnnz_shape,
    infer_type=lambda p, i, o, a: (i, ["int64"], a),
    forward=_getnnz_forward,
    doc="The number of stored values of a csr array, in all or per row (axis=1).",
)

OPS = [SPARSE_EMBEDDING, SPARSE_RETAIN, QUADRATIC, GETNNZ]
