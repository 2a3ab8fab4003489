"""The networks AMP is recorded on (tests/recording/record_amp.py) and tested with.

``builders(mx)`` takes the ``mxnet`` or ``rebind`` module, so both sides build
the same graphs with the same names.
"""


def builders(mx):
    """Name -> a function returning ``(symbol, input shapes)``, built with ``mx``."""

    def mlp():
        data = mx.sym.Variable("data")
        fc1 = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
        act1 = mx.sym.Activation(fc1, act_type="relu", name="relu1")
        fc2 = mx.sym.FullyConnected(act1, num_hidden=8, name="fc2")
        act2 = mx.sym.Activation(fc2, act_type="softrelu", name="act2")
        fc3 = mx.sym.FullyConnected(act2, num_hidden=3, name="fc3")
        return mx.sym.SoftmaxOutput(fc3, name="softmax"), {"data": (4, 5)}

    def residual():
        # an add of an fp16 and an unknown-dtype input (amp_multicast), an exp (fp32 op)
        data = mx.sym.Variable("data")
        fc1 = mx.sym.FullyConnected(data, num_hidden=5, name="fc1")
        add = mx.sym.elemwise_add(fc1, data, name="add")
        fc2 = mx.sym.FullyConnected(add, num_hidden=5, name="fc2")
        both = mx.sym.elemwise_add(fc1, fc2, name="both")
        e = mx.sym.exp(both, name="e")
        s = mx.sym.sum(e, axis=1, name="s")
        return mx.sym.Group([s, fc2]), {"data": (2, 5)}

    def multicast():
        # a widest-type op whose second input has no dtype yet: amp_multicast
        data = mx.sym.Variable("data")
        shift = mx.sym.Variable("shift")
        fc1 = mx.sym.FullyConnected(data, num_hidden=5, name="fc1")
        add = mx.sym.broadcast_add(fc1, shift, name="add")
        cat = mx.sym.Concat(add, shift, dim=1, name="cat")
        return mx.sym.softmax(cat, name="sm"), {"data": (2, 5), "shift": (1, 5)}

    def conv():
        data = mx.sym.Variable("data")
        c = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv")
        bn = mx.sym.BatchNorm(c, name="bn")
        act = mx.sym.Activation(bn, act_type="relu", name="act")
        p = mx.sym.Pooling(act, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
        f = mx.sym.Flatten(p, name="flat")
        fc = mx.sym.FullyConnected(f, num_hidden=3, name="fc")
        return mx.sym.SoftmaxOutput(fc, name="softmax"), {"data": (2, 1, 8, 8)}

    return {"mlp": mlp, "residual": residual, "multicast": multicast, "conv": conv}
