"""Small networks, data sets and a NumPy reference for the Module tests."""

import numpy as np

import rebind as mx


def mlp(hidden=8, classes=3, dropout=None, lr_mult=None):
    """data -> FC(hidden) -> relu [-> Dropout] -> FC(classes) -> SoftmaxOutput('softmax')."""
    data = mx.sym.Variable("data")
    weight = mx.sym.Variable("fc1_weight", lr_mult=lr_mult) if lr_mult is not None else None
    kwargs = {"weight": weight} if weight is not None else {}
    h = mx.sym.FullyConnected(data, name="fc1", num_hidden=hidden, **kwargs)
    h = mx.sym.Activation(h, name="relu1", act_type="relu")
    if dropout:
        h = mx.sym.Dropout(h, name="drop1", p=dropout)
    h = mx.sym.FullyConnected(h, name="fc2", num_hidden=classes)
    return mx.sym.SoftmaxOutput(h, name="softmax")


def separable(n, dim=6, classes=3, seed=0):
    """``(X, y)``: float32 points labelled by the argmax of a fixed linear map (learnable)."""
    rs = np.random.RandomState(seed)
    x = rs.randn(n, dim).astype(np.float32)
    w = rs.randn(dim, classes)
    return x, np.argmax(x @ w, axis=1).astype(np.float32)


def random_params(dim=6, hidden=8, classes=3, seed=1):
    """NumPy parameters of ``mlp`` (float32), by MXNet name."""
    rs = np.random.RandomState(seed)
    return {
        "fc1_weight": (rs.randn(hidden, dim) * 0.5).astype(np.float32),
        "fc1_bias": (rs.randn(hidden) * 0.1).astype(np.float32),
        "fc2_weight": (rs.randn(classes, hidden) * 0.5).astype(np.float32),
        "fc2_bias": (rs.randn(classes) * 0.1).astype(np.float32),
    }


def to_nd(params, ctx=None):
    return {k: mx.nd.array(v, ctx=ctx) for k, v in params.items()}


def bound_module(ctx, batch=8, dim=6, params=None, **kwargs):
    """An ``mlp`` Module bound for (batch, dim) with ``params`` (NumPy) set."""
    mod = mx.mod.Module(mlp(), context=ctx, **kwargs)
    mod.bind([("data", (batch, dim))], [("softmax_label", (batch,))])
    mod.init_params(arg_params=to_nd(params or random_params(dim)))
    return mod


# -- the NumPy reference ---------------------------------------------------------------


def np_forward(p, x):
    """(hidden pre-activation, hidden, softmax probabilities)."""
    z = x @ p["fc1_weight"].T + p["fc1_bias"]
    h = np.maximum(z, 0)
    logits = h @ p["fc2_weight"].T + p["fc2_bias"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return z, h, e / e.sum(axis=1, keepdims=True)


def np_gradients(p, x, y):
    """Gradients of the summed cross-entropy (SoftmaxOutput's head gradient p - onehot)."""
    z, h, prob = np_forward(p, x)
    dlogits = prob.copy()
    dlogits[np.arange(len(y)), y.astype(int)] -= 1
    dh = dlogits @ p["fc2_weight"] * (z > 0)
    return {
        "fc2_weight": dlogits.T @ h,
        "fc2_bias": dlogits.sum(axis=0),
        "fc1_weight": dh.T @ x,
        "fc1_bias": dh.sum(axis=0),
        "data": dh @ p["fc1_weight"],
    }


def np_sgd_step(p, x, y, lr, wd=0.0):
    """One MXNet SGD step (rescale 1/batch, weight decay on weights only) in NumPy."""
    grads = np_gradients(p, x, y)
    out = {}
    for name, value in p.items():
        decay = wd if name.endswith("_weight") else 0.0
        out[name] = value - lr * (grads[name] / len(x) + decay * value)
    return out
