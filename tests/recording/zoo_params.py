"""Deterministic parameters for the model-zoo networks, shared by the recorder and the tests.

A network's parameters are a pure function of each parameter's name and shape,
so the golden files hold only the exported symbol JSON and MXNet's outputs
(a few kilobytes), not hundreds of megabytes of weights: the recorder (run
with MXNet 1.9.1 under Python 3.8) sets these values into the Gluon network
before ``export``; the test builds the same values for rebind. Plain NumPy,
nothing newer than Python 3.8.

The scales keep activations finite through fifty layers: weights uniform with
variance 1/fan_in, BatchNorm's gamma in [0.5, 1], its running variance in
[0.5, 1.5], small biases, betas and means.
"""

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

BATCH = 2
SEED = 20261129


def param_value(name, shape):
    """The value of parameter ``name`` (a Gluon/exported name) of ``shape``, float32."""
    shape = tuple(int(s) for s in shape)
    rng = np.random.RandomState(zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF)
    if name.endswith("gamma"):
        value = rng.uniform(0.5, 1.0, shape)
    elif name.endswith("running_var"):
        value = rng.uniform(0.5, 1.5, shape)
    elif name.endswith(("beta", "bias", "running_mean")):
        value = rng.uniform(-0.1, 0.1, shape)
    else:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
        bound = np.sqrt(3.0 / max(fan_in, 1))
        value = rng.uniform(-bound, bound, shape)
    return value.astype(np.float32)


def input_batch(side, batch=BATCH):
    """The images fed to every network: (batch, 3, side, side), uniform in [-1, 1]."""
    rng = np.random.RandomState(SEED)
    return rng.uniform(-1.0, 1.0, (batch, 3, side, side)).astype(np.float32)
