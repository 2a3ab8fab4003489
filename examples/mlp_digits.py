"""A multilayer perceptron on scikit-learn's digits, through the whole Module workflow.

The README's demo. It trains a 64-128-64-10 MLP with ``Module.fit`` (a
progress bar on a terminal, one line per epoch otherwise, from rebind's
progress plugin), saves a checkpoint every epoch, then scores, predicts,
iterates over predictions, and loads the last checkpoint back into a new
Module that scores the same. The script is plain MXNet 1.9: with
``import mxnet as mx`` in place of ``import rebind as mx`` it runs unchanged.

    python examples/mlp_digits.py [--num-epochs 20] [--batch-size 32] [--checkpoint-dir DIR]
"""

import argparse
import os
import tempfile

import numpy as np
from sklearn.datasets import load_digits

import rebind as mx

NUM_VALIDATION = 384  # of the 1797 digits (12 batches of 32); the other 1413 train


def digits_iters(batch_size):
    """Training and validation iterators over the 8x8 digits, pixels scaled to [0, 1]."""
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.float32)
    order = np.random.RandomState(0).permutation(len(x))
    x, y = x[order], y[order]
    # "softmax_label" is the label input that SoftmaxOutput(name="softmax") declares
    train = mx.io.NDArrayIter(
        x[NUM_VALIDATION:], y[NUM_VALIDATION:], batch_size, shuffle=True, label_name="softmax_label"
    )
    val = mx.io.NDArrayIter(
        x[:NUM_VALIDATION], y[:NUM_VALIDATION], batch_size, label_name="softmax_label"
    )
    return train, val, y[:NUM_VALIDATION]


def build_mlp():
    """64 pixels -> 128 -> 64 -> 10 classes, ReLU between, softmax cross-entropy at the end."""
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=128, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=64, name="fc2")
    net = mx.sym.Activation(net, act_type="relu", name="relu2")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc3")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def show_predictions(module, val, val_labels):
    """``predict`` (one row per example) and ``iter_predict`` (batch by batch)."""
    probabilities = module.predict(val).asnumpy()
    predicted = probabilities.argmax(axis=1)
    print(
        f"predict: {probabilities.shape[0]} rows of {probabilities.shape[1]} class "
        f"probabilities, {np.mean(predicted == val_labels):.4f} of them right"
    )
    for outputs, nbatch, batch in module.iter_predict(val):
        labels = batch.label[0].asnumpy().astype(int)
        guesses = outputs[0].asnumpy().argmax(axis=1)
        print(f"iter_predict, batch {nbatch} of the validation set, its first ten examples:")
        print(f"  predicted {guesses[:10].tolist()}")
        print(f"  labels    {labels[:10].tolist()}")
        break  # one batch is enough to show


def reload_and_score(prefix, epoch, val):
    """A new Module from the checkpoint files, bound for inference only, scored again."""
    module = mx.mod.Module.load(prefix, epoch, context=mx.cpu())
    module.bind(data_shapes=val.provide_data, label_shapes=val.provide_label, for_training=False)
    return dict(module.score(val, "acc"))["accuracy"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--checkpoint-dir", help="where the checkpoints go (default: a temporary folder)"
    )
    args = parser.parse_args()
    mx.random.seed(42)
    np.random.seed(42)  # MXNet's NDArrayIter shuffles with NumPy's global stream

    train, val, val_labels = digits_iters(args.batch_size)
    module = mx.mod.Module(build_mlp(), context=mx.cpu())
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.checkpoint_dir or scratch
        os.makedirs(folder, exist_ok=True)
        prefix = os.path.join(folder, "mlp_digits")
        where = "" if args.checkpoint_dir else " (a temporary folder: --checkpoint-dir keeps them)"
        print(f"checkpoints: {prefix}-symbol.json, {prefix}-NNNN.params{where}", flush=True)
        module.fit(
            train,
            eval_data=val,
            eval_metric="acc",
            initializer=mx.init.Xavier(),
            optimizer="sgd",
            optimizer_params={"learning_rate": 0.05, "momentum": 0.9, "wd": 1e-4},
            num_epoch=args.num_epochs,
            epoch_end_callback=mx.callback.do_checkpoint(prefix),
        )
        accuracy = dict(module.score(val, "acc"))["accuracy"]
        print(f"Validation accuracy: {accuracy:.4f}")
        show_predictions(module, val, val_labels)
        reloaded = reload_and_score(prefix, args.num_epochs, val)
        print(f"reloaded from {prefix}-{args.num_epochs:04d}.params: accuracy {reloaded:.4f}")


if __name__ == "__main__":
    main()
