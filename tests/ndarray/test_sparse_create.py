"""``mx.nd.sparse`` constructors: every MXNet input form, defaults and refusals.

Expected parts are computed by definition with SciPy (canonical csr) or NumPy
(rows holding a non-zero), never from rebind's own output.
"""

import numpy as np
import pytest
import scipy.sparse as sp

import rebind as mx
from rebind.base import MXNetError
from rebind.ndarray.sparse import CSRNDArray, RowSparseNDArray

DENSE = np.array([[0, 1.5, 0, 0], [0, 0, 0, 0], [2, 0, -3, 0]], dtype=np.float32)


def _assert_csr(array, matrix, dtype=None):
    """``array`` is a CSRNDArray holding scipy ``matrix`` (canonical) exactly."""
    matrix = sp.csr_matrix(matrix, copy=True)
    matrix.sum_duplicates()
    matrix.sort_indices()
    assert isinstance(array, CSRNDArray) and array.stype == "csr"
    assert array.shape == matrix.shape
    assert array.dtype == np.dtype(dtype or matrix.dtype).type
    np.testing.assert_array_equal(array.data.asnumpy(), matrix.data)
    np.testing.assert_array_equal(array.indices.asnumpy(), matrix.indices)
    np.testing.assert_array_equal(array.indptr.asnumpy(), matrix.indptr)
    assert array.indices.dtype == np.int64 and array.indptr.dtype == np.int64


def _assert_rsp(array, dense):
    """``array`` is a RowSparseNDArray storing exactly the non-zero rows of ``dense``."""
    rows = np.flatnonzero(dense.reshape(dense.shape[0], -1).any(axis=1))
    assert isinstance(array, RowSparseNDArray) and array.stype == "row_sparse"
    assert array.shape == dense.shape
    np.testing.assert_array_equal(array.indices.asnumpy(), rows)
    np.testing.assert_array_equal(array.data.asnumpy(), dense[rows])
    np.testing.assert_array_equal(array.asnumpy(), dense)


def test_csr_from_definition(ctx):
    matrix = sp.csr_matrix(DENSE)
    parts = (matrix.data, matrix.indices, matrix.indptr)
    array = mx.nd.sparse.csr_matrix(parts, shape=DENSE.shape, ctx=ctx)
    _assert_csr(array, matrix)
    assert array.context == ctx
    np.testing.assert_array_equal(array.asnumpy(), DENSE)


def test_csr_from_definition_infers_shape_from_the_last_column():
    array = mx.nd.sparse.csr_matrix(([1.0, 2.0], [0, 2], [0, 1, 1, 2]))
    assert array.shape == (3, 3)  # rows = len(indptr) - 1, cols = max(indices) + 1


def test_csr_from_coo_sums_duplicates_and_sorts():
    data, row, col = [1.0, 2.0, 3.0, 4.0], [2, 0, 2, 2], [3, 1, 0, 3]
    array = mx.nd.sparse.csr_matrix((data, (row, col)), shape=(3, 4))
    _assert_csr(array, sp.coo_matrix((data, (row, col)), shape=(3, 4)).tocsr(), np.float64)


@pytest.mark.parametrize("source", ["numpy", "ndarray", "list"])
def test_csr_from_dense(source, ctx):
    value = {"numpy": DENSE, "ndarray": mx.nd.array(DENSE), "list": DENSE.tolist()}[source]
    array = mx.nd.sparse.csr_matrix(value, ctx=ctx)
    _assert_csr(array, DENSE)
    assert array.context == ctx


def test_csr_from_scipy_canonicalises_and_keeps_dtype():
    indptr, indices, data = [0, 2, 3, 7], [0, 2, 2, 0, 1, 2, 1], [1, 2, 3, 4, 5, 6, 1]
    messy = sp.csr_matrix((data, indices, indptr), shape=(3, 3), dtype=np.float64)
    for make in (mx.nd.sparse.array, mx.nd.array, mx.nd.sparse.csr_matrix):
        _assert_csr(make(messy), messy, np.float64)
    assert messy.nnz == 7  # the caller's matrix is left alone


def test_shape_forms_make_empty_arrays(ctx):
    csr = mx.nd.sparse.csr_matrix((3, 4), dtype="int32", ctx=ctx)
    _assert_csr(csr, sp.csr_matrix((3, 4), dtype=np.int32))
    rsp = mx.nd.sparse.row_sparse_array((2, 3, 4), ctx=ctx)
    _assert_rsp(rsp, np.zeros((2, 3, 4), np.float32))
    assert rsp.context == ctx and rsp.dtype == np.float32


def test_row_sparse_from_parts_and_dense(ctx):
    rsp = mx.nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, 4]), shape=(6, 2), ctx=ctx)
    expected = np.zeros((6, 2), np.float32)
    expected[[1, 4]] = [[1, 2], [3, 4]]
    _assert_rsp(rsp, expected)
    _assert_rsp(mx.nd.sparse.row_sparse_array(expected, ctx=ctx), expected)
    inferred = mx.nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, 4]))
    assert inferred.shape == (5, 2)  # rows = last index + 1


def test_zeros_and_empty_in_each_namespace(ctx):
    for array in (
        mx.nd.zeros((3, 2), stype="csr", ctx=ctx),
        mx.nd.empty((3, 2), stype="csr", ctx=ctx),
        mx.nd.sparse.zeros("csr", (3, 2), ctx=ctx, dtype="float16"),
    ):
        assert isinstance(array, CSRNDArray) and array.context == ctx
        np.testing.assert_array_equal(array.asnumpy(), np.zeros((3, 2)))
        np.testing.assert_array_equal(array.indptr.asnumpy(), [0, 0, 0, 0])
    rsp = mx.nd.zeros((3, 2), stype="row_sparse", dtype="int64")
    assert isinstance(rsp, RowSparseNDArray) and rsp.dtype == np.int64
    assert rsp.data.shape == (0, 2) and rsp.indices.shape == (0,)
    assert mx.nd.zeros((2,), stype="default").stype == "default"


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: mx.nd.sparse.csr_matrix(mx.nd.ones((2, 2)), shape=(3, 2)), ValueError),
        (lambda: mx.nd.sparse.csr_matrix((2, 2), shape=(3, 2)), ValueError),
        (lambda: mx.nd.sparse.row_sparse_array((2, 2), shape=(3, 2)), ValueError),
        (lambda: mx.nd.sparse.zeros("invalid_stype", (2, 2)), ValueError),
        (lambda: mx.nd.sparse.empty("default", (2, 2)), ValueError),
        (lambda: mx.nd.sparse.csr_matrix(mx.nd.zeros((2, 2), stype="row_sparse")), ValueError),
        (lambda: mx.nd.sparse.row_sparse_array(mx.nd.zeros((2, 2), stype="csr")), ValueError),
        (lambda: mx.nd.sparse.csr_matrix((1, 2, 3, 4)), ValueError),
        (lambda: mx.nd.sparse.array(np.ones((2, 2))), ValueError),
        (lambda: mx.nd.ones((2, 3, 4)).tostype("csr"), ValueError),
        (lambda: mx.nd.zeros((2, 2), stype="csr").tostype("row_sparse"), ValueError),
        (lambda: mx.nd.sparse.retain(mx.nd.ones((2, 2)), invalid_arg="x"), MXNetError),
    ],
)
def test_refusals(call, error):
    with pytest.raises(error):
        call()


def test_numpy_integer_shapes_are_shapes():
    shape = (np.int32(3), np.int64(2))
    assert mx.nd.sparse.row_sparse_array(shape).shape == (3, 2)
    with pytest.raises(ValueError, match="Shape mismatch"):
        mx.nd.sparse.row_sparse_array(shape, (4, 2))


def test_dtype_and_context_of_copies(ctx):
    source = mx.nd.ones((2, 3), dtype="float64").tostype("csr")
    copy = mx.nd.sparse.csr_matrix(source, dtype="int32", ctx=ctx)
    assert copy.dtype == np.int32 and copy.context == ctx
    np.testing.assert_array_equal(copy.asnumpy(), np.ones((2, 3)))
    assert mx.nd.sparse.array(source).dtype == np.float64


def test_retain_keeps_the_listed_stored_rows(ctx):
    dense = np.arange(12, dtype=np.float32).reshape(6, 2)
    dense[[0, 3]] = 0
    rsp = mx.nd.array(dense, ctx=ctx).tostype("row_sparse")
    kept = rsp.retain(mx.nd.array([5, 0, 2], ctx=ctx))
    expected = np.zeros_like(dense)
    expected[[2, 5]] = dense[[2, 5]]  # row 0 is listed but not stored
    _assert_rsp(kept, expected)
    same = mx.nd.sparse.retain(rsp, indices=mx.nd.array([1, 2], ctx=ctx))
    np.testing.assert_array_equal(same.indices.asnumpy(), [1, 2])
