"""Sparse values as kernels see them: storage type, stored values, aux arrays, shape.

A ``Parts`` is what a sparse kernel receives and returns in place of a dense
backend array: MXNet's layout (csr: ``aux = (indptr, indices)``; row_sparse:
``aux = (indices,)``, ascending rows), all indices int64, the arrays NumPy or
CuPy. The dense conversions are the ndarray layer's (``sparse_convert``);
this module adds SciPy / ``cupyx.scipy.sparse`` matrices for the products,
imported on first use with an error naming the extra to install.
"""

import attrs

from ..ndarray.sparse_convert import AUX_DTYPE, FROM_DENSE, TO_DENSE, empty_parts

__all__ = [
    "Parts",
    "as_matrix",
    "empty",
    "from_dense",
    "is_sparse",
    "matrix_values",
    "scipy_sparse",
    "to_dense",
]


@attrs.frozen
class Parts:
    """A sparse value: ``stype`` ('csr' or 'row_sparse'), ``values``, ``aux``, ``shape``."""

    stype: str
    values: object
    aux: tuple
    shape: tuple

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def indices(self):
        """Column indices (csr) or row indices (row_sparse)."""
        return self.aux[-1]

    @property
    def indptr(self):
        return self.aux[0]

    def with_values(self, values):
        """The same pattern holding ``values``."""
        return Parts(self.stype, values, self.aux, self.shape)


def is_sparse(value):
    return isinstance(value, Parts)


def to_dense(xp, value):
    """A dense backend array of ``value`` (dense values pass through)."""
    if not isinstance(value, Parts):
        return value
    return TO_DENSE[value.stype](xp, value.values, value.aux, value.shape)


def from_dense(xp, dense, stype):
    """``dense`` in storage ``stype`` ('default' returns it unchanged)."""
    if stype == "default":
        return dense
    values, aux = FROM_DENSE[stype](xp, dense)
    return Parts(stype, values, tuple(aux), tuple(dense.shape))


def empty(xp, stype, shape, dtype):
    """An all-zero sparse value: nothing stored."""
    values, aux = empty_parts(xp, stype, shape, dtype)
    return Parts(stype, values, tuple(aux), tuple(shape))


def scipy_sparse(xp):
    """``scipy.sparse`` for NumPy arrays, ``cupyx.scipy.sparse`` for CuPy ones."""
    if xp.__name__ == "numpy":
        try:
            import scipy.sparse as module
        except ImportError as exc:
            raise ImportError(
                "sparse operators on the CPU need SciPy; install it with "
                "`pip install rebind[sparse]` (or `pip install scipy`)"
            ) from exc
        return module
    import cupyx.scipy.sparse as module

    return module


def as_matrix(xp, value):
    """A csr value as a SciPy (or cupyx) csr_matrix sharing its arrays."""
    module = scipy_sparse(xp)
    indices, indptr = value.indices, value.indptr
    if xp.__name__ != "numpy":  # cupyx's sparse matrices index with int32 only
        indices, indptr = indices.astype("int32"), indptr.astype("int32")
    return module.csr_matrix((matrix_values(value.values), indices, indptr), shape=value.shape)


def matrix_values(values):
    """Values SciPy's sparse products take: float16 widened to float32 (results cast back)."""
    return values.astype("float32") if values.dtype == "float16" else values


def from_matrix(xp, matrix, dtype):
    """The Parts of a SciPy/cupyx sparse matrix (made canonical: sorted, no duplicates)."""
    matrix = matrix.tocsr()
    matrix.sum_duplicates()
    matrix.sort_indices()
    aux = (matrix.indptr.astype(AUX_DTYPE), matrix.indices.astype(AUX_DTYPE))
    return Parts("csr", xp.asarray(matrix.data, dtype=dtype), aux, tuple(matrix.shape))
