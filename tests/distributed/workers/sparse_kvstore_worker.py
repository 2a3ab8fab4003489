"""dist_sync with row_sparse values between workers; "passed" at the end.

mpiexec -n N python -m mpi4py sparse_kvstore_worker.py
"""

import numpy as np
from common import report

import rebind as mx


def check_row_sparse(kv, rank, n):
    shape = (5, 2)
    # rank 0's value reaches every worker, row_sparse
    kv.init("w", mx.nd.full(shape, rank + 1.0).tostype("row_sparse"))
    out = mx.nd.sparse.zeros("row_sparse", shape)
    kv.row_sparse_pull("w", out=out, row_ids=mx.nd.array([4, 0, 4], dtype="int64"))
    expected = np.zeros(shape)
    expected[[0, 4]] = 1.0
    assert out.stype == "row_sparse" and np.array_equal(out.asnumpy(), expected), out.asnumpy()
    # each worker pushes a gradient for its own row: the sum holds every worker's row
    grad = np.zeros(shape, dtype="float32")
    grad[rank % shape[0]] = 1.0
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, rescale_grad=1.0))
    kv.push("w", mx.nd.array(grad).tostype("row_sparse"))
    kv.row_sparse_pull("w", out=out, row_ids=mx.nd.arange(0, shape[0], dtype="int64"))
    expected = np.ones(shape)
    for worker in range(n):
        expected[worker % shape[0]] -= 0.5
    assert np.allclose(out.asnumpy(), expected), (out.asnumpy(), expected)


def main():
    kv = mx.kv.create("dist_sync")
    check_row_sparse(kv, kv.rank, kv.num_workers)
    report(kv.rank, "sparse kvstore checks passed")


if __name__ == "__main__":
    main()
