"""A LeNet-style convolutional network on scikit-learn's 8x8 digits, through the Module workflow.

The same flow as ``mlp_digits.py`` (fit with a checkpoint per epoch, score,
predict, iter_predict, reload and re-score) with images instead of flat
vectors: one channel of 8x8 pixels through two 3x3 convolutions with tanh,
a 2x2 max pooling between them, and two fully connected layers. The script
is plain MXNet 1.9: with ``import mxnet as mx`` in place of
``import rebind as mx`` it runs unchanged.

    python examples/lenet_digits.py [--num-epochs 15] [--batch-size 32] [--checkpoint-dir DIR]
"""

import argparse
import os
import tempfile

import numpy as np
from sklearn.datasets import load_digits

import rebind as mx

NUM_VALIDATION = 384  # of the 1797 digits (12 batches of 32); the other 1413 train


def digits_iters(batch_size):
    """Training and validation iterators over the digits as (1, 8, 8) images in [0, 1]."""
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
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


def build_lenet():
    """(1, 8, 8) -> conv 3x3x20 (6x6) -> pool 2x2 (3x3) -> conv 3x3x50 (1x1) -> 100 -> 10."""
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=20, name="conv1")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh1")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    net = mx.sym.Convolution(net, kernel=(3, 3), num_filter=50, name="conv2")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh2")
    net = mx.sym.Flatten(net, name="flatten")
    net = mx.sym.FullyConnected(net, num_hidden=100, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh3")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
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
    parser.add_argument("--num-epochs", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--checkpoint-dir", help="where the checkpoints go (default: a temporary folder)"
    )
    args = parser.parse_args()
    mx.random.seed(42)
    np.random.seed(42)  # MXNet's NDArrayIter shuffles with NumPy's global stream

    train, val, val_labels = digits_iters(args.batch_size)
    module = mx.mod.Module(build_lenet(), context=mx.cpu())
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.checkpoint_dir or scratch
        os.makedirs(folder, exist_ok=True)
        prefix = os.path.join(folder, "lenet_digits")
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
