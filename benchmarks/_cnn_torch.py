"""PyTorch eager running a model-zoo network's exported MXNet graph, for ``benchmarks/cnn.py``.

The symbol JSON that MXNet's ``HybridBlock.export`` wrote is walked once into
a list of ``torch.nn.functional`` calls (convolution, BatchNorm, pooling,
...), run in order on each pass: PyTorch eager, the same kernels an
``nn.Module`` of the same layers calls, and exactly the same architecture and
weights as the other contenders, so every one of the sixteen networks runs and
its output can be checked against MXNet's. Training: cross-entropy on the last
layer (what SoftmaxOutput's gradient is, rescaled by 1/batch as Module does)
and ``torch.optim.SGD`` with momentum. Threads: PyTorch's defaults.
"""

import ast
import json

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 (PyTorch's own spelling)

LEARNING_RATE = 0.001
MOMENTUM = 0.9


def _tuple(text, default):
    return tuple(ast.literal_eval(text)) if text else default


def _flag(attrs, name, default):
    return attrs.get(name, str(default)).lower() in ("true", "1")


def _convolution(attrs, x, weight, bias=None):
    return F.conv2d(
        x,
        weight,
        None if _flag(attrs, "no_bias", False) else bias,
        _tuple(attrs.get("stride"), (1, 1)),
        _tuple(attrs.get("pad"), (0, 0)),
        _tuple(attrs.get("dilate"), (1, 1)),
        int(attrs.get("num_group", 1)),
    )


def _batch_norm(attrs, x, gamma, beta, mean, var, training):
    return F.batch_norm(
        x,
        mean,
        var,
        None if _flag(attrs, "fix_gamma", True) else gamma,  # MXNet's default: gamma fixed at 1
        beta,
        training=training and not _flag(attrs, "use_global_stats", False),
        momentum=1.0 - float(attrs.get("momentum", 0.9)),  # MXNet keeps 0.9 of the old value
        eps=float(attrs.get("eps", 1e-3)),
    )


def _pooling(attrs, x):
    kind = attrs.get("pool_type", "max")
    if _flag(attrs, "global_pool", False):
        return F.adaptive_max_pool2d(x, 1) if kind == "max" else F.adaptive_avg_pool2d(x, 1)
    kernel = _tuple(attrs.get("kernel"), None)
    stride = _tuple(attrs.get("stride"), (1, 1))
    pad = _tuple(attrs.get("pad"), (0, 0))
    ceil = attrs.get("pooling_convention", "valid") == "full"
    if kind == "max":
        return F.max_pool2d(x, kernel, stride, pad, ceil_mode=ceil)
    if kind == "avg":
        include = _flag(attrs, "count_include_pad", True)
        return F.avg_pool2d(x, kernel, stride, pad, ceil_mode=ceil, count_include_pad=include)
    raise NotImplementedError(f"Pooling pool_type={kind!r} is not translated to PyTorch")


def _activation(attrs, x):
    kind = attrs.get("act_type")
    functions = {"relu": F.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh}
    if kind not in functions:
        raise NotImplementedError(f"Activation act_type={kind!r} is not translated to PyTorch")
    return functions[kind](x)


def _fully_connected(attrs, x, weight, bias=None):
    if _flag(attrs, "flatten", True):
        x = x.reshape(x.shape[0], -1)
    return F.linear(x, weight, None if _flag(attrs, "no_bias", False) else bias)


OPS = {
    "Convolution": lambda a, xs, t: _convolution(a, *xs),
    "BatchNorm": lambda a, xs, t: _batch_norm(a, *xs, t),
    "Pooling": lambda a, xs, t: _pooling(a, xs[0]),
    "Activation": lambda a, xs, t: _activation(a, xs[0]),
    "FullyConnected": lambda a, xs, t: _fully_connected(a, *xs),
    "Flatten": lambda a, xs, t: xs[0].reshape(xs[0].shape[0], -1),
    "elemwise_add": lambda a, xs, t: xs[0] + xs[1],
    "Concat": lambda a, xs, t: torch.cat(xs, int(a.get("dim", 1))),
    "clip": lambda a, xs, t: torch.clamp(xs[0], float(a["a_min"]), float(a["a_max"])),
    "Dropout": lambda a, xs, t: F.dropout(xs[0], float(a.get("p", 0.5)), training=t),
}


class Graph:
    """The exported graph as a list of calls; ``forward(x, training)`` runs them."""

    def __init__(self, symbol_path, weights):
        with open(symbol_path) as handle:
            graph = json.load(handle)
        nodes, self.head = graph["nodes"], graph["heads"][0][0]
        self.tensors = {}  # parameter name -> tensor
        self.steps = []  # (op, attrs, input node ids, node id)
        for index, node in enumerate(nodes):
            if node["op"] == "null":
                if node["name"] != "data":
                    self.tensors[index] = torch.from_numpy(np.array(weights[node["name"]]))
                continue
            if node["op"] not in OPS:
                raise NotImplementedError(f"{node['op']} ({node['name']}) is not translated")
            inputs = [source for source, _, _ in node["inputs"]]
            self.steps.append((OPS[node["op"]], node.get("attrs", {}), inputs, index))
        self.names = {i: n["name"] for i, n in enumerate(nodes)}

    def trainable(self):
        """The parameters a training step updates (BatchNorm's running statistics are not)."""
        return [t for i, t in self.tensors.items() if not self.names[i].endswith(("_mean", "_var"))]

    def forward(self, x, training):
        values = dict(self.tensors)
        values[0] = x
        for function, attrs, inputs, index in self.steps:
            values[index] = function(attrs, [values[i] for i in inputs], training)
        return values[self.head]


def make_step(spec, images, labels):
    """(step, version): one inference pass or one SGD training step; step returns the output."""
    weights = np.load(spec["weights"])
    graph = Graph(spec["prefix"] + "-symbol.json", weights)
    x = torch.from_numpy(images)
    version = "PyTorch " + torch.__version__
    if spec["mode"] == "infer":

        def step():
            with torch.inference_mode():
                return graph.forward(x, False).numpy()

        return step, version
    params = graph.trainable()
    for param in params:
        param.requires_grad_(True)
    optimizer = torch.optim.SGD(params, lr=LEARNING_RATE, momentum=MOMENTUM)
    target = torch.from_numpy(labels.astype(np.int64))

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        logits = graph.forward(x, True)
        F.cross_entropy(logits, target).backward()
        optimizer.step()
        return torch.softmax(logits.detach(), 1).numpy()

    return train_step, version
