"""Sparse kernels of the unary, scalar, reduction, indexing and slicing operators.

Same contract as ``sparse_dot``: ``kernel(ctx, op, p, inputs, out_stypes)``
returns the outputs (dense arrays or ``Parts``), or None where the storage
combination has no sparse kernel here, in which case the dispatcher computes
densely and casts (MXNet's values, its storage types, no fallback warning:
MXNet has a kernel there and warns nothing).
"""

from ..errors import RebindError
from .contrib_dgl import KERNELS as DGL_KERNELS
from .contrib_dgl_sample import KERNELS as SAMPLER_KERNELS
from .contrib_graph import edge_id_csr_kernel
from .sparse_dot import KERNELS as PRODUCT_KERNELS
from .sparse_parts import AUX_DTYPE, Parts, as_matrix, empty, from_dense, to_dense
from .sparse_stypes import SPARSE_UNARY

__all__ = ["KERNELS", "EmbeddingIndexError", "check_embedding_indices"]


class EmbeddingIndexError(RebindError, IndexError):
    """An index outside [0, input_dim) reached an embedding with a row_sparse weight."""


def _on_values(ctx, op, p, value):
    outputs, _ = op.forward(ctx, p, [value], [])
    return outputs[0]


def values_kernel(ctx, op, p, inputs, out_stypes):
    """f(stored values), same pattern: unary functions with f(0) = 0 and the scalar ops."""
    (value,) = inputs
    if not isinstance(value, Parts) or out_stypes[0] != value.stype:
        return None
    if op.name == "zeros_like":
        return [empty(ctx.xp, value.stype, value.shape, value.dtype)]
    out = _on_values(ctx, op, p, value.values)
    if ctx.xp.may_share_memory(out, value.values):  # (identity ops): a result of its own
        out = out.copy()
    return [Parts(value.stype, out, tuple(a.copy() for a in value.aux), value.shape)]


def reduce_kernel(ctx, op, p, inputs, out_stypes):
    """sum / mean of a csr array along axis 0 or 1 (dense result)."""
    xp, (value,) = ctx.xp, inputs
    if not isinstance(value, Parts) or value.stype != "csr":
        return None
    axis = tuple(p.axis)[0]
    total = xp.asarray(as_matrix(xp, value).sum(axis=axis)).reshape(-1)
    if op.name == "mean":
        total = total / value.shape[axis]
    return [total.astype(value.dtype, copy=False)]


def square_sum_kernel(ctx, op, p, inputs, out_stypes):
    """_square_sum of a row_sparse array (row_sparse with keepdims along axis 1)."""
    xp, (value,) = ctx.xp, inputs
    axis = tuple(p.axis)[0]
    squares = value.values * value.values
    if axis == 1:
        rows = squares.sum(axis=1, keepdims=p.keepdims)
        if out_stypes[0] == "row_sparse":
            return [Parts("row_sparse", rows, value.aux, (value.shape[0], 1))]
        dense = xp.zeros((value.shape[0], 1) if p.keepdims else (value.shape[0],), value.dtype)
        dense[value.indices] = rows
        return [dense]
    return [squares.sum(axis=0, keepdims=p.keepdims).astype(value.dtype, copy=False)]


def cast_kernel(ctx, op, p, inputs, out_stypes):
    """cast_storage: a copy in the target storage."""
    xp, (value,) = ctx.xp, inputs
    if isinstance(value, Parts) and value.stype == p.stype:
        return [
            Parts(value.stype, value.values.copy(), tuple(a.copy() for a in value.aux), value.shape)
        ]
    dense = to_dense(xp, value)
    return [from_dense(xp, dense.copy() if dense is value else dense, p.stype)]


def slice_kernel(ctx, op, p, inputs, out_stypes):
    """slice of a csr array: rows begin:end, and columns where begin/end give them."""
    xp, (value,) = ctx.xp, inputs
    rows, cols = value.shape
    begin, end = tuple(p.begin), tuple(p.end)
    r0, r1 = slice(begin[0], end[0]).indices(rows)[:2]
    c0, c1 = slice(*(begin[1:2] or (None,)), *(end[1:2] or (None,))).indices(cols)[:2]
    r1, c1 = max(r0, r1), max(c0, c1)
    indptr = value.indptr
    lo, hi = int(indptr[r0]), int(indptr[r1])
    values, indices = value.values[lo:hi], value.indices[lo:hi]
    counts = xp.diff(indptr[r0 : r1 + 1])
    if (c0, c1) != (0, cols):
        keep = (indices >= c0) & (indices < c1)
        row_of = xp.repeat(xp.arange(r1 - r0), counts)
        counts = xp.bincount(row_of[keep], minlength=r1 - r0)
        values, indices = values[keep], indices[keep] - c0
    new_ptr = xp.zeros(r1 - r0 + 1, AUX_DTYPE)
    xp.cumsum(counts, out=new_ptr[1:])
    return [Parts("csr", values.copy(), (new_ptr, indices.astype(AUX_DTYPE)), (r1 - r0, c1 - c0))]


def take_kernel(ctx, op, p, inputs, out_stypes):
    """take(csr, indices, axis=0): the indexed rows (clipped or wrapped) as a csr array."""
    xp, (value, index) = ctx.xp, inputs
    rows = value.shape[0]
    wanted = index.astype("int64").reshape(-1)
    wanted = wanted % rows if p.mode == "wrap" else xp.clip(wanted, 0, rows - 1)
    starts, counts = value.indptr[wanted], xp.diff(value.indptr)[wanted]
    indptr = xp.zeros(wanted.shape[0] + 1, AUX_DTYPE)
    xp.cumsum(counts, out=indptr[1:])
    # the position of every output element in the input's value array
    offsets = xp.arange(int(indptr[-1]), dtype=AUX_DTYPE) - xp.repeat(indptr[:-1], counts)
    source = xp.repeat(starts, counts) + offsets
    shape = (wanted.shape[0], value.shape[1])
    return [Parts("csr", value.values[source], (indptr, value.indices[source]), shape)]


def getnnz_kernel(ctx, op, p, inputs, out_stypes):
    """_contrib_getnnz of a csr array: from its row pointers."""
    xp, (value,) = ctx.xp, inputs
    if p.axis is None:
        return [value.indptr[-1:].astype("int64")]
    if p.axis == 0:
        raise NotImplementedError("getnnz with axis = 0 is not supported yet (as in MXNet 1.9.1)")
    return [xp.diff(value.indptr).astype("int64")]


def _rsp_lookup(xp, weight, positions, input_dim):
    """Rows of a row_sparse weight at integer ``positions`` (absent rows are zeros)."""
    out = xp.zeros((positions.size, *weight.shape[1:]), weight.dtype)
    if weight.indices.size:
        found = xp.searchsorted(weight.indices, positions.ravel())
        found = xp.minimum(found, weight.indices.size - 1)
        hit = weight.indices[found] == positions.ravel()
        out[hit] = weight.values[found[hit]]
    return out.reshape(*positions.shape, *weight.shape[1:])


def check_embedding_indices(xp, op_name, data, input_dim):
    """MXNet's bound check of sparse embeddings: every index within [0, input_dim - 1]."""
    if data.size and bool(((data < 0) | (data > input_dim - 1)).any()):
        raise EmbeddingIndexError(
            f"{op_name}: Embedding input contains data out of bound (indices must lie in "
            f"[0, {input_dim - 1}], input_dim={input_dim}; MXNet checks them whenever the "
            "weight or its gradient is row_sparse)"
        )


def embedding_kernel(ctx, op, p, inputs, out_stypes):
    """Embedding / SparseEmbedding with a row_sparse weight: its stored rows gathered."""
    xp, (data, weight) = ctx.xp, inputs
    if not isinstance(weight, Parts):
        return None
    check_embedding_indices(xp, op.name, data, p.input_dim)
    return [_rsp_lookup(xp, weight, data.astype("int64"), p.input_dim)]


def retain_kernel(ctx, op, p, inputs, out_stypes):
    """_sparse_retain: the stored rows of a row_sparse array whose index is listed."""
    xp, (value, wanted) = ctx.xp, inputs
    keep = xp.isin(value.indices, wanted.astype("int64"))
    return [Parts("row_sparse", value.values[keep], (value.indices[keep],), value.shape)]


def scatter_div_kernel(ctx, op, p, inputs, out_stypes):
    """_scatter_elemwise_div: a row_sparse lhs divided on its stored rows only."""
    xp, (lhs, rhs) = ctx.xp, inputs
    picked = to_dense(xp, rhs)[lhs.indices]
    outputs, _ = op.forward(ctx, p, [lhs.values, picked], [])
    return [lhs.with_values(outputs[0])]


KERNELS = dict(PRODUCT_KERNELS)
KERNELS.update({name: values_kernel for name in SPARSE_UNARY})
KERNELS.update(
    {
        "_mul_scalar": values_kernel,
        "_contrib_quadratic": values_kernel,
        "_div_scalar": values_kernel,
        "_plus_scalar": values_kernel,
        "_minus_scalar": values_kernel,
        "_scatter_plus_scalar": values_kernel,
        "_scatter_minus_scalar": values_kernel,
        "clip": values_kernel,
        "_scatter_elemwise_div": scatter_div_kernel,
        "sum": reduce_kernel,
        "mean": reduce_kernel,
        "_square_sum": square_sum_kernel,
        "cast_storage": cast_kernel,
        "slice": slice_kernel,
        "Embedding": embedding_kernel,
        "_contrib_SparseEmbedding": embedding_kernel,
        "_sparse_retain": retain_kernel,
        "take": take_kernel,
        "_contrib_getnnz": getnnz_kernel,
        "_contrib_edge_id": edge_id_csr_kernel,
        "_equal_scalar": values_kernel,
        "_not_equal_scalar": values_kernel,
        "_greater_scalar": values_kernel,
        "_greater_equal_scalar": values_kernel,
        "_lesser_scalar": values_kernel,
        "_lesser_equal_scalar": values_kernel,
    }
)
KERNELS.update({**DGL_KERNELS, **SAMPLER_KERNELS})
