"""row_sparse values in the in-process kvstores: push sums, pull skips, row_sparse_pull rows.

Expected values by definition (MXNet 1.9.1's KVStoreLocal semantics and its docstring
examples of row_sparse_pull).
"""

import logging

import numpy as np
import pytest

import rebind as mx
from rebind.base import MXNetError

SHAPE = (4, 3)


def rsp(dense):
    return mx.nd.array(np.asarray(dense, dtype="float32")).tostype("row_sparse")


def rows_of(count, rows, value=1.0):
    dense = np.zeros((count, SHAPE[1]), dtype="float32")
    dense[list(rows)] = value
    return dense


@pytest.fixture(params=["local", "device"])
def kv(request):
    return mx.kv.create(request.param)


def test_push_sums_row_sparse_values_over_the_union_of_rows(kv):
    kv.init("w", mx.nd.zeros(SHAPE, stype="row_sparse"))
    kv.push("w", [rsp(rows_of(4, [0, 2], 1.0)), rsp(rows_of(4, [2, 3], 2.0))])
    out = mx.nd.sparse.zeros("row_sparse", SHAPE)
    kv.row_sparse_pull("w", out=out, row_ids=mx.nd.array([0, 1, 2, 3], dtype="int64"))
    assert out.stype == "row_sparse"
    np.testing.assert_array_equal(
        out.asnumpy(), rows_of(4, [0], 1) + rows_of(4, [2], 3) + rows_of(4, [3], 2)
    )


def test_row_sparse_pull_takes_unique_sorted_rows(kv):
    # MXNet's docstring examples: repeats and any order are fine
    kv.init("3", mx.nd.ones((3, 3)).tostype("row_sparse"))
    out = mx.nd.sparse.zeros("row_sparse", (3, 3))
    for ids, expected_rows in (([0, 2], [0, 2]), ([2, 2], [2]), ([1, 0], [0, 1])):
        kv.row_sparse_pull("3", out=out, row_ids=mx.nd.array(ids, dtype="int64"))
        expected = np.zeros((3, 3), dtype="float32")
        expected[expected_rows] = 1
        np.testing.assert_array_equal(out.asnumpy(), expected)
        assert out.indices.asnumpy().tolist() == expected_rows


def test_one_row_id_array_serves_every_output(kv):
    kv.init("w", rsp(np.arange(12).reshape(SHAPE)))
    outs = [mx.nd.sparse.zeros("row_sparse", SHAPE, ctx=mx.cpu(i)) for i in range(3)]
    kv.row_sparse_pull("w", out=outs, row_ids=mx.nd.array([3, 1]))
    expected = np.zeros(SHAPE, dtype="float32")
    expected[[1, 3]] = np.arange(12).reshape(SHAPE)[[1, 3]]
    for out in outs:
        np.testing.assert_array_equal(out.asnumpy(), expected)


def test_pull_skips_row_sparse_outputs_unless_asked(kv, caplog):
    kv.init("w", mx.nd.ones(SHAPE) * 2)
    out = rsp(np.ones(SHAPE) * 5)
    with caplog.at_level(logging.WARNING, logger="rebind.kvstore"):
        kv.pull("w", out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(SHAPE, 5))
    assert "non-default weights detected during kvstore pull" in caplog.text
    kv.pull("w", out=out, ignore_sparse=False)
    np.testing.assert_array_equal(out.asnumpy(), np.full(SHAPE, 2))


def test_misuse_is_refused_with_mxnet_reasons(kv):
    kv.init("dense", mx.nd.ones(SHAPE))
    kv.init("sparse", mx.nd.ones(SHAPE).tostype("row_sparse"))
    ids = mx.nd.array([0])
    with pytest.raises(MXNetError, match="PullRowSparse expects row_sparse src NDArray"):
        kv.row_sparse_pull("dense", out=mx.nd.sparse.zeros("row_sparse", SHAPE), row_ids=ids)
    with pytest.raises(MXNetError, match="expected row_sparse storage type"):
        kv.row_sparse_pull("sparse", out=mx.nd.zeros(SHAPE), row_ids=ids)
    with pytest.raises(ValueError, match="number of row_ids"):
        outs = [mx.nd.sparse.zeros("row_sparse", SHAPE) for _ in range(2)]
        kv.row_sparse_pull(["sparse"], out=[outs], row_ids=[[ids, ids, ids]])
    with pytest.raises(MXNetError, match="unexpected storage type"):
        kv.push("sparse", mx.nd.ones(SHAPE).tostype("csr"))


def test_updater_on_the_store_updates_only_pushed_rows(kv):
    kv.init("w", rsp(np.ones(SHAPE)))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))
    kv.push("w", rsp(rows_of(4, [1], 1.0)))
    out = mx.nd.sparse.zeros("row_sparse", SHAPE)
    kv.row_sparse_pull("w", out=out, row_ids=mx.nd.arange(0, 4, dtype="int64"))
    expected = np.ones(SHAPE, dtype="float32")
    expected[1] = 0.5
    np.testing.assert_array_equal(out.asnumpy(), expected)
