"""CSRNDArray and RowSparseNDArray: attributes, copies, indexing, assignment, checks.

Expected values come from NumPy on the dense form (slicing, arithmetic) or
from SciPy (``asscipy``), never from rebind's own output.
"""

import copy
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import rebind as mx
from rebind.base import MXNetError, NotSupportedForSparseNDArray
from rebind.ndarray import sparse_array, sparse_convert
from rebind.ndarray.sparse import BaseSparseNDArray, CSRNDArray, RowSparseNDArray

DENSE = np.array(
    [[0, 1.5, 0, 0], [0, 0, 0, 0], [2, 0, -3, 0], [0, 0, 0, 4], [0, 0, 0, 0]], dtype=np.float32
)
STYPES = ["csr", "row_sparse"]


@pytest.fixture(params=STYPES)
def stype(request):
    return request.param


def _make(stype, ctx, dense=DENSE):
    return mx.nd.array(dense, ctx=ctx).tostype(stype)


def test_attributes(stype, ctx):
    array = _make(stype, ctx)
    assert isinstance(array, mx.nd.NDArray) and isinstance(array, BaseSparseNDArray)
    assert array.stype == stype and array.shape == DENSE.shape and array.ndim == 2
    assert array.dtype == np.float32 and array.context == ctx
    cls = "CSRNDArray" if stype == "csr" else "RowSparseNDArray"
    assert repr(array) == f"\n<{cls} 5x4 @{ctx}>"
    assert array._num_aux == (2 if stype == "csr" else 1)
    assert all(t == np.int64 for t in array._aux_types)
    with pytest.raises(NotImplementedError):
        array.size  # noqa: B018 - MXNet refuses size of a sparse array


def test_parts_are_copies(stype, ctx):
    array = _make(stype, ctx)
    data = array.data
    data[:] = 99
    np.testing.assert_array_equal(array.asnumpy(), DENSE)
    with pytest.raises(NotImplementedError):
        array.data = data


def test_dense_forms(stype, ctx):
    array = _make(stype, ctx)
    np.testing.assert_array_equal(array.asnumpy(), DENSE)
    dense = array.tostype("default")
    assert type(dense) is mx.nd.NDArray and dense.context == ctx
    np.testing.assert_array_equal(dense.asnumpy(), DENSE)
    np.testing.assert_array_equal(np.asarray(array), DENSE)  # __array__
    np.testing.assert_array_equal(array.T.asnumpy(), DENSE.T)


def test_asscipy_is_scipys_csr(ctx):
    matrix = _make("csr", ctx).asscipy()
    expected = sp.csr_matrix(DENSE)
    assert isinstance(matrix, sp.csr_matrix) and matrix.dtype == np.float32
    np.testing.assert_array_equal(matrix.indptr, expected.indptr)
    np.testing.assert_array_equal(matrix.indices, expected.indices)
    np.testing.assert_array_equal(matrix.data, expected.data)


def test_copies_between_contexts(stype, ctx):
    array = _make(stype, ctx)
    for target in (mx.cpu(1), mx.cpu(0), ctx):
        moved = array.copyto(target)
        assert type(moved) is type(array) and moved.context == target
        np.testing.assert_array_equal(moved.asnumpy(), DENSE)
    assert array.as_in_context(ctx) is array
    assert array.as_in_context(mx.cpu(1)).context == mx.cpu(1)
    duplicate = array.copy()
    duplicate[:] = mx.nd.zeros(DENSE.shape, ctx=ctx)
    np.testing.assert_array_equal(array.asnumpy(), DENSE)


def test_copyto_arrays(stype, ctx):
    array = _make(stype, ctx)
    dense_target = mx.nd.ones(DENSE.shape, ctx=ctx)
    assert array.copyto(dense_target) is dense_target
    np.testing.assert_array_equal(dense_target.asnumpy(), DENSE)
    sparse_target = mx.nd.zeros(DENSE.shape, stype=stype, dtype="float64")
    assert array.copyto(sparse_target) is sparse_target
    assert sparse_target.dtype == np.float64  # the target keeps its dtype
    np.testing.assert_array_equal(sparse_target.asnumpy(), DENSE)
    other = "row_sparse" if stype == "csr" else "csr"
    with pytest.raises(TypeError, match="destination NDArray stype"):
        array.copyto(mx.nd.zeros(DENSE.shape, stype=other))
    with pytest.raises(ValueError):
        array.copyto(mx.nd.zeros((2, 2), stype=stype))


def test_dense_copyto_sparse_converts(stype, ctx):
    target = mx.nd.zeros(DENSE.shape, stype=stype, ctx=ctx)
    mx.nd.array(DENSE, ctx=ctx).copyto(target)
    assert target.stype == stype
    np.testing.assert_array_equal(target.asnumpy(), DENSE)


def test_astype_copies_unless_told(stype):
    array = mx.nd.zeros((3, 2), stype=stype, dtype="int32")
    assert array.astype("float32").dtype == np.float32
    assert array.astype("int32") is not array
    assert array.astype("int32", copy=False) is array
    assert array.astype("float32", copy=False) is not array


def test_csr_row_indexing_is_numpys(ctx):
    array = _make("csr", ctx)
    for key in (slice(1, 4), slice(-4, 3), slice(2, None), slice(None, 3), slice(3, 1)):
        part = array[key]
        assert isinstance(part, CSRNDArray)
        np.testing.assert_array_equal(part.asnumpy(), DENSE[key])
    for row in (0, 2, -1, -5):
        np.testing.assert_array_equal(array[row].asnumpy(), DENSE[row][np.newaxis])
        assert array[row].indptr.asnumpy()[0] == 0
    assert array[:] is array
    with pytest.raises(ValueError, match="continuous slicing"):
        array[::2]
    with pytest.raises(ValueError, match="Multi-dimension"):
        array[1, 2]
    with pytest.raises(IndexError):
        array[5]


def test_row_sparse_indexing_only_whole():
    array = _make("row_sparse", mx.cpu())
    assert array[:] is array
    for key in (1, slice(0, 2)):
        with pytest.raises(NotImplementedError):
            array[key]
    with pytest.raises(ValueError, match="Multi-dimension"):
        array[1, 2]


@pytest.mark.parametrize("value", ["dense", "same", "numpy"])
def test_whole_assignment(stype, value, ctx):
    array = mx.nd.zeros(DENSE.shape, stype=stype, ctx=ctx)
    source = {
        "dense": mx.nd.array(DENSE, ctx=ctx),
        "same": _make(stype, ctx),
        "numpy": DENSE,
    }[value]
    with pytest.warns(RuntimeWarning) if value == "numpy" else _no_warning():
        array[:] = source
    assert array.stype == stype
    np.testing.assert_array_equal(array.asnumpy(), DENSE)


class _no_warning:  # noqa: N801 - used like pytest.warns
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_scalar_assignment():
    rsp = mx.nd.zeros((3, 2), stype="row_sparse")
    rsp[:] = 2
    np.testing.assert_array_equal(rsp.asnumpy(), np.full((3, 2), 2))
    np.testing.assert_array_equal(rsp.indices.asnumpy(), [0, 1, 2])
    rsp[:] = np.float32(3)  # NumPy scalars are scalars too
    np.testing.assert_array_equal(rsp.asnumpy(), np.full((3, 2), 3))
    rsp[:] = 0  # MXNet's _set_value stores every row, zeros included
    np.testing.assert_array_equal(rsp.indices.asnumpy(), [0, 1, 2])
    np.testing.assert_array_equal(rsp.data.asnumpy(), np.zeros((3, 2)))
    for value in (1, np.float32(1)):
        with pytest.raises(ValueError, match="numeric types"):
            mx.nd.zeros((3, 2), stype="csr")[:] = value
    with pytest.raises(ValueError, match="Assignment with slice"):
        rsp[1:2] = 1


def test_arithmetic_values_are_numpys(stype, ctx):
    array = _make(stype, ctx)
    other = _make(stype, ctx, DENSE * 2 + (DENSE != 0))
    want_other = DENSE * 2 + (DENSE != 0)
    pairs = [
        (array + other, DENSE + want_other),
        (array - other, DENSE - want_other),
        (array * other, DENSE * want_other),
        (array * 3, DENSE * 3),
        (array / 2, DENSE / 2),
        (1 - array, 1 - DENSE),
        (-array, -DENSE),
        (array == 0, (DENSE == 0).astype(np.float32)),
        (0 < array, (0 < DENSE).astype(np.float32)),
        (array + mx.nd.array(DENSE, ctx=ctx), DENSE * 2),
        (mx.nd.array(DENSE, ctx=ctx) - array, np.zeros_like(DENSE)),
    ]
    for result, want in pairs:
        np.testing.assert_allclose(result.asnumpy(), want)
    np.testing.assert_array_equal(array.asnumpy(), DENSE)  # -array is not in place


def test_inplace_arithmetic_keeps_storage(stype, ctx):
    array = _make(stype, ctx)
    array += _make(stype, ctx)
    array *= 3
    assert array.stype == stype
    np.testing.assert_allclose(array.asnumpy(), DENSE * 6)


def test_check_format_accepts_canonical_arrays(stype):
    _make(stype, mx.cpu()).check_format()
    mx.nd.sparse.zeros(stype, (3, 4)).check_format()


@pytest.mark.parametrize(
    "indices, indptr",
    [
        ([0, 2, 1], [0, 5, 2, 3]),
        ([2, 1, 1], [0, 2, 2, 3]),
        ([1, 2, 1], [0, 2, 2, 4]),
        ([0, 2, 1], [0, -2, 2, 3]),
        ([0, 4, 1], [0, 2, 2, 3]),
    ],
    ids=["indptr past nnz", "unsorted columns", "indptr end", "negative indptr", "column range"],
)
def test_check_format_refuses_bad_csr(indices, indptr):
    array = mx.nd.sparse.csr_matrix(([7, 8, 9], indices, indptr), shape=(3, 4))
    with pytest.raises(MXNetError):
        array.check_format()
    array.check_format(full_check=False)  # the O(1) checks see only the lengths


@pytest.mark.parametrize("indices", [[1, 4], [1, 0], [1, -2], [1, 1]])
def test_check_format_refuses_bad_row_sparse(indices):
    array = mx.nd.sparse.row_sparse_array(([[1, 2], [3, 4]], indices), shape=(3, 2))
    with pytest.raises(MXNetError):
        array.check_format()


def test_dense_only_methods_are_refused(stype):
    array = _make(stype, mx.cpu())
    for call in (lambda: array.reshape((4, 5)), lambda: array._at(0), lambda: array._slice(0, 1)):
        with pytest.raises(NotSupportedForSparseNDArray):
            call()


def test_pickle_and_deepcopy(stype, ctx):
    array = _make(stype, ctx)
    for again in (pickle.loads(pickle.dumps(array)), copy.deepcopy(array), copy.copy(array)):
        assert type(again) is type(array) and again.context == ctx
        np.testing.assert_array_equal(again.asnumpy(), DENSE)


def test_huge_dense_form_is_refused(stype):
    big = mx.nd.sparse.zeros(stype, (10**6, 10**6))
    assert big.shape == (10**6, 10**6)  # the sparse array itself costs next to nothing
    for call in (big.asnumpy, big.dense_data, lambda: big.tostype("default")):
        with pytest.raises(MemoryError, match=r"\(1000000, 1000000\).*4000000000000 bytes"):
            call()
    with pytest.raises(MXNetError, match="4000000000000 bytes"):
        big + 1  # an operator falling back to dense says so too


def test_free_memory_is_read_from_the_device_or_the_host(monkeypatch):
    monkeypatch.setattr(sparse_convert, "_host_free_bytes", lambda: 100)
    small = mx.nd.sparse.zeros("csr", (5, 5))  # 100 bytes of float32: fits exactly
    np.testing.assert_array_equal(small.asnumpy(), np.zeros((5, 5)))
    with pytest.raises(MemoryError, match="104 bytes but only 100"):
        mx.nd.sparse.zeros("csr", (2, 13)).asnumpy()


def test_wait_to_read_and_module_exports():
    array = _make("csr", mx.cpu())
    array.wait_to_read()
    assert mx.nd.sparse.CSRNDArray is CSRNDArray is sparse_array.CSRNDArray
    assert mx.nd.sparse.RowSparseNDArray is RowSparseNDArray


def test_asscipy_without_scipy_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "scipy.sparse", None)  # makes the import fail
    with pytest.raises(ImportError, match=r"rebind\[sparse\]"):
        _make("csr", mx.cpu()).asscipy()


def test_sparse_namespace_arithmetic_functions(stype, ctx):
    array = _make(stype, ctx)
    ones = mx.nd.ones((1, 4), ctx=ctx)
    np.testing.assert_allclose(mx.nd.sparse.add(array, array).asnumpy(), DENSE * 2)
    np.testing.assert_allclose(mx.nd.sparse.subtract(1, array).asnumpy(), 1 - DENSE)
    np.testing.assert_allclose(mx.nd.sparse.multiply(array, ones * 2).asnumpy(), DENSE * 2)
    np.testing.assert_allclose(mx.nd.sparse.divide(array, 4).asnumpy(), DENSE / 4)
    assert mx.nd.sparse.divide(2, 4) == 0.5
