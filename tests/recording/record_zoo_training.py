"""Record one SGD step of MXNet 1.9.1's Module on model-zoo networks, for rebind's fine-tuning test.

Run with MXNet 1.9.1 (Python 3.8), from the repository root, after
``record_model_zoo.py`` (it reads the exported symbols it keeps):

    mxenv/bin/python tests/recording/record_zoo_training.py [NAME ...]

For each network of ``zoo_params.TRAINING``: load the exported symbol, put a
``SoftmaxOutput`` on top, bind a Module for training on the seeded batch of two
images at the network's training side and dtype, set ``zoo_params.param_value`` for
every parameter and auxiliary state, ``init_optimizer`` SGD (lr 0.1, momentum
0, wd 0), ``forward_backward`` with the labels ``zoo_params.TRAINING_LABELS``,
``update``, and run an inference forward on the same batch. Kept in
``tests/golden/model_zoo/training.npz`` under ``NAME/KEY``:

- ``train_output``: the softmax of the training forward (BatchNorm on the
  batch's statistics);
- ``eval_output``: the inference forward after the update (updated weights and
  running statistics);
- ``arg_names``, ``arg_delta_norms``: every parameter's ``|w_after - w_before|``
  (2-norm, float64);
- ``aux_names``, ``aux_delta_norms``: the same for the auxiliary states;
- ``delta:PARAM``: the whole change of the first weight and of the last
  parameter when it is small (the first and the last layers' gradients);
- ``aux_after:AUX``: the first BatchNorm's running mean and variance after the step.
"""

import os
import sys

import mxnet as mx
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_params import (  # noqa: E402
    TRAINING,
    TRAINING_LABELS,
    TRAINING_LR,
    input_batch,
    param_value,
    symbol_json_in,
)

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "golden", "model_zoo")
LABEL = "softmax_label"


def build(name, side, dtype):
    """The training Module of ``name``, bound at ``side`` in ``dtype``, zoo_params' values set."""
    with open(os.path.join(OUT, name + "-symbol.json")) as f:
        sym = mx.sym.load_json(symbol_json_in(f.read(), dtype))
    net = mx.sym.SoftmaxOutput(sym, name="softmax")
    shape = (2, 3, side, side)
    arg_shapes, _, aux_shapes = net.infer_shape(data=shape, softmax_label=(2,))
    args = _values(net.list_arguments(), arg_shapes, dtype)
    auxs = _values(net.list_auxiliary_states(), aux_shapes, dtype)
    mod = mx.mod.Module(net, data_names=["data"], label_names=[LABEL], context=mx.cpu())
    mod.bind(
        data_shapes=[mx.io.DataDesc("data", shape, dtype)],
        label_shapes=[mx.io.DataDesc(LABEL, (2,), dtype)],
    )
    mod.set_params(args, auxs)
    return mod, args, auxs


def _values(names, shapes, dtype):
    """zoo_params' value of each parameter in ``names`` (not the data or the label)."""
    # by index: zip(..., strict=True) is newer than MXNet's Python 3.8
    return {
        n: mx.nd.array(param_value(n, shapes[i]), dtype=dtype)
        for i, n in enumerate(names)
        if n not in ("data", LABEL)
    }


def detailed(args):
    """The parameters whose whole change is kept: the first weight, the last one when small."""
    names = list(args)
    first = next(n for n in names if n.endswith("weight"))
    return [first] + ([names[-1]] if args[names[-1]].size <= 4096 else [])


def record(name, side, dtype):
    """The arrays of one network's SGD step, keyed as the module docstring says."""
    mod, args, auxs = build(name, side, dtype)
    mod.init_optimizer(
        optimizer="sgd",
        optimizer_params={"learning_rate": TRAINING_LR, "momentum": 0.0, "wd": 0.0},
    )
    batch = mx.io.DataBatch(
        [mx.nd.array(input_batch(side), dtype=dtype)],
        [mx.nd.array(TRAINING_LABELS, dtype=dtype)],
    )
    mod.forward_backward(batch)
    out = {"train_output": mod.get_outputs()[0].asnumpy()}
    mod.update()
    # BatchNorm's backward writes the running statistics on the CPU without the
    # engine ordering that write before later reads of them: wait for it
    mx.nd.waitall()
    after_args, after_auxs = mod.get_params()
    mod.forward(batch, is_train=False)
    out["eval_output"] = mod.get_outputs()[0].asnumpy()
    for kind, before, after in (("arg", args, after_args), ("aux", auxs, after_auxs)):
        names = list(before)
        deltas = [after[n].asnumpy().astype(np.float64) - before[n].asnumpy() for n in names]
        out[kind + "_names"] = np.array(names)
        out[kind + "_delta_norms"] = np.array([np.linalg.norm(d) for d in deltas])
    for pname in detailed(args):
        delta = after_args[pname].asnumpy().astype(np.float64) - args[pname].asnumpy()
        out["delta:" + pname] = delta.astype(dtype)
    for aux in list(auxs)[:2]:
        out["aux_after:" + aux] = after_auxs[aux].asnumpy()
    return out


def main():
    names = sys.argv[1:] or list(TRAINING)
    path = os.path.join(OUT, "training.npz")
    kept = dict(np.load(path)) if os.path.exists(path) else {}
    for name in names:
        for key, value in record(name, *TRAINING[name]).items():
            kept[name + "/" + key] = value
        norms = kept[name + "/arg_delta_norms"]
        print(name, "step norms: min", norms.min(), "max", norms.max(), flush=True)
        np.savez_compressed(path, **kept)


if __name__ == "__main__":
    main()
