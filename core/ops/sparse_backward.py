"""Sparse gradients: the backward kernels that keep row_sparse storage.

``kernel(ctx, op, p, inputs, out_grads, need_grad) -> in_grads`` with inputs
and gradients dense backend arrays or ``Parts`` (None where no gradient is
wanted). Where an operator has no entry, or an entry returns None, the
executor runs the dense backward (and the gradient's storage is cast after).
Facts from MXNet 1.9.1: dot-inl.h (dot(csr.T, ograd) is row_sparse),
indexing_op.h (Embedding's row_sparse weight gradient), square_sum-inl.h.
"""

from .sparse_dot import _csr_t_times, _csr_times
from .sparse_kernels import check_embedding_indices
from .sparse_parts import AUX_DTYPE, Parts, to_dense

__all__ = ["BACKWARD_KERNELS", "add_grads"]


def _dot_backward(ctx, op, p, inputs, out_grads, need_grad):
    xp, (lhs, _), (ograd,) = ctx.xp, inputs, out_grads
    if not (isinstance(lhs, Parts) and lhs.stype == "csr") or p.transpose_b:
        return None
    if need_grad[0]:
        return None  # a csr lhs's gradient is dense: MXNet computes it densely too
    if p.transpose_a:
        return [None, _csr_times(xp, lhs, to_dense(xp, ograd))]
    ograd = (
        ograd if isinstance(ograd, Parts) and ograd.stype == "row_sparse" else to_dense(xp, ograd)
    )
    return [None, _csr_t_times(xp, lhs, ograd, "row_sparse")]


def _embedding_backward(ctx, op, p, inputs, out_grads, need_grad):
    """The weight gradient as row_sparse: one row per distinct index, summed in order."""
    if not (p.sparse_grad and need_grad[1]):
        return None
    xp, (data, _weight) = ctx.xp, inputs
    check_embedding_indices(xp, op.name, data, p.input_dim)
    grad = to_dense(xp, out_grads[0]).reshape(-1, p.output_dim)
    positions = data.astype("int64").reshape(-1)
    rows, inverse = xp.unique(positions, return_inverse=True)
    summed = xp.zeros((rows.shape[0], p.output_dim), dtype=grad.dtype)
    if xp.__name__ == "numpy":
        xp.add.at(summed, inverse.reshape(-1), grad)
    else:
        from .indexing import scatter_add

        scatter_add(xp, summed, inverse.reshape(-1), grad)
    weight_grad = Parts(
        "row_sparse", summed, (rows.astype(AUX_DTYPE),), (p.input_dim, p.output_dim)
    )
    return [xp.zeros_like(data) if need_grad[0] else None, weight_grad]


def _cast_backward(ctx, op, p, inputs, out_grads, need_grad):
    """cast_storage's backward is a copy of the head gradient, in the gradient's storage."""
    return [out_grads[0]]


def _add_sub_backward(ctx, op, p, inputs, out_grads, need_grad):
    """elemwise_add / elemwise_sub: the gradient passes through in its own storage."""
    grad = out_grads[0]
    if not isinstance(grad, Parts):
        return None
    negated = grad.with_values(-grad.values)
    second = negated if op.name == "elemwise_sub" else grad
    return [grad if need_grad[0] else None, second if need_grad[1] else None]


def _square_sum_backward(ctx, op, p, inputs, out_grads, need_grad):
    """2 x ograd on the stored rows of a row_sparse input (row_sparse gradient)."""
    xp, (value,) = ctx.xp, inputs
    if not (isinstance(value, Parts) and value.stype == "row_sparse"):
        return None
    ograd = to_dense(xp, out_grads[0])
    axis = tuple(p.axis)[0]
    if axis == 1:
        scale = ograd.reshape(-1)[value.indices].reshape(-1, 1)
    else:
        scale = ograd.reshape(1, -1)
    return [value.with_values(2 * value.values * scale)]


BACKWARD_KERNELS = {
    "dot": _dot_backward,
    "Embedding": _embedding_backward,
    "_contrib_SparseEmbedding": _embedding_backward,
    "cast_storage": _cast_backward,
    "elemwise_add": _add_sub_backward,
    "elemwise_sub": _add_sub_backward,
    "_square_sum": _square_sum_backward,
}


def add_grads(xp, first, second):
    """The sum of two gradients: row_sparse + row_sparse stays row_sparse, else dense."""
    if first is None:
        return second
    both_rsp = all(isinstance(g, Parts) and g.stype == "row_sparse" for g in (first, second))
    if both_rsp:
        rows = xp.unique(xp.concatenate([first.indices, second.indices]))
        total = xp.zeros((rows.shape[0], *first.shape[1:]), first.dtype)
        for grad in (first, second):
            total[xp.searchsorted(rows, grad.indices)] += grad.values
        return Parts("row_sparse", total, (rows.astype(AUX_DTYPE),), first.shape)
    return to_dense(xp, first) + to_dense(xp, second)
