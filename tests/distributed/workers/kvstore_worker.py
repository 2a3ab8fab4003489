"""The dist_sync store's API between workers; every check is an assert, "passed" at the end.

mpiexec -n N python -m mpi4py kvstore_worker.py STATES_DIR
"""

import sys
from pathlib import Path

import numpy as np
from common import report

import rebind as mx
from rebind.kvstore import KVStoreError


def check_sums(kv, rank, n):
    shape = (2, 3)
    kv.init([3, 5], [mx.nd.full(shape, rank + 1), mx.nd.full(shape, 10 * (rank + 1))])
    out = [mx.nd.zeros(shape), mx.nd.zeros(shape)]
    kv.pull([3, 5], out=out)
    assert out[0].asnumpy().tolist() == np.full(shape, 1).tolist(), "init copies rank 0's value"
    assert out[1].asnumpy().tolist() == np.full(shape, 10).tolist()
    # two values per key (two devices), summed over devices then over workers
    kv.push(3, [mx.nd.full(shape, rank), mx.nd.full(shape, 1, ctx=mx.cpu(1))])
    kv.pull(3, out=out[0])
    expected = sum(range(n)) + n
    assert np.all(out[0].asnumpy() == expected), (out[0].asnumpy(), expected)
    value = mx.nd.full(shape, 2.0)
    kv.pushpull(5, value)
    assert np.all(value.asnumpy() == 2.0 * n)


def check_optimizer(kv, rank, n, states_dir):
    kv.init(7, mx.nd.ones((4,)))
    try:
        kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1 * (1 + (rank == 1))))
    except KVStoreError as exc:
        assert "lr=0.1 on rank 0 but 0.2 on rank 1" in str(exc), str(exc)
    else:
        raise AssertionError("different learning rates were accepted")
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9))
    kv.push(7, mx.nd.full((4,), rank + 1.0))
    weight = mx.nd.zeros((4,))
    kv.pull(7, out=weight)
    grad = n * (n + 1) / 2
    assert np.allclose(weight.asnumpy(), 1 - 0.1 * grad), weight.asnumpy()
    states = str(Path(states_dir) / "kv.states")
    kv.save_optimizer_states(states)
    # only rank 0 needs the file: the others name one that does not exist
    kv.load_optimizer_states(states if rank == 0 else states + ".absent")


def main():
    kv = mx.kv.create("dist_sync")
    rank, n = kv.rank, kv.num_workers
    assert kv.type == "dist_sync" and n > 1 and 0 <= rank < n
    assert f"rank {rank} of {n}" in repr(kv)
    check_sums(kv, rank, n)
    check_optimizer(kv, rank, n, sys.argv[1])
    kv.barrier()
    device = mx.kv.create("dist_device_sync")
    assert (device.type, device.rank, device.num_workers) == ("dist_device_sync", rank, n)
    device.init("d", mx.nd.full((3,), rank))
    device.push("d", mx.nd.ones((3,)))
    result = mx.nd.zeros((3,))
    device.pull("d", out=result)
    assert np.all(result.asnumpy() == n)
    report(rank, "kvstore checks passed")


if __name__ == "__main__":
    main()
