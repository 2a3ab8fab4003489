"""Two modules chained into one: a SequentialModule trained on digits.

The first module is a hidden layer; the second, the rest of an MLP with a
softmax loss. ``auto_wiring`` feeds the first module's output to the second's
``data`` input, and ``take_labels`` gives the labels to the second. ``fit``,
``score`` and ``predict`` then treat the chain as one module. This is MXNet's
``example/module/sequential_module.py`` on scikit-learn's bundled 8x8 digits;
the script runs unchanged on MXNet 1.9 with ``import mxnet as mx``.

    python examples/sequential_module.py [--num-epochs 20]
"""

import argparse
import logging

import numpy as np
from sklearn.datasets import load_digits

import rebind as mx


def digits_iters(batch_size):
    """Training and validation iterators over scikit-learn's digits (pixels scaled to [0, 1])."""
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.float32)
    order = np.random.RandomState(0).permutation(len(x))
    x, y = x[order], y[order]
    split = 1400
    train = mx.io.NDArrayIter(x[:split], y[:split], batch_size, shuffle=True)
    val = mx.io.NDArrayIter(x[split:], y[split:], batch_size)
    return train, val


def build_chain():
    """A hidden layer, then the rest of the MLP with its loss, as two chained modules."""
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, name="fc1", num_hidden=128)
    act1 = mx.sym.Activation(fc1, name="relu1", act_type="relu")
    first = mx.mod.Module(act1, label_names=[])

    data = mx.sym.Variable("data")
    fc2 = mx.sym.FullyConnected(data, name="fc2", num_hidden=64)
    act2 = mx.sym.Activation(fc2, name="relu2", act_type="relu")
    fc3 = mx.sym.FullyConnected(act2, name="fc3", num_hidden=10)
    softmax = mx.sym.SoftmaxOutput(fc3, name="softmax")
    second = mx.mod.Module(softmax)

    chain = mx.mod.SequentialModule()
    chain.add(first).add(second, take_labels=True, auto_wiring=True)
    return chain


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=50)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    mx.random.seed(42)
    np.random.seed(42)

    chain = build_chain()
    train, val = digits_iters(args.batch_size)
    chain.fit(
        train,
        eval_data=val,
        eval_metric="acc",
        initializer=mx.init.Xavier(),
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        num_epoch=args.num_epochs,
    )

    arg_params, _ = chain.get_params()
    print("Parameters of the chain:", ", ".join(sorted(arg_params)))
    probabilities = chain.predict(val)
    predicted = probabilities.asnumpy().argmax(axis=1)
    labels = val.label[0][1].asnumpy()
    print(f"Predicted {len(predicted)} digits, {(predicted == labels).sum()} right")
    accuracy = dict(chain.score(val, "acc"))["accuracy"]
    print(f"Validation accuracy: {accuracy:.4f}")


if __name__ == "__main__":
    main()
