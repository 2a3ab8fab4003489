"""Train with Module.fit and dist_sync; save the weights, and on rank 0 a one-process reference.

    mpiexec -n N python -m mpi4py fit_worker.py OUT_DIR EPOCHS [KVSTORE [cpu|gpu]]

KVSTORE defaults to dist_sync; with ``gpu`` rank r trains on ``mx.gpu(r % num_gpus)``.

Every rank starts from a different random initialization (the store must
broadcast rank 0's), trains on its part of the data, checkpoints every epoch
through ``module_checkpoint`` (rank 0 writes), then writes ``rank<r>.npz``.
Rank 0 also trains one process on the concatenation of every worker's
batches from its own initialization and writes ``reference.npz``.
"""

import logging
import sys
from pathlib import Path

import numpy as np
from common import BATCH, build_net, concatenated_batches, make_data, report

import rebind as mx

OPTIMIZER_PARAMS = {"learning_rate": 0.5, "momentum": 0.9, "wd": 1e-3}


def train(kvstore, iterator, seed, epochs, context, prefix=None):
    mx.random.seed(seed)
    module = mx.mod.Module(build_net(), context=context)
    checkpoint = None
    if prefix is not None:
        checkpoint = mx.callback.module_checkpoint(module, prefix, save_optimizer_states=True)
    module.fit(
        iterator,
        kvstore=kvstore,
        optimizer="sgd",
        optimizer_params=OPTIMIZER_PARAMS,
        initializer=mx.init.Uniform(0.5),
        num_epoch=epochs,
        epoch_end_callback=checkpoint,
    )
    return module


def weights(module):
    return {name: value.asnumpy() for name, value in module.get_params()[0].items()}


def main():
    out, epochs = Path(sys.argv[1]), int(sys.argv[2])
    store, device = (sys.argv[3:] + ["dist_sync", "cpu"][len(sys.argv[3:]) :])[:2]
    logging.basicConfig(level=logging.INFO)
    kv = mx.kv.create(store)
    rank, num_workers = kv.rank, kv.num_workers
    context = mx.gpu(rank % mx.num_gpus()) if device == "gpu" else mx.cpu()
    x, y = make_data(num_workers)
    part = mx.io.NDArrayIter(x, y, BATCH, num_parts=num_workers, part_index=rank)
    prefix = str(out / "model")
    module = train(kv, part, 100 + rank, epochs, context, prefix)
    report(rank, f"rescale_grad {module._optimizer.rescale_grad!r}")
    mine = weights(module)
    np.savez(out / f"rank{rank}.npz", **mine)

    _, saved, _ = mx.model.load_checkpoint(prefix, epochs)
    same = all(np.array_equal(saved[name].asnumpy(), value) for name, value in mine.items())
    report(rank, f"checkpoint of rank 0 equals my weights: {same}")
    states = f"{prefix}-{epochs:04d}.states" if rank == 0 else "/nonexistent/only-rank-0-reads"
    module.load_optimizer_states(states)
    report(rank, "optimizer states loaded from rank 0")

    if rank == 0:
        x_all, y_all = concatenated_batches(x, y, num_workers)
        whole = mx.io.NDArrayIter(x_all, y_all, BATCH * num_workers)
        np.savez(out / "reference.npz", **weights(train(None, whole, 100, epochs, context)))
    kv.barrier()
    report(rank, "done")


if __name__ == "__main__":
    main()
