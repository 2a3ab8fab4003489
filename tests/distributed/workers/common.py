"""What the worker scripts share: a small network, its data, and command-line helpers."""

import sys

import numpy as np

import rebind as mx

BATCH = 8  # per worker
BATCHES = 3  # per worker and epoch
FEATURES, HIDDEN, CLASSES = 10, 16, 3


def build_net(hidden=HIDDEN):
    """10 inputs -> ``hidden`` relu -> 3 classes with softmax cross-entropy."""
    net = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(net, num_hidden=hidden, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=CLASSES, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def make_data(num_workers):
    """``num_workers * BATCHES * BATCH`` examples, the same on every worker."""
    rng = np.random.RandomState(0)
    count = num_workers * BATCHES * BATCH
    x = rng.uniform(-1, 1, (count, FEATURES)).astype(np.float32)
    y = (x[:, :CLASSES] * np.arange(1, CLASSES + 1)).argmax(axis=1).astype(np.float32)
    return x, y


def concatenated_batches(x, y, num_workers):
    """The examples reordered so batch i of ``BATCH * num_workers`` is every worker's batch i."""
    per_worker = BATCHES * BATCH
    rows = [
        np.arange(rank * per_worker + i * BATCH, rank * per_worker + (i + 1) * BATCH)
        for i in range(BATCHES)
        for rank in range(num_workers)
    ]
    order = np.concatenate(rows)
    return x[order], y[order]


def report(rank, text):
    """One line on stdout, prefixed with the rank, in one write, flushed at once.

    One write: with unbuffered output (PYTHONUNBUFFERED) print() writes the text
    and its newline apart, and the launcher may put another rank's line between.
    """
    sys.stdout.write(f"rank {rank}: {text}\n")
    sys.stdout.flush()
