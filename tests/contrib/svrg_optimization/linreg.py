"""A linear regression network, its data, and its gradients computed with NumPy."""

import warnings

import numpy as np

import rebind as mx
from rebind.contrib.svrg_optimization import SVRGModule

LABEL = "lin_reg_label"


def network(name="fc1"):
    """``LinearRegressionOutput(FullyConnected(data, num_hidden=1))``."""
    data = mx.sym.Variable("data")
    label = mx.sym.Variable(LABEL)
    fc = mx.sym.FullyConnected(data=data, name=name, num_hidden=1)
    return mx.sym.LinearRegressionOutput(data=fc, label=label, name="lro")


def dataset(n, seed=0):
    """``(x, y)``: integer features in [1, 5) and ``y = x . (1, 2)``, float32."""
    rng = np.random.RandomState(seed)
    x = rng.randint(1, 5, [n, 2]).astype(np.float32)
    return x, x.dot(np.array([1.0, 2.0], np.float32))


def iterator(x, y, batch_size, shuffle=False):
    return mx.io.NDArrayIter(x, y, batch_size=batch_size, shuffle=shuffle, label_name=LABEL)


def svrg_module(x, y, batch_size, update_freq=2, context=None, name="fc1", **opt):
    """A bound SVRGModule with weights one and bias zero, optimizer installed."""
    it = iterator(x, y, batch_size)
    mod = SVRGModule(
        network(name),
        data_names=["data"],
        label_names=[LABEL],
        context=context,
        update_freq=update_freq,
    )
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.One())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod.init_optimizer(
            kvstore=opt.pop("kvstore", "local"),
            optimizer="sgd",
            optimizer_params=opt or {"learning_rate": 0.01},
        )
    return mod, it


def padded_batches(x, y, batch_size):
    """NDArrayIter's batches (the last one padded from the start) and their pads."""
    n = len(x)
    out = []
    for start in range(0, n, batch_size):
        index = np.arange(start, start + batch_size) % n
        out.append((x[index], y[index], max(0, start + batch_size - n)))
    return out


def batch_grads(w, b, x, y):
    """Summed gradients of ``0.5 * sum((x.w + b - y)^2)``: ``(d/dw of shape (1, 2), d/db)``."""
    residual = x.dot(w.reshape(-1)) + b[0] - y
    return (residual[:, None] * x).sum(0, keepdims=True), np.array([residual.sum()])


def full_grads(w, b, x, y, batch_size):
    """MXNet's full gradient: the batch sums added, over ``batches - last pad / batch_size``."""
    batches = padded_batches(x, y, batch_size)
    gw, gb = np.zeros_like(w), np.zeros_like(b)
    for xb, yb, _ in batches:
        dw, db = batch_grads(w, b, xb, yb)
        gw, gb = gw + dw, gb + db
    count = len(batches) - batches[-1][2] / batch_size
    return gw / count, gb / count


def weights(mod):
    arg, _ = mod.get_params()
    return arg["fc1_weight"].asnumpy(), arg["fc1_bias"].asnumpy()
