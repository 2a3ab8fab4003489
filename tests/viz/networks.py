"""The networks the visualization tests draw, written once for real MXNet and for rebind.

Each builder takes the ``mx`` module to build with, so the recorder
(tests/recording/record_viz.py, under real MXNet) and the tests (under rebind)
describe exactly the same graphs.
"""

import numpy as np


def mlp(mx):
    """The README demo's MLP (examples/mlp_digits.py): 64 -> 128 -> 64 -> 10, softmax."""
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=128, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=64, name="fc2")
    net = mx.sym.Activation(net, act_type="relu", name="relu2")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc3")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def lenet_bn(mx):
    """LeNet with BatchNorm, a bias-free and a grouped convolution, LeakyReLU and Dropout."""
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20, name="conv1")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn1")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh1")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    net = mx.sym.Convolution(net, kernel=(5, 5), num_filter=50, no_bias=True, name="conv2")
    net = mx.sym.BatchNorm(net, name="bn2")
    net = mx.sym.LeakyReLU(net, act_type="leaky", slope=0.1, name="leaky2")
    net = mx.sym.Convolution(
        net, kernel=(3, 3), stride=(1, 1), pad=(1, 1), num_filter=10, num_group=2, name="conv3"
    )
    net = mx.sym.Pooling(net, pool_type="avg", kernel=(2, 2), stride=(2, 2), name="pool2")
    net = mx.sym.Flatten(net, name="flatten")
    net = mx.sym.FullyConnected(net, num_hidden=500, name="fc1")
    net = mx.sym.Dropout(net, p=0.5, name="drop1")
    net = mx.sym.FullyConnected(net, num_hidden=10, no_bias=True, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def two_inputs(mx):
    """Two inputs, an Embedding, a Concat, a SliceChannel and a regression output."""
    data = mx.sym.Variable("data")
    tokens = mx.sym.Variable("tokens")
    dense = mx.sym.FullyConnected(data, num_hidden=8, name="dense")
    embed = mx.sym.Embedding(tokens, input_dim=100, output_dim=4, name="embed")
    embed = mx.sym.Reshape(embed, shape=(0, -1), name="embed_flat")
    net = mx.sym.Concat(dense, embed, dim=1, name="concat")
    halves = mx.sym.SliceChannel(net, num_outputs=2, axis=1, name="split")
    net = mx.sym.FullyConnected(halves[0], num_hidden=1, name="head")
    net = mx.sym.Softmax(net, name="softmax_head")
    return mx.sym.LinearRegressionOutput(net, name="out")


def lstm(mx):
    """A fused LSTM layer (MXNet counts no parameters for RNN) and a classifier on its steps."""
    data = mx.sym.Variable("data")
    net = mx.sym.RNN(data, state_size=8, num_layers=2, mode="lstm", name="lstm")
    net = mx.sym.Reshape(net, shape=(-1, 8), name="steps")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="classify")
    return mx.sym.SoftmaxOutput(net, name="softmax")


NETWORKS = {
    "mlp": (mlp, {"data": (32, 64)}),
    "lenet_bn": (lenet_bn, {"data": (64, 1, 28, 28)}),
    "two_inputs": (two_inputs, {"data": (16, 10), "tokens": (16, 3)}),
    "lstm": (lstm, {"data": (5, 4, 3)}),
}

DTYPES = {"data": np.float32, "tokens": np.float32}


def summary_cases():
    """(case name, network name, keyword arguments of print_summary) for every recorded call."""
    cases = []
    for name, (_, shapes) in NETWORKS.items():
        cases.append((f"{name}/no_shape", name, {}))
        cases.append((f"{name}/shape", name, {"shape": shapes}))
    cases.append(("mlp/narrow", "mlp", {"shape": NETWORKS["mlp"][1], "line_length": 70}))
    cases.append(
        (
            "lenet_bn/absolute",
            "lenet_bn",
            {"shape": NETWORKS["lenet_bn"][1], "line_length": 90, "positions": [30, 55, 65, 90]},
        )
    )
    return cases


def plot_cases():
    """(case name, network name, keyword arguments of plot_network) for every recorded call."""
    cases = []
    for name, (_, shapes) in NETWORKS.items():
        dtypes = {key: DTYPES[key] for key in shapes}
        cases.append((f"{name}/plain", name, {}))
        cases.append((f"{name}/shape", name, {"shape": shapes}))
        cases.append(
            (
                f"{name}/everything",
                name,
                {
                    "title": f"{name}_net",
                    "save_format": "png",
                    "shape": shapes,
                    "dtype": dtypes,
                    "node_attrs": {"shape": "oval", "fixedsize": "false"},
                    "hide_weights": False,
                },
            )
        )
    return cases
