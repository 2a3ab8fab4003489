"""Rank 1 fails in the middle of fit; the others must stop with a clear error, not hang.

    mpiexec -n N [python -m mpi4py] failing_worker.py kill|raise|hang

At its third batch rank 1 kills itself with SIGKILL (``kill``), raises an
exception (``raise``) or stops taking part (``hang``: it sleeps). Run with a
small ``REBIND_MPI_TIMEOUT``.
"""

import os
import signal
import sys
import time

from common import BATCH, build_net, make_data, report

import rebind as mx


def failure(how, rank):
    def callback(param):
        if rank != 1 or param.nbatch != 2:
            return
        report(rank, f"failing on purpose ({how})")
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if how == "raise":
            raise RuntimeError("rank 1 fails on purpose")
        time.sleep(600)

    return callback


def main():
    how = sys.argv[1]
    kv = mx.kv.create("dist_sync")
    x, y = make_data(kv.num_workers)
    data = mx.io.NDArrayIter(x, y, BATCH, num_parts=kv.num_workers, part_index=kv.rank)
    module = mx.mod.Module(build_net(), context=mx.cpu())
    module.fit(data, kvstore=kv, num_epoch=1000, batch_end_callback=failure(how, kv.rank))
    report(kv.rank, "finished training, which it should not have")


if __name__ == "__main__":
    main()
