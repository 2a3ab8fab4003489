# ruff: noqa: B905 - this runs on MXNet's Python 3.8, whose zip() has no strict=
"""Record GluonCV's and GluonNLP's networks from MXNet 1.9.1 for rebind's model tests.

Run with MXNet 1.9.1, GluonCV 0.10.5 and GluonNLP 0.10.0 (Python 3.8), from the
repository root:

    /work/mxenv/bin/python tests/recording/record_gluon_zoo.py [--params DIR] [NAME ...]

For each network of ``gluon_zoo_specs.NETWORKS``: build it with
``pretrained=False`` (and ``pretrained_base=False``: nothing downloads), run it
once to settle deferred shapes, set every learned parameter to
``zoo_params.param_value(name, shape)``, hybridize, run the seeded inputs,
``export`` it, and keep in ``tests/golden/gluon_zoo/`` the exported symbol
JSON and, in ``outputs.npz``, MXNet's outputs (``NAME/out<i>``, large ones
summarised by ``gluon_zoo_specs.output_summary``; shapes in
``NAME/outshape<i>``) and the
constant parameters the network computes itself (``NAME/const/<param>``:
anchors, offsets, position encodings; their corner the inputs read, and their
shapes in ``NAME/shape/<param>``). With ``--params DIR`` the exported
``.params`` and the inputs (``NAME-io.npz``) are also written to DIR. A
network whose two inputs give nearly the same outputs is refused (as in
``record_model_zoo.py``).
"""

import argparse
import os
import shutil
import sys
import tempfile

import mxnet as mx
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_model_zoo  # noqa: E402
from gluon_zoo_specs import (  # noqa: E402
    NETWORKS,
    SEED,
    VOCAB,
    constant_corner,
    inputs,
    output_summary,
)
from zoo_params import param_value  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "golden", "gluon_zoo")


def build(name):
    """Network ``name``, built without downloading anything, parameters not yet initialised."""
    kind, model, _, keywords = NETWORKS[name]
    if kind == "image":
        from gluoncv import model_zoo

        return model_zoo.get_model(model, pretrained=False, pretrained_base=False, **keywords)
    if kind == "bert":
        from gluonnlp.model import BERTEncoder, BERTModel

        encoder = BERTEncoder(
            num_layers=2, units=32, hidden_size=64, max_length=16, num_heads=4, dropout=0.0
        )
        return BERTModel(
            encoder, vocab_size=VOCAB, token_type_vocab_size=2, units=32, embed_size=32,
            use_pooler=True, use_decoder=False, use_classifier=True,
        )  # fmt: skip
    from gluonnlp.model.transformer import TransformerEncoder

    return TransformerEncoder(
        num_layers=2, units=32, hidden_size=64, max_length=16, num_heads=4, dropout=0.0
    )


def run(net, name, feeds):
    """The network's outputs for ``feeds``, as a list of NumPy arrays."""
    kind = NETWORKS[name][0]
    args = [mx.nd.array(value) for _, value in feeds]
    if kind == "encoder":
        args = [args[0], None, args[1]]
    out = net(*args)
    if isinstance(out, mx.nd.NDArray):
        out = [out]
    flat = []
    for item in out:
        flat.extend(item if isinstance(item, (list, tuple)) else [item])
    return [item.asnumpy() for item in flat if item is not None]


def set_parameters(net):
    """Set learned parameters to zoo_params' values; return the constants' values."""
    constants = {}
    for pname, param in net.collect_params().items():
        if isinstance(param, mx.gluon.Constant):
            constants[pname] = param.data().asnumpy()
        else:
            param.set_data(mx.nd.array(param_value(pname, param.shape)))
    return constants


def record(name, params_dir):
    """MXNet's outputs and constants of network ``name``; its JSON lands in OUT."""
    mx.random.seed(SEED)
    np.random.seed(SEED)
    net = build(name)
    net.initialize(mx.init.Zero())
    feeds = inputs(name)
    run(net, name, feeds)  # settles deferred shapes
    constants = set_parameters(net)
    net.hybridize(static_alloc=False)
    outputs = run(net, name, feeds)
    check_sensitive(name, outputs)
    tmp = tempfile.mkdtemp()
    try:
        prefix = os.path.join(tmp, name)
        net.export(prefix, epoch=0)
        shutil.copy(prefix + "-symbol.json", os.path.join(OUT, name + "-symbol.json"))
        if params_dir:
            os.makedirs(params_dir, exist_ok=True)
            for suffix in ("-symbol.json", "-0000.params"):
                shutil.copy(prefix + suffix, os.path.join(params_dir, name + suffix))
            io = {key: value for key, value in feeds}
            io.update({f"out{i}": value for i, value in enumerate(outputs)})
            np.savez(os.path.join(params_dir, name + "-io.npz"), **io)
    finally:
        shutil.rmtree(tmp)
    return outputs, constants


def check_sensitive(name, outputs):
    """Refuse a batch whose images give nearly the same outputs: the test would miss errors.

    Detectors are judged by their boxes (the last of class ids, scores, boxes),
    the rest by their first output (``record_model_zoo.check_sensitive``);
    R-CNNs run one image and are not judged.
    """
    out = outputs[2] if name.startswith(("ssd", "yolo")) else outputs[0]
    if out.shape[0] >= 2:
        record_model_zoo.check_sensitive(name, out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(NETWORKS))
    parser.add_argument("--params", default=None, help="also keep .params and inputs here")
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "outputs.npz")
    stored = dict(np.load(path)) if os.path.exists(path) else {}
    for name in args.names:
        outputs, constants = record(name, args.params)
        stored = {k: v for k, v in stored.items() if not k.startswith(name + "/")}
        for i, value in enumerate(outputs):
            stored[f"{name}/out{i}"] = output_summary(value)
            stored[f"{name}/outshape{i}"] = np.array(value.shape)
        for pname, value in constants.items():
            stored[f"{name}/const/{pname}"] = constant_corner(value)
            stored[f"{name}/shape/{pname}"] = np.array(value.shape)
        shapes = [o.shape for o in outputs]
        print(name, shapes, sorted(constants), flush=True)
        np.savez_compressed(path, **stored)


if __name__ == "__main__":
    main()
