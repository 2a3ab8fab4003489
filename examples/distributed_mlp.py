"""Data-parallel training of an MLP on scikit-learn's digits with ``kvstore='dist_sync'``.

Start one process per worker with MPI's launcher (``pip install 'rebind[mpi]'``
installs mpi4py and MPICH):

    mpiexec -n 2 python examples/distributed_mlp.py        # two workers on this machine
    python examples/distributed_mlp.py                      # one worker, no launcher needed
    mpiexec -n 4 -f hosts python -m mpi4py examples/distributed_mlp.py   # across machines

Each worker trains on its own part of the training set (``NDArrayIter``'s
``num_parts``/``part_index``, a rebind extension). Every batch, the gradients
of all workers are summed (an MPI allreduce) and every worker applies the
same update, so all hold the same weights: the validation accuracy printed by
each rank is the same, computed on the whole validation set. Rank 0 writes the
checkpoint. ``python -m mpi4py`` makes an error in one worker end them all.
The code is MXNet's: only the sharding arguments are rebind's.
"""

import argparse
import logging
import os
import sys
import tempfile

import numpy as np
from sklearn.datasets import load_digits

import rebind as mx

NUM_VALIDATION = 384  # of the 1797 digits; the other 1413 are split between the workers


def say(line):
    """Print ``line`` with one write: MPI's launcher may put another rank's output
    between the text and its newline if print() writes them apart (unbuffered output)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def digits(rank, num_workers, batch_size):
    """This worker's part of the training digits, and the whole validation set."""
    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = data.target.astype(np.float32)
    order = np.random.RandomState(0).permutation(len(x))
    x, y = x[order], y[order]
    train = mx.io.NDArrayIter(
        x[NUM_VALIDATION:],
        y[NUM_VALIDATION:],
        batch_size,
        shuffle=True,
        num_parts=num_workers,
        part_index=rank,
    )
    val = mx.io.NDArrayIter(x[:NUM_VALIDATION], y[:NUM_VALIDATION], batch_size)
    return train, val


def build_mlp():
    """64 pixels -> 128 -> 64 -> 10 classes, ReLU between, softmax cross-entropy at the end."""
    net = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(net, num_hidden=128, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=64, name="fc2")
    net = mx.sym.Activation(net, act_type="relu", name="relu2")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc3")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32, help="per worker")
    parser.add_argument("--kvstore", default="dist_sync")
    parser.add_argument("--checkpoint-dir", help="where rank 0 writes")
    args = parser.parse_args()

    kv = mx.kv.create(args.kvstore)  # joins the MPI job: every worker must create it
    rank, num_workers = kv.rank, kv.num_workers
    logging.basicConfig(level=logging.INFO, format=f"[rank {rank}] %(message)s")
    mx.random.seed(42 + rank)  # different on purpose: init copies rank 0's parameters
    np.random.seed(42 + rank)

    train, val = digits(rank, num_workers, args.batch_size)
    module = mx.mod.Module(build_mlp(), context=mx.cpu())
    module.fit(
        train,
        eval_metric="acc",
        kvstore=kv,
        initializer=mx.init.Xavier(),
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4},
        num_epoch=args.num_epochs,
    )
    train_accuracy = dict(module.score(train, "acc"))["accuracy"]
    accuracy = dict(module.score(val, "acc"))["accuracy"]
    say(
        f"rank {rank} of {num_workers}: {train.num_data} training examples, training accuracy "
        f"{train_accuracy:.4f}, Validation accuracy: {accuracy:.4f}"
    )
    folder = args.checkpoint_dir or os.path.join(tempfile.gettempdir(), "rebind_distributed_mlp")
    os.makedirs(folder, exist_ok=True)
    prefix = os.path.join(folder, "distributed_mlp")
    module.save_checkpoint(prefix, args.num_epochs)  # rank 0 writes, every worker waits for it
    if os.path.exists(f"{prefix}-{args.num_epochs:04d}.params"):  # same machine or shared disk
        _, saved, _ = mx.model.load_checkpoint(prefix, args.num_epochs)
        weights, _ = module.get_params()
        same = all(np.array_equal(saved[k].asnumpy(), weights[k].asnumpy()) for k in weights)
        say(f"rank {rank}: the checkpoint rank 0 wrote in {folder} holds my weights: {same}")


if __name__ == "__main__":
    main()
