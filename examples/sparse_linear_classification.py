"""Logistic regression over a million sparse features: CSR data, a row_sparse weight.

MXNet's example/sparse/linear_classification, on a generated LibSVM file: each
example has a few dozen of ``--num-features`` features, and its label comes
from a hidden linear model. The weight (``num_features x 2``) is row_sparse:
each batch pulls from the kvstore only the rows its examples use
(``sparse_row_id_fn``), the gradient holds only those rows, and the optimizer
updates only them (lazy update). Trained with ``Module.fit`` and a ``local``
kvstore, or ``dist_sync`` over MPI (each worker reads its part of the file)::

    python examples/sparse_linear_classification.py --num-epochs 3
    mpiexec -n 2 python -m mpi4py examples/sparse_linear_classification.py --kvstore dist_sync

``--framework mxnet`` runs the same script on MXNet 1.9.1 (for comparing
speed). The script prints the validation accuracy, the time per epoch, the
peak memory, and what the dense form of the data and weight would take.
"""

import argparse
import importlib
import logging
import os
import resource
import tempfile
import time

import numpy as np


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-features", type=int, default=1_000_000)
    parser.add_argument("--num-examples", type=int, default=20_000)
    parser.add_argument("--nnz", type=int, default=40, help="features per example")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--num-epochs", type=int, default=3)
    parser.add_argument("--optimizer", default="adagrad", choices=["sgd", "adagrad", "adam"])
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--kvstore", default="local", help="local, device or dist_sync")
    parser.add_argument("--framework", default="rebind", choices=["rebind", "mxnet"])
    parser.add_argument(
        "--data-dir",
        default=None,
        help="where the LibSVM files go (default: a folder in the temp dir)",
    )
    return parser.parse_args()


def write_libsvm(path, num_examples, nnz, true_weight, frequent, seed):
    """A LibSVM file of ``num_examples`` rows labelled by the sign of ``x . true_weight``.

    Half of each example's features come from the ``frequent`` ones (shared by
    every file, as popular features in click data), half from all of them.
    Only the frequent ones carry weight in ``true_weight``.
    """
    rs = np.random.RandomState(seed)
    num_features = true_weight.size
    with open(path, "w") as handle:
        for _ in range(num_examples):
            picks = [rs.choice(frequent, nnz // 2), rs.randint(0, num_features, nnz - nnz // 2)]
            cols = np.unique(np.concatenate(picks))
            values = rs.uniform(0.5, 1.5, cols.size)
            label = int(values @ true_weight[cols] > 0)
            pairs = " ".join(f"{c}:{v:.3f}" for c, v in zip(cols, values))  # noqa: B905 (py3.8)
            handle.write(f"{label} {pairs}")
            handle.write("\n")


def linear_model(mx, num_features):
    """``softmax(dot(x, weight) + bias)`` with csr ``x`` and a row_sparse ``weight``."""
    x = mx.symbol.Variable("data", stype="csr")
    weight = mx.symbol.Variable(
        "weight", shape=(num_features, 2), init=mx.init.Normal(sigma=0.01), stype="row_sparse"
    )
    bias = mx.symbol.Variable("bias", shape=(2,))
    pred = mx.symbol.broadcast_add(mx.symbol.sparse.dot(x, weight), bias)
    return mx.symbol.SoftmaxOutput(pred, mx.symbol.Variable("softmax_label"), name="out")


def batch_row_ids(data_batch):
    """The weight rows a batch needs: the columns its examples use."""
    return {"weight": data_batch.data[0].indices}


def main():
    args = parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    mx = importlib.import_module("mxnet" if args.framework == "mxnet" else "rebind")
    kv = mx.kvstore.create(args.kvstore)
    # one folder per data set, the same for every worker of an mpiexec run
    name = f"sparse_linear_{args.num_features}_{args.num_examples}_{args.nnz}"
    folder = args.data_dir or os.path.join(tempfile.gettempdir(), name)
    os.makedirs(folder, exist_ok=True)
    rs = np.random.RandomState(0)
    # the labels depend on the frequent features only; the rare ones are noise to ignore
    frequent = rs.choice(args.num_features, size=min(2000, args.num_features), replace=False)
    true_weight = np.zeros(args.num_features)
    true_weight[frequent] = rs.normal(size=frequent.size)
    paths = {}
    for part, count, seed in (("train", args.num_examples, 1), ("val", args.num_examples // 4, 2)):
        paths[part] = os.path.join(folder, f"{part}.libsvm")
        if kv.rank == 0 and not os.path.exists(paths[part]):
            write_libsvm(paths[part], count, args.nnz, true_weight, frequent, seed)
    kv._barrier()  # the other workers read the files once rank 0 has written them
    shape = (args.num_features,)
    train = mx.io.LibSVMIter(
        data_libsvm=paths["train"],
        data_shape=shape,
        batch_size=args.batch_size,
        num_parts=kv.num_workers,
        part_index=kv.rank,
    )
    val = mx.io.LibSVMIter(data_libsvm=paths["val"], data_shape=shape, batch_size=args.batch_size)
    mod = mx.mod.Module(
        linear_model(mx, args.num_features), data_names=["data"], label_names=["softmax_label"]
    )
    epoch_times = []

    def timed(epoch, symbol, arg_params, aux_params):
        epoch_times.append(time.perf_counter())

    start, cpu_start = time.perf_counter(), time.process_time()
    mod.fit(
        train,
        eval_data=val,
        num_epoch=args.num_epochs,
        kvstore=kv,
        optimizer=args.optimizer,
        optimizer_params={
            "learning_rate": args.learning_rate,
            "rescale_grad": 1.0 / args.batch_size / kv.num_workers,
        },
        eval_metric="acc",
        sparse_row_id_fn=batch_row_ids,
        epoch_end_callback=timed,
    )
    wall, cpu_time = time.perf_counter() - start, time.process_time() - cpu_start
    accuracy = mod.score(val, "acc")[0][1]
    weight = mod.get_params()[0]["weight"]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    dense_batch_mb = args.batch_size * args.num_features * 4 / 2**20
    dense_weight_mb = args.num_features * 2 * 4 / 2**20
    print(f"weight: {weight.stype}, {weight.shape}")
    print(
        f"Training time: {wall:.2f} s wall, {cpu_time:.2f} s CPU for {args.num_epochs} epochs "
        f"({wall / args.num_epochs:.2f} s per epoch); load {os.getloadavg()[0]:.2f}"
    )
    print(
        f"Peak memory: {peak_mb:.0f} MB; the dense form would need {dense_batch_mb:.0f} MB "
        f"per data batch and {dense_weight_mb:.0f} MB per copy of the weight "
        "(weight, gradient, optimizer state)"
    )
    print(f"Validation accuracy: {accuracy:.4f}")


if __name__ == "__main__":
    main()
