"""Training cases for record_states.py (MXNet and rebind) and test_mxnet_states.py.

Each case trains a one-layer softmax network with a Module for ``STEPS``
batches, saves a checkpoint with its optimizer states, then a fresh Module
loads it (``Module.load(..., load_optimizer_states=True)``) and trains
``STEPS`` more batches. Everything here runs unchanged with ``mx`` being
MXNet 1.9.1 or rebind.
"""

import numpy as np

STEPS = 3
BATCH = 4
CASES = {
    # name: (optimizer, optimizer params, devices, kvstore, dtype)
    "sgd_mom": ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}, 1, "local", "float32"),
    "adam": ("adam", {"learning_rate": 0.01, "wd": 1e-3}, 1, "local", "float32"),
    "mp_sgd_fp16": (
        "sgd",
        {"learning_rate": 0.1, "momentum": 0.9, "multi_precision": True},
        1,
        "local",
        "float16",
    ),
    "sgd_mom_2dev_local": ("sgd", {"learning_rate": 0.1, "momentum": 0.9}, 2, "local", "float32"),
    "adam_2dev_device": ("adam", {"learning_rate": 0.01}, 2, "device", "float32"),
    "sgd_mom_2dev_nokv": ("sgd", {"learning_rate": 0.1, "momentum": 0.9}, 2, None, "float32"),
}


def network(mx, dtype):
    """data (BATCH, 4) -> FullyConnected(3) -> SoftmaxOutput.

    In float16 the layer is elementwise (data * weight + bias, 4 classes):
    MXNet's CPU FullyConnected has no float16 kernel.
    """
    data = mx.sym.Variable("data")
    if dtype == "float16":
        weight = mx.sym.Variable("fc_weight", shape=(1, 4))
        bias = mx.sym.Variable("fc_bias", shape=(1, 4))
        fc = mx.sym.broadcast_add(mx.sym.broadcast_mul(data, weight), bias)
    else:
        fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def batches(mx, dtype):
    """2 * STEPS batches of fixed data and labels."""
    rs = np.random.RandomState(0)
    data = rs.randn(2 * STEPS * BATCH, 4).astype(dtype)
    label = rs.randint(0, _classes(dtype), 2 * STEPS * BATCH).astype(dtype)
    return [
        mx.io.DataBatch(
            data=[mx.nd.array(data[i : i + BATCH], dtype=dtype)],
            label=[mx.nd.array(label[i : i + BATCH], dtype=dtype)],
        )
        for i in range(0, len(data), BATCH)
    ]


def initial_params(mx, dtype):
    """The starting weights, the same for MXNet and rebind."""
    rs = np.random.RandomState(1)
    shapes = ((1, 4), (1, 4)) if dtype == "float16" else ((3, 4), (3,))
    return {
        "fc_weight": mx.nd.array(rs.uniform(-0.5, 0.5, shapes[0]), dtype=dtype),
        "fc_bias": mx.nd.array(rs.uniform(-0.5, 0.5, shapes[1]), dtype=dtype),
    }


def _classes(dtype):
    return 4 if dtype == "float16" else 3


def _descs(mx, dtype):
    data = [mx.io.DataDesc("data", (BATCH, 4), dtype)]
    return data, [mx.io.DataDesc("softmax_label", (BATCH,), dtype)]


def _contexts(mx, devices):
    return [mx.cpu(i) for i in range(devices)]


def _train(mx, mod, case, steps):
    optimizer, params, _, kvstore, _ = CASES[case]
    mod.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=dict(params))
    for batch in steps:
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.update()


def train_and_save(mx, case, prefix):
    """Train STEPS batches from the initial weights; checkpoint with states as epoch 1."""
    _, _, devices, _, dtype = CASES[case]
    mod = mx.mod.Module(network(mx, dtype), context=_contexts(mx, devices))
    mod.bind(*_descs(mx, dtype))
    mod.init_params(arg_params=initial_params(mx, dtype), aux_params={})
    _train(mx, mod, case, batches(mx, dtype)[:STEPS])
    mod.save_checkpoint(prefix, 1, save_optimizer_states=True)


def resume(mx, case, prefix):
    """Load the epoch-1 checkpoint with its states, train STEPS more; the arg params."""
    _, _, devices, _, dtype = CASES[case]
    mod = mx.mod.Module.load(prefix, 1, load_optimizer_states=True, context=_contexts(mx, devices))
    mod.bind(*_descs(mx, dtype))
    _train(mx, mod, case, batches(mx, dtype)[STEPS:])
    return mod.get_params()[0]
