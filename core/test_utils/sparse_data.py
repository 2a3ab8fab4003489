"""Random sparse arrays for tests, drawn as MXNet 1.9.1's ``test_utils`` draws them.

Every draw uses NumPy's global generator (and SciPy's ``sparse.rand``, which
uses it too) in MXNet's order, so a test seeded with ``np.random.seed(n)``
gets the array it got on MXNet.
"""

import numpy as np
import numpy.random as rnd

from .. import ndarray as nd
from .tolerances import default_context, default_dtype

__all__ = [
    "create_sparse_array",
    "create_sparse_array_zd",
    "rand_sparse_ndarray",
    "shuffle_csr_column_indices",
]


def _validate_csr_generation_inputs(num_rows, num_cols, density, distribution="uniform"):
    """Refuse a density outside [0, 1], an empty shape, or a powerlaw too sparse to build."""
    total_nnz = int(num_rows * num_cols * density)
    if density < 0 or density > 1:
        raise ValueError("density has to be between 0 and 1")
    if num_rows <= 0 or num_cols <= 0:
        raise ValueError("num_rows or num_cols should be greater than 0")
    if distribution == "powerlaw" and total_nnz < 2 * num_rows:
        raise ValueError(
            f"not supported for this density: {density} for this shape ({num_rows}, "
            f"{num_cols}) Please keep : num_rows * num_cols * density >= 2 * num_rows"
        )


def shuffle_csr_column_indices(csr):
    """Shuffle the column indices within each row of a SciPy csr matrix, in place."""
    for row in range(len(csr.indptr) - 1):
        start, end = csr.indptr[row], csr.indptr[row + 1]
        sublist = np.array(csr.indices[start:end])
        np.random.shuffle(sublist)
        csr.indices[start:end] = sublist


def _uniform_csr(num_rows, num_cols, density, dtype, data_init, shuffle_csr_indices):
    """A CSRNDArray whose non-zeros SciPy's ``sparse.rand`` placed uniformly."""
    _validate_csr_generation_inputs(num_rows, num_cols, density)
    from ..ndarray.sparse_array import import_scipy_sparse

    sparse = import_scipy_sparse("rand_sparse_ndarray(stype='csr')")
    csr = sparse.rand(num_rows, num_cols, density, dtype=dtype, format="csr")
    if data_init is not None:
        csr.data.fill(data_init)
    if shuffle_csr_indices is True:
        shuffle_csr_column_indices(csr)
    return nd.sparse.csr_matrix(
        (csr.data, csr.indices, csr.indptr), shape=(num_rows, num_cols), dtype=dtype
    )


def _powerlaw_csr(num_rows, num_cols, density, dtype):
    """A CSRNDArray whose rows hold exponentially more non-zeros (MXNet's powerlaw)."""
    _validate_csr_generation_inputs(num_rows, num_cols, density, distribution="powerlaw")
    unused = int(num_rows * num_cols * density)
    dense = np.zeros((num_rows, num_cols), dtype=dtype)
    for row in range(num_rows):  # a first non-zero in every row
        dense[row][0] = 1 + rnd.uniform(0.001, 2)
        unused -= 1
        if unused <= 0:
            return nd.array(dense).tostype("csr")
    col_max = 2
    for row in range(num_rows):
        col_limit = min(num_cols, col_max)
        if col_limit == num_cols and unused > col_limit:  # whole rows of one value
            dense[row] = 1 + rnd.uniform(0.001, 2)
            unused = unused - col_limit + 1
            if unused <= 0:
                return nd.array(dense).tostype("csr")
            continue
        for col in range(1, col_limit):
            dense[row][col] = 1 + rnd.uniform(0.001, 2)
            unused -= 1
            if unused <= 0:
                return nd.array(dense).tostype("csr")
        col_max *= 2
    if unused > 0:
        raise ValueError(
            f"not supported for this density: {density} for this shape ({num_rows},{num_cols})"
        )
    return nd.array(dense).tostype("csr")


def _each(values, function):
    """``function`` applied to every element (MXNet's ``assign_each``), as float64."""
    if function is None:
        return np.array(values)
    return np.vectorize(function, otypes=[np.float64])(values) if values.size else values


def rand_sparse_ndarray(
    shape,
    stype,
    density=None,
    dtype=None,
    distribution=None,
    data_init=None,
    rsp_indices=None,
    modifier_func=None,
    shuffle_csr_indices=False,
    ctx=None,
):
    """A random csr or row_sparse array and its parts, as MXNet's ``rand_sparse_ndarray``.

    Returns ``(array, (values, indices))`` for row_sparse (NumPy parts) and
    ``(array, (indptr, indices, data))`` for csr (NDArrays).
    """
    ctx = ctx if ctx else default_context()
    density = rnd.rand() if density is None else density
    dtype = default_dtype() if dtype is None else dtype
    distribution = "uniform" if distribution is None else distribution
    if stype == "row_sparse":
        if distribution != "uniform":
            raise ValueError(f"Distribution {distribution} not supported for row_sparse")
        if rsp_indices is not None:
            indices = rsp_indices
            assert len(indices) <= shape[0]
        else:
            indices = np.argwhere(rnd.rand(shape[0]) < density).flatten()
        if indices.shape[0] == 0:
            result = nd.zeros(shape, stype="row_sparse", dtype=dtype, ctx=ctx)
            return result, (np.array([], dtype=dtype), np.array([]))
        values = rnd.rand(indices.shape[0], *shape[1:]).astype(dtype)
        if data_init is not None:
            values.fill(data_init)
        if modifier_func is not None:
            values = _each(values, modifier_func)
        arr = nd.sparse.row_sparse_array((values, indices), shape=shape, dtype=dtype, ctx=ctx)
        return arr, (values, indices)
    if stype == "csr":
        if len(shape) != 2:
            raise ValueError(f"a csr array is 2-d, got shape {shape}")
        if distribution == "uniform":
            csr = _uniform_csr(*shape, density, dtype, data_init, shuffle_csr_indices)
        elif distribution == "powerlaw":
            csr = _powerlaw_csr(*shape, density, dtype)
        else:
            raise ValueError(f"Distribution not supported: {distribution}")
        csr = csr.as_in_context(ctx)
        return csr, (csr.indptr, csr.indices, csr.data)
    raise ValueError(f"unknown storage type {stype!r}; use 'csr' or 'row_sparse'")


def create_sparse_array(
    shape,
    stype,
    data_init=None,
    rsp_indices=None,
    dtype=None,
    modifier_func=None,
    density=0.5,
    shuffle_csr_indices=False,
):
    """A random sparse array; row_sparse ``rsp_indices`` are sorted first (canonical form)."""
    if stype == "row_sparse":
        indices = None if rsp_indices is None else np.sort(np.asarray(rsp_indices))
        arr, _ = rand_sparse_ndarray(
            shape,
            stype,
            density=density,
            data_init=data_init,
            rsp_indices=indices,
            dtype=dtype,
            modifier_func=modifier_func,
        )
    elif stype == "csr":
        arr, _ = rand_sparse_ndarray(
            shape,
            stype,
            density=density,
            data_init=data_init,
            dtype=dtype,
            modifier_func=modifier_func,
            shuffle_csr_indices=shuffle_csr_indices,
        )
    else:
        raise AssertionError("Unknown storage type: " + stype)
    return arr


def create_sparse_array_zd(
    shape,
    stype,
    density,
    data_init=None,
    rsp_indices=None,
    dtype=None,
    modifier_func=None,
    shuffle_csr_indices=False,
):
    """A random sparse array whose row_sparse density comes from ``rsp_indices`` alone."""
    if stype == "row_sparse":
        density = 0.0
        if rsp_indices is not None:
            assert len(rsp_indices) <= shape[0]
    return create_sparse_array(
        shape,
        stype,
        data_init=data_init,
        rsp_indices=rsp_indices,
        dtype=dtype,
        modifier_func=modifier_func,
        density=density,
        shuffle_csr_indices=shuffle_csr_indices,
    )
