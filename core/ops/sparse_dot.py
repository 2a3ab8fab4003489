"""Sparse kernels of ``dot`` and the elementwise binary operators.

Each kernel is ``kernel(ctx, op, p, inputs, out_stypes) -> outputs``: inputs
and outputs are dense backend arrays or ``Parts``; ``op`` is the dense OpDef,
whose own forward computes on stored values where that is what MXNet's sparse
kernel does. Storage rules are ``sparse_stypes``'s; the dispatcher
(``sparse_dispatch``) casts a result to the inferred storage if needed.
Products go through SciPy on the CPU and ``cupyx.scipy.sparse`` on a GPU.
"""

from ..ndarray.sparse_convert import csr_rows
from .sparse_parts import (
    AUX_DTYPE,
    Parts,
    as_matrix,
    from_dense,
    from_matrix,
    matrix_values,
    scipy_sparse,
    to_dense,
)
from .sparse_stypes import StorageTypeError

__all__ = ["KERNELS"]


def _dense_values(ctx, op, p, arrays):
    outputs, _ = op.forward(ctx, p, list(arrays), [])
    return outputs[0]


# -- dot ------------------------------------------------------------------------------------


def _rsp_rows_as_csr_rhs(xp, rhs):
    """A row_sparse right operand as (row indices, stored rows) for a product."""
    return rhs.indices, rhs.values.reshape(rhs.values.shape[0], *rhs.shape[1:])


def _csr_times(xp, lhs, rhs):
    """csr @ (dense or row_sparse) -> dense, without making the rhs dense."""
    matrix = as_matrix(xp, lhs)
    if isinstance(rhs, Parts):
        rows, stored = _rsp_rows_as_csr_rhs(xp, rhs)
        if rows.shape[0] < rhs.shape[0]:  # (a weight storing every row needs no renumbering)
            matrix = _columns_renumbered(xp, lhs, rows)
        return xp.asarray(matrix @ stored).astype(lhs.dtype, copy=False)
    return xp.asarray(matrix @ rhs).astype(lhs.dtype, copy=False)


def _columns_renumbered(xp, lhs, rows):
    """The csr restricted to the columns in ``rows`` (ascending), numbered 0..len(rows)-1."""
    table = xp.full(lhs.shape[1], -1, dtype=AUX_DTYPE)
    table[rows] = xp.arange(rows.shape[0], dtype=AUX_DTYPE)
    mapped = table[lhs.indices]
    keep = mapped >= 0
    counts = xp.bincount(csr_rows(xp, lhs.indptr)[keep], minlength=lhs.shape[0])
    indptr = xp.zeros(lhs.shape[0] + 1, AUX_DTYPE)
    xp.cumsum(counts, out=indptr[1:])
    kept = Parts("csr", lhs.values[keep], (indptr, mapped[keep]), (lhs.shape[0], rows.shape[0]))
    return as_matrix(xp, kept)


def _used_positions(xp, indices, size):
    """``(used, position)``: the distinct values of ``indices`` (ascending) and, for each
    entry, its place among them. A table of ``size`` entries where that is cheaper than
    sorting (feature ids of a batch: few distinct ones out of millions)."""
    if indices.size == 0:
        return xp.zeros(0, AUX_DTYPE), xp.zeros(0, AUX_DTYPE)
    if size <= 32 * indices.size:
        seen = xp.zeros(size, dtype=bool)
        seen[indices] = True
        used = xp.flatnonzero(seen).astype(AUX_DTYPE)
        table = xp.empty(size, dtype=AUX_DTYPE)
        table[used] = xp.arange(used.shape[0], dtype=AUX_DTYPE)
        return used, table[indices]
    used, position = xp.unique(indices, return_inverse=True)
    return used.astype(AUX_DTYPE), position.reshape(-1).astype(AUX_DTYPE)


def _csr_t_times(xp, lhs, rhs, out_stype):
    """csr.T @ (dense or row_sparse): row_sparse on the csr's used columns, or dense.

    The csr's arrays read as column-compressed ones are its transpose; with the
    used columns renumbered 0..k-1 the product touches each stored value once.
    """
    module = scipy_sparse(xp)
    if isinstance(rhs, Parts):  # rows of the rhs not stored are zero: drop what meets them
        rhs = to_dense_rows(xp, rhs, lhs.shape[0])
    used, position = _used_positions(xp, lhs.indices, lhs.shape[1])
    n_out = rhs.shape[1] if rhs.ndim > 1 else 1
    indptr = lhs.indptr if xp.__name__ == "numpy" else lhs.indptr.astype("int32")
    position = position if xp.__name__ == "numpy" else position.astype("int32")
    transposed = module.csc_matrix(
        (matrix_values(lhs.values), position, indptr), shape=(used.shape[0], lhs.shape[0])
    )
    rows = xp.asarray(transposed @ rhs.reshape(lhs.shape[0], n_out))
    rows = rows.astype(lhs.dtype, copy=False).reshape(used.shape[0], n_out)
    shape = (lhs.shape[1], n_out)
    if out_stype == "row_sparse":
        return Parts("row_sparse", xp.ascontiguousarray(rows), (used,), shape)
    dense = xp.zeros(shape, lhs.dtype)
    dense[used] = rows
    return dense


def to_dense_rows(xp, value, rows):
    """A row_sparse operand of ``rows`` rows as a dense array (its rows are the product's)."""
    dense = xp.zeros((rows, *value.shape[1:]), value.dtype)
    dense[value.indices] = value.values
    return dense


def _dense_times_csr(xp, lhs, rhs, transpose_b, out_stype):
    """dense @ csr (-> csr on the CPU, or dense) and dense @ csr.T (-> dense)."""
    matrix = as_matrix(xp, rhs)
    product = (matrix @ lhs.T).T if transpose_b else (matrix.T @ lhs.T).T
    product = xp.ascontiguousarray(xp.asarray(product).astype(lhs.dtype, copy=False))
    return from_dense(xp, product, out_stype)


def _check_dtype(*operands):
    """MXNet's sparse dot kernels take float32 and float64 values only."""
    for value in operands:
        if value.dtype.name not in ("float32", "float64"):
            raise StorageTypeError(
                f"dot: sparse dot supports float32 and float64 values (MXNet 1.9.1's kernels), "
                f"got {value.dtype.name}; cast the operands with astype('float32')"
            )


def dot_kernel(ctx, op, p, inputs, out_stypes):
    """dot for the storage pairs MXNet has kernels for; None for the rest (dense route)."""
    xp, (lhs, rhs), out = ctx.xp, inputs, out_stypes[0]
    _check_dtype(lhs, rhs)
    lhs_csr = isinstance(lhs, Parts) and lhs.stype == "csr"
    rhs_csr = isinstance(rhs, Parts) and rhs.stype == "csr"
    rhs_ok = not isinstance(rhs, Parts) or rhs.stype == "row_sparse"
    if lhs_csr and rhs_ok and p.transpose_a and not p.transpose_b:
        # MXNet's kernel handles an rsp that stores every row (as dense) or an empty operand
        partial = isinstance(rhs, Parts) and 0 < rhs.indices.shape[0] < rhs.shape[0]
        if partial and lhs.values.size and out == "default":
            raise StorageTypeError(
                "dot: DotCsrRspDnsImpl has not implemented dot(csr.T, rsp) = dns yet (as in "
                "MXNet 1.9.1); use forward_stype='row_sparse' or a dense rhs"
            )
        return [_csr_t_times(xp, lhs, rhs, out)]
    if lhs_csr and rhs_ok and not p.transpose_a and not p.transpose_b:
        return [from_dense(xp, _csr_times(xp, lhs, rhs), out)]
    if not isinstance(lhs, Parts) and rhs_csr and not p.transpose_a:
        return [_dense_times_csr(xp, lhs, rhs, p.transpose_b, out)]
    return None


# -- elementwise binary ---------------------------------------------------------------------


def _union_rows(xp, values_list, shape):
    """Row_sparse operands gathered on the union of their rows: (indices, [rows...])."""
    indices = xp.unique(xp.concatenate([v.indices for v in values_list]))
    gathered = []
    for value in values_list:
        rows = xp.zeros((indices.shape[0], *shape[1:]), value.dtype)
        rows[xp.searchsorted(indices, value.indices)] = value.values
        gathered.append(rows)
    return indices.astype(AUX_DTYPE), gathered


def _rsp_pair(ctx, op, p, lhs, rhs):
    xp = ctx.xp
    indices, (left, right) = _union_rows(xp, [lhs, rhs], lhs.shape)
    return Parts("row_sparse", _dense_values(ctx, op, p, [left, right]), (indices,), lhs.shape)


_SCIPY_BINARY = {
    "elemwise_add": lambda a, b: a + b,
    "elemwise_sub": lambda a, b: a - b,
    "elemwise_mul": lambda a, b: a.multiply(b),
    "_maximum": lambda a, b: a.maximum(b),
    "_minimum": lambda a, b: a.minimum(b),
}


def _csr_pair(ctx, op, p, lhs, rhs):
    xp = ctx.xp
    combine = _SCIPY_BINARY.get(op.name)
    if combine is None:  # (hypot) on the union pattern, through dense rows
        dense = _dense_values(ctx, op, p, [to_dense(xp, lhs), to_dense(xp, rhs)])
        return from_dense(xp, dense, "csr")
    result = combine(as_matrix(xp, lhs), as_matrix(xp, rhs))
    return from_matrix(xp, result, lhs.dtype)


def _sparse_times_dense(ctx, op, p, sparse, dense):
    """sparse * dense on the sparse operand's pattern (MXNet's kernel: 0 * inf stays 0)."""
    xp = ctx.xp
    if sparse.stype == "row_sparse":
        picked = dense[sparse.indices]
    else:
        rows = xp.repeat(xp.arange(sparse.shape[0]), xp.diff(sparse.indptr))
        picked = dense[rows, sparse.indices]
    return sparse.with_values(_dense_values(ctx, op, p, [sparse.values, picked]))


def binary_kernel(ctx, op, p, inputs, out_stypes):
    """elemwise_add/sub/mul/div, _maximum, _minimum, _hypot with a sparse operand."""
    lhs, rhs = inputs
    both = isinstance(lhs, Parts) and isinstance(rhs, Parts) and lhs.stype == rhs.stype
    if both and out_stypes[0] == "row_sparse":
        return [_rsp_pair(ctx, op, p, lhs, rhs)]
    if both and out_stypes[0] == "csr":
        return [_csr_pair(ctx, op, p, lhs, rhs)]
    if op.name == "elemwise_mul" and out_stypes[0] != "default":
        if isinstance(lhs, Parts):
            return [_sparse_times_dense(ctx, op, p, lhs, rhs)]
        swapped = _sparse_times_dense(ctx, op, p, rhs, lhs)
        return [swapped]
    return None


def broadcast_kernel(ctx, op, p, inputs, out_stypes):
    """broadcast_mul / broadcast_div of a csr lhs by a dense rhs: on the csr's pattern."""
    xp, (lhs, rhs) = ctx.xp, inputs
    if out_stypes[0] != "csr":
        return None
    rows = xp.repeat(xp.arange(lhs.shape[0]), xp.diff(lhs.indptr))
    picked = xp.broadcast_to(rhs, lhs.shape)[rows, lhs.indices]
    outputs, _ = op.forward(ctx, p, [lhs.values, picked], [])
    return [lhs.with_values(outputs[0])]


def add_n_kernel(ctx, op, p, inputs, out_stypes):
    """add_n of row_sparse arrays: the sum on the union of their rows."""
    if out_stypes[0] != "row_sparse":
        return None
    xp = ctx.xp
    indices, rows = _union_rows(xp, list(inputs), inputs[0].shape)
    total = _dense_values(ctx, op, p, rows)
    return [Parts("row_sparse", total, (indices,), inputs[0].shape)]


KERNELS = {
    "dot": dot_kernel,
    "elemwise_add": binary_kernel,
    "elemwise_sub": binary_kernel,
    "elemwise_mul": binary_kernel,
    "elemwise_div": binary_kernel,
    "_maximum": binary_kernel,
    "_minimum": binary_kernel,
    "_hypot": binary_kernel,
    "add_n": add_n_kernel,
    "broadcast_mul": broadcast_kernel,
    "broadcast_div": broadcast_kernel,
}
