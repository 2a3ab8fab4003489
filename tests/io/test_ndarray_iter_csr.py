"""NDArrayIter over CSRNDArray and scipy.sparse.csr_matrix inputs (MXNet 1.9.1's rules)."""

import numpy as np
import pytest

import rebind as mx

scipy_sparse = pytest.importorskip("scipy.sparse")


def dense_data(rows=10, cols=6, seed=0):
    rs = np.random.RandomState(seed)
    data = rs.uniform(size=(rows, cols)).astype("float32")
    data[rs.uniform(size=data.shape) < 0.6] = 0
    return data


@pytest.mark.parametrize("handle", ["pad", "roll_over"])
@pytest.mark.parametrize("kind", ["csr_ndarray", "scipy"])
def test_only_discard_is_accepted(handle, kind):
    dense = dense_data()
    data = scipy_sparse.csr_matrix(dense) if kind == "scipy" else mx.nd.array(dense).tostype("csr")
    with pytest.raises(NotImplementedError, match="last_batch_handle` set to `discard`"):
        mx.io.NDArrayIter({"data": data}, dense, 3, last_batch_handle=handle)


@pytest.mark.parametrize("kind", ["csr_ndarray", "scipy"])
def test_discard_yields_whole_csr_batches(kind):
    dense = dense_data()
    data = scipy_sparse.csr_matrix(dense) if kind == "scipy" else mx.nd.array(dense).tostype("csr")
    it = mx.io.NDArrayIter(data, np.arange(10), 3, last_batch_handle="discard")
    batches = list(it)
    assert len(batches) == 3  # the incomplete 4th batch is dropped
    for k, batch in enumerate(batches):
        assert batch.data[0].stype == "csr"
        np.testing.assert_array_equal(batch.data[0].asnumpy(), dense[3 * k : 3 * k + 3])
        np.testing.assert_array_equal(batch.label[0].asnumpy(), np.arange(3 * k, 3 * k + 3))


def test_shuffle_reorders_csr_rows_as_dense_rows():
    dense = dense_data(rows=12)
    np.random.seed(7)
    sparse_it = mx.io.NDArrayIter(
        {"csr": mx.nd.array(dense).tostype("csr"), "dns": dense},
        np.arange(12),
        4,
        shuffle=True,
        last_batch_handle="discard",
    )
    np.random.seed(7)
    dense_it = mx.io.NDArrayIter(
        {"csr": dense, "dns": dense}, np.arange(12), 4, shuffle=True, last_batch_handle="discard"
    )
    for got, expected in zip(sparse_it, dense_it, strict=True):
        assert got.data[0].stype == "csr"
        got.data[0].check_format(True)
        np.testing.assert_array_equal(got.data[0].asnumpy(), expected.data[0].asnumpy())
        np.testing.assert_array_equal(got.data[1].asnumpy(), expected.data[1].asnumpy())
        np.testing.assert_array_equal(got.label[0].asnumpy(), expected.label[0].asnumpy())
        # each row is the data row its label names
        rows = got.label[0].asnumpy().astype(int)
        np.testing.assert_array_equal(got.data[0].asnumpy(), dense[rows])


def test_csr_label():
    dense = dense_data()
    it = mx.io.NDArrayIter(dense, mx.nd.array(dense).tostype("csr"), 5, last_batch_handle="discard")
    batch = it.next()
    assert batch.label[0].stype == "csr"
    np.testing.assert_array_equal(batch.label[0].asnumpy(), dense[:5])
