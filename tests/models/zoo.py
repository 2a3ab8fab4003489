"""The recorded model-zoo networks and their parameters, ready for rebind's Module.

The golden files (``tests/golden/model_zoo``) are what MXNet 1.9.1 wrote: each
network's exported symbol JSON, its outputs for the seeded batch
(``outputs.npz``) and one SGD step (``training.npz``); the parameters are
rebuilt from ``tests/recording/zoo_params.py``, the values the recorders set.
"""

import numpy as np

import rebind as mx
from tests.conftest import GOLDEN
from tests.recording import zoo_params

ZOO = GOLDEN / "model_zoo"
NETWORKS = zoo_params.NETWORKS
TRAINING = zoo_params.TRAINING
LABEL = "softmax_label"


def load_symbol(name, dtype="float32"):
    """The symbol MXNet's ``HybridBlock.export`` wrote for network ``name`` (cast to ``dtype``)."""
    if dtype == "float32":
        return mx.sym.load(str(ZOO / f"{name}-symbol.json"))
    text = (ZOO / f"{name}-symbol.json").read_text()
    return mx.sym.load_json(zoo_params.symbol_json_in(text, dtype))


def parameters(symbol, shape, dtype="float32"):
    """``(arg_params, aux_params)`` of ``symbol`` for ``data`` of ``shape``: zoo_params' values."""
    arg_shapes, _, aux_shapes = symbol.infer_shape(data=shape)
    args = {
        name: mx.nd.array(zoo_params.param_value(name, pshape), dtype=dtype)
        for name, pshape in zip(symbol.list_arguments(), arg_shapes, strict=True)
        if name not in ("data", LABEL)
    }
    auxs = {
        name: mx.nd.array(zoo_params.param_value(name, pshape), dtype=dtype)
        for name, pshape in zip(symbol.list_auxiliary_states(), aux_shapes, strict=True)
    }
    return args, auxs


def images(side):
    """The seeded batch every recording fed its network."""
    return zoo_params.input_batch(side)


def recorded_outputs(name):
    """MXNet's outputs of network ``name`` for ``images``."""
    with np.load(ZOO / "outputs.npz") as outputs:
        return outputs[name]


def recorded_step(name):
    """MXNet's SGD step of network ``name``: ``training.npz``'s ``name/KEY`` arrays by KEY."""
    prefix = f"{name}/"
    with np.load(ZOO / "training.npz") as steps:
        return {key[len(prefix) :]: steps[key] for key in steps.files if key.startswith(prefix)}


def worst_error(actual, expected):
    """``max |actual - expected|`` over the arrays, in float64."""
    return float(np.abs(np.asarray(actual, np.float64) - expected).max())


def scale(expected):
    """The magnitude tolerances are relative to: ``max(1, max |expected|)``."""
    return max(1.0, float(np.abs(expected).max()))
