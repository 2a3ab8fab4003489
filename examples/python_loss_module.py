"""A loss written in Python: an MLP trained with a multi-class hinge loss on digits.

The network is a Module without a loss layer; a PythonLossModule computes the
gradient of the multi-class hinge loss in NumPy, and a SequentialModule
chains the two so that ``fit`` trains them as one. This is MXNet's
``example/module/python_loss.py`` on scikit-learn's bundled 8x8 digits; the
script runs unchanged on MXNet 1.9 with ``import mxnet as mx``.

    python examples/python_loss_module.py [--num-epochs 20]
"""

import argparse
import logging

import numpy as np
from sklearn.datasets import load_digits

import rebind as mx


def multiclass_hinge_grad(scores, labels):
    """Gradient of ``max_j (1 + s_j - s_y)`` (j != y) with respect to the scores.

    For each example the most violating wrong class gets +1 and the true
    class -1, unless every margin is already met.
    """
    scores = scores.asnumpy()
    labels = labels.asnumpy().astype(int)
    rows = np.arange(len(scores))
    margins = 1 + scores - scores[rows, labels][:, None]
    margins[rows, labels] = 0
    worst = margins.argmax(axis=1)
    violated = margins[rows, worst] > 0
    grad = np.zeros_like(scores)
    grad[rows[violated], labels[violated]] -= 1
    grad[rows[violated], worst[violated]] += 1
    return grad


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


def build_network():
    """An MLP ending in raw class scores (no loss layer: the Python module is the loss)."""
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, name="fc1", num_hidden=128)
    act1 = mx.sym.Activation(fc1, name="relu1", act_type="relu")
    fc2 = mx.sym.FullyConnected(act1, name="fc2", num_hidden=64)
    act2 = mx.sym.Activation(fc2, name="relu2", act_type="relu")
    return mx.sym.FullyConnected(act2, name="fc3", num_hidden=10)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=50)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    mx.random.seed(42)
    np.random.seed(42)

    mlp = mx.mod.Module(build_network(), label_names=None, context=mx.cpu())
    loss = mx.mod.PythonLossModule(grad_func=multiclass_hinge_grad)
    model = mx.mod.SequentialModule().add(mlp).add(loss, take_labels=True, auto_wiring=True)

    train, val = digits_iters(args.batch_size)
    model.fit(
        train,
        eval_data=val,
        eval_metric="acc",
        initializer=mx.init.Xavier(),
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.05, "momentum": 0.9},
        num_epoch=args.num_epochs,
    )
    accuracy = dict(model.score(val, "acc"))["accuracy"]
    print(f"Validation accuracy: {accuracy:.4f}")


if __name__ == "__main__":
    main()
