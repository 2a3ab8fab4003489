"""One SGD step of exported model-zoo networks in rebind's Module moves them as MXNet 1.9.1's does.

The exported symbol gets a ``SoftmaxOutput`` on top; a Module bound for
training runs ``forward_backward`` on the seeded batch with fixed labels and
``update`` with SGD (lr 0.1, no momentum, no weight decay), then an inference
forward. Compared with MXNet's recording (``record_zoo_training.py``): the
training outputs, the change of every parameter and running statistic (its
norm), the whole change of the first and last layers, and the outputs after
the step.
"""

import numpy as np
import pytest

import rebind as mx
from tests.recording.zoo_params import TRAINING_LABELS, TRAINING_LR

from .zoo import LABEL, TRAINING, images, load_symbol, parameters, recorded_step, worst_error

# Tolerance relative to the largest recorded value of each compared array.
# float32 (ResNet): measured worst 7e-6 (the first convolution's change, the
# gradient through every layer). float64: the gradients agree to 1e-12, and so do
# the running statistics now that rebind takes BatchNorm's momentum as MXNet's
# C float (1 - 0.9f = 0.10000002; before, they differed by 2.4e-7).
RTOL = {"float32": 1e-4, "float64": 1e-9}
RTOL_RUNNING_STATS = {"float32": 1e-4, "float64": 1e-9}
SLOW = {"densenet121"}  # float64 at 224 x 224: about 10 s of CPU


def _step(name, ctx):
    """rebind's SGD step on ``name``: (before, after arg params, after aux, outputs)."""
    side, dtype = TRAINING[name]
    x = images(side)
    symbol = mx.sym.SoftmaxOutput(load_symbol(name, dtype), name="softmax")
    args, auxs = parameters(symbol, x.shape, dtype)
    before = {k: v.asnumpy().astype(np.float64) for k, v in {**args, **auxs}.items()}
    module = mx.mod.Module(symbol, data_names=["data"], label_names=[LABEL], context=ctx)
    module.bind(
        data_shapes=[mx.io.DataDesc("data", x.shape, dtype)],
        label_shapes=[mx.io.DataDesc(LABEL, (2,), dtype)],
    )
    module.set_params(args, auxs)
    module.init_optimizer(
        optimizer="sgd",
        optimizer_params={"learning_rate": TRAINING_LR, "momentum": 0.0, "wd": 0.0},
    )
    labels = np.array(TRAINING_LABELS)
    batch = mx.io.DataBatch([mx.nd.array(x, dtype=dtype)], [mx.nd.array(labels, dtype=dtype)])
    module.forward_backward(batch)
    outputs = {"train_output": module.get_outputs()[0].asnumpy()}
    module.update()
    after_args, after_auxs = module.get_params()
    module.forward(batch, is_train=False)
    outputs["eval_output"] = module.get_outputs()[0].asnumpy()
    return before, after_args, after_auxs, outputs


def _close(got, expected, rtol, what):
    error, scale = worst_error(got, expected), float(np.abs(expected).max())
    assert error <= rtol * scale, f"{what}: max error {error:.3g}, {rtol:g} of {scale:.3g} allowed"


def _delta_norms(names, before, after):
    return [np.linalg.norm(after[n].asnumpy().astype(np.float64) - before[n]) for n in names]


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in TRAINING]
)
def test_one_sgd_step_moves_the_network_as_mxnet(name, ctx):
    before, after_args, after_auxs, outputs = _step(name, ctx)
    expected = recorded_step(name)
    dtype = TRAINING[name][1]
    rtol, rtol_stats = RTOL[dtype], RTOL_RUNNING_STATS[dtype]
    assert outputs["train_output"].dtype == np.dtype(dtype)
    _close(outputs["train_output"], expected["train_output"], rtol, "training outputs")
    assert set(after_args) == set(expected["arg_names"])
    assert set(after_auxs) == set(expected["aux_names"])
    arg_norms = _delta_norms(expected["arg_names"], before, after_args)
    _close(arg_norms, expected["arg_delta_norms"], rtol, "parameter steps")
    aux_norms = _delta_norms(expected["aux_names"], before, after_auxs)
    _close(aux_norms, expected["aux_delta_norms"], rtol_stats, "running-statistics steps")
    for key, value in expected.items():
        kind, _, param = key.partition(":")
        if kind == "delta":
            step = after_args[param].asnumpy().astype(np.float64) - before[param]
            _close(step, value, rtol, f"step of {param}")
        elif kind == "aux_after":
            _close(after_auxs[param].asnumpy(), value, rtol_stats, f"{param} after the step")
    _close(outputs["eval_output"], expected["eval_output"], rtol_stats, "outputs after the step")
