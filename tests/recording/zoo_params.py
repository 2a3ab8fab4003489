"""Deterministic parameters for the model-zoo networks, shared by the recorder and the tests.

A network's parameters are a pure function of each parameter's name and shape,
so the golden files hold only the exported symbol JSON, MXNet's outputs and
its SGD steps (about 2 MB), not hundreds of megabytes of weights: the
recorders (run with MXNet 1.9.1 under Python 3.8) set these values into the
Gluon network before ``export`` and into the training Module; the tests build
the same values for rebind. Plain NumPy, nothing newer than Python 3.8.

The scales keep each network's output a function of its input, neither fading
below float32's resolution next to the biases nor growing without bound:
weights uniform with variance 2/fan_in (He's, which ReLU halves back), small
biases, betas and means, BatchNorm's running variance in [0.5, 1.5] and its
gamma in [0.5, 1] where identity shortcuts add the signal up (ResNet,
MobileNetV2) but near 1 where nothing does (DenseNet, Inception, MobileNet:
with [0.5, 1] two images gave the same outputs to 1e-7 there).
"""

import json
import re
import zlib

import numpy as np

# name -> (Gluon model-zoo constructor name, input side)
NETWORKS = {
    "resnet18_v1": ("resnet18_v1", 224),
    "resnet34_v1": ("resnet34_v1", 224),
    "resnet50_v1": ("resnet50_v1", 224),
    "resnet18_v2": ("resnet18_v2", 224),
    "resnet34_v2": ("resnet34_v2", 224),
    "resnet50_v2": ("resnet50_v2", 224),
    "vgg11": ("vgg11", 224),
    "vgg11_bn": ("vgg11_bn", 224),
    "alexnet": ("alexnet", 224),
    "densenet121": ("densenet121", 224),
    "squeezenet1.0": ("squeezenet1.0", 224),
    "squeezenet1.1": ("squeezenet1.1", 224),
    "inceptionv3": ("inceptionv3", 299),
    "mobilenet1.0": ("mobilenet1.0", 224),
    "mobilenet0.25": ("mobilenet0.25", 224),
    "mobilenetv2_1.0": ("mobilenetv2_1.0", 224),
}

# name -> (input side, dtype) of the recorded SGD step (record_zoo_training.py):
# networks without Dropout (whose masks MXNet and rebind draw differently), at
# the smallest side their pooling accepts. Batch statistics over a few values
# per channel make some steps chaotic in float32 (MobileNet and DenseNet moved
# 1-4% between float32 and float64 in the same framework, a ReLU flipping on
# rounding); those run in float64, where MXNet's and rebind's steps agree to 1e-12.
TRAINING = {
    "resnet18_v1": (64, "float32"),
    "resnet18_v2": (64, "float32"),
    "mobilenetv2_1.0": (64, "float64"),
    "mobilenet0.25": (64, "float64"),
    "densenet121": (224, "float64"),
}
TRAINING_LABELS = (3.0, 917.0)
TRAINING_LR = 0.1

BATCH = 2
SEED = 20261129

# Gluon prefixes (the block's name less its counter: "mobilenet0_", "densenet0_",
# "inception30_", GluonCV's "ssd0_" on MobileNet) of the networks without
# identity shortcuts
_PLAIN_FAMILIES = ("densenet", "inception", "mobilenet", "ssd")


def param_value(name, shape):
    """The value of parameter ``name`` (a Gluon/exported name) of ``shape``, float32."""
    shape = tuple(int(s) for s in shape)
    rng = np.random.RandomState(zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF)
    if name.endswith("gamma"):
        value = rng.uniform(*_gamma_range(name), shape)
    elif name.endswith(("running_var", "moving_var")):
        value = rng.uniform(0.5, 1.5, shape)
    elif name.endswith(("beta", "bias", "running_mean", "moving_mean")):
        value = rng.uniform(-0.1, 0.1, shape)
    else:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
        bound = np.sqrt(6.0 / max(fan_in, 1))
        value = rng.uniform(-bound, bound, shape)
    return value.astype(np.float32)


def _gamma_range(name):
    """BatchNorm's gamma: near 1 in networks without shortcuts, in [0.5, 1] elsewhere."""
    family = re.sub(r"\d+$", "", name.split("_", 1)[0])
    return (0.8, 1.2) if family in _PLAIN_FAMILIES else (0.5, 1.0)


def symbol_json_in(text, dtype):
    """An exported symbol JSON with every variable's ``__dtype__`` set to ``dtype``.

    What ``net.cast(dtype)`` before ``export`` writes; float32 comes back unchanged.
    """
    if dtype == "float32":
        return text
    code = str(_MXNET_DTYPE_CODES[dtype])
    graph = json.loads(text)
    for node in graph["nodes"]:
        if "__dtype__" in node.get("attrs", {}):
            node["attrs"]["__dtype__"] = code
    return json.dumps(graph)


_MXNET_DTYPE_CODES = {"float32": 0, "float64": 1, "float16": 2}


def input_batch(side, batch=BATCH):
    """The images fed to every network: (batch, 3, side, side), uniform in [-1, 1]."""
    rng = np.random.RandomState(SEED)
    return rng.uniform(-1.0, 1.0, (batch, 3, side, side)).astype(np.float32)
