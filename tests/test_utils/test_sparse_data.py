"""Random sparse arrays of ``mx.test_utils``: MXNet 1.9.1's draws, checked by definition.

Each expectation redraws from the same seed the way MXNet's test_utils does
(NumPy's global generator, SciPy's ``sparse.rand``) and compares the parts.
"""

import numpy as np
import pytest
import scipy.sparse as sp

import rebind as mx
import rebind.test_utils as tu


def test_row_sparse_draw_is_mxnets(ctx):
    np.random.seed(7)
    array, (values, indices) = tu.rand_sparse_ndarray((8, 3), "row_sparse", density=0.5, ctx=ctx)
    np.random.seed(7)
    want_indices = np.argwhere(np.random.rand(8) < 0.5).flatten()
    want_values = np.random.rand(len(want_indices), 3).astype(np.float32)
    assert array.stype == "row_sparse" and array.context == ctx
    np.testing.assert_array_equal(array.indices.asnumpy(), want_indices)
    np.testing.assert_array_equal(array.data.asnumpy(), want_values)
    np.testing.assert_array_equal(values, want_values)
    np.testing.assert_array_equal(indices, want_indices)


def test_csr_draw_is_scipys(ctx):
    np.random.seed(11)
    array, (indptr, indices, data) = tu.rand_sparse_ndarray((6, 9), "csr", density=0.3, ctx=ctx)
    np.random.seed(11)
    want = sp.rand(6, 9, 0.3, dtype=np.float32, format="csr")
    assert array.stype == "csr" and array.context == ctx and array.dtype == np.float32
    for got, expected in ((indptr, want.indptr), (indices, want.indices), (data, want.data)):
        np.testing.assert_array_equal(got.asnumpy(), expected)


def test_zero_density_gives_empty_arrays():
    rsp, (values, indices) = tu.rand_sparse_ndarray((4, 2), "row_sparse", density=0)
    assert rsp.indices.shape == (0,) and values.size == 0 and indices.size == 0
    csr = tu.rand_ndarray((4, 2), "csr", density=0)
    np.testing.assert_array_equal(csr.indptr.asnumpy(), [0, 0, 0, 0, 0])


def test_powerlaw_rows_double():
    csr, _ = tu.rand_sparse_ndarray((8, 64), "csr", density=0.2, distribution="powerlaw")
    indptr = csr.indptr.asnumpy()
    assert indptr[-1] == int(8 * 64 * 0.2)
    per_row = np.diff(indptr)
    assert per_row[0] == 2 and all(per_row[i + 1] == 2 * per_row[i] for i in range(4))


def test_data_init_and_modifier():
    rsp, _ = tu.rand_sparse_ndarray((5, 2), "row_sparse", density=1, data_init=3)
    np.testing.assert_array_equal(rsp.asnumpy(), np.full((5, 2), 3))
    rsp = tu.create_sparse_array((5, 2), "row_sparse", rsp_indices=[4, 0, 2], data_init=1)
    np.testing.assert_array_equal(rsp.indices.asnumpy(), [0, 2, 4])
    rsp = tu.create_sparse_array_zd((5, 2), "row_sparse", density=0.9, rsp_indices=[1])
    np.testing.assert_array_equal(rsp.indices.asnumpy(), [1])
    csr = tu.create_sparse_array((4, 4), "csr", data_init=2, density=0.5)
    assert set(np.unique(csr.data.asnumpy())) <= {2.0}
    doubled, (values, _) = tu.rand_sparse_ndarray(
        (3, 2), "row_sparse", density=1, modifier_func=lambda v: 2 * v
    )
    np.testing.assert_allclose(doubled.data.asnumpy(), values)


def test_shuffled_columns_keep_each_rows_set():
    np.random.seed(5)
    matrix = sp.rand(4, 10, 0.6, format="csr")

    def row_sets():
        bounds = matrix.indptr
        return [set(matrix.indices[bounds[r] : bounds[r + 1]]) for r in range(4)]

    before = row_sets()
    tu.shuffle_csr_column_indices(matrix)
    assert row_sets() == before


def test_refusals():
    with pytest.raises(ValueError, match="density has to be between 0 and 1"):
        tu.rand_sparse_ndarray((3, 3), "csr", density=2)
    with pytest.raises(ValueError, match="not supported for this density"):
        tu.rand_sparse_ndarray((3, 3), "csr", density=0.1, distribution="powerlaw")
    with pytest.raises(ValueError, match="unknown storage type"):
        tu.rand_sparse_ndarray((3, 3), "dense")
    with pytest.raises(AssertionError, match="Unknown storage type"):
        tu.create_sparse_array((3, 3), "coo")


def test_assert_almost_equal_compares_sparse_arrays():
    dense = np.array([[0, 1], [2, 0]], np.float32)
    csr = mx.nd.array(dense).tostype("csr")
    tu.assert_almost_equal(csr, dense)
    tu.assert_almost_equal(csr, mx.nd.array(dense).tostype("row_sparse"))
    assert tu.same(csr, dense) and tu.almost_equal(csr, dense)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(csr, dense + 1)
