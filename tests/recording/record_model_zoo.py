"""Record MXNet 1.9.1's Gluon model-zoo networks for rebind's model tests and benchmarks.

Run with MXNet 1.9.1 (Python 3.8), from the repository root:

    mxenv/bin/python tests/recording/record_model_zoo.py [--params DIR] [NAME ...]

For each network of ``zoo_params.NETWORKS``: build it with ``pretrained=False``,
set every parameter to ``zoo_params.param_value(name, shape)``, hybridize, run
the seeded input batch, ``export`` it, and keep the exported symbol JSON in
``tests/golden/model_zoo/<name>-symbol.json`` and the outputs in
``tests/golden/model_zoo/outputs.npz`` (key: the network's name); a network
whose two images give nearly the same outputs (the input's signal lost in the
parameters' scales, so the test could not see an error before the last layers)
is refused. With ``--params DIR`` the exported ``.params`` files are also
written to DIR (they are hundreds of megabytes in all, so they stay out of the
repository; the benchmarks read them from there or rebuild the same values).
The SGD steps are recorded by ``record_zoo_training.py`` from the JSON kept here.
"""

import argparse
import os
import shutil
import sys
import tempfile

import mxnet as mx
import numpy as np
from mxnet.gluon.model_zoo import vision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_params import NETWORKS, input_batch, param_value  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "golden", "model_zoo")


def record(name, params_dir):
    ctor, side = NETWORKS[name]
    net = vision.get_model(ctor, pretrained=False)
    net.initialize(mx.init.Zero())
    x = mx.nd.array(input_batch(side))
    net(x)  # settles deferred shapes
    for pname, param in net.collect_params().items():
        param.set_data(mx.nd.array(param_value(pname, param.shape)))
    net.hybridize(static_alloc=False)
    out = net(x).asnumpy()
    check_sensitive(name, out)
    tmp = tempfile.mkdtemp()
    try:
        prefix = os.path.join(tmp, name)
        net.export(prefix, epoch=0)
        shutil.copy(prefix + "-symbol.json", os.path.join(OUT, name + "-symbol.json"))
        if params_dir:
            os.makedirs(params_dir, exist_ok=True)
            shutil.copy(prefix + "-symbol.json", os.path.join(params_dir, name + "-symbol.json"))
            shutil.copy(prefix + "-0000.params", os.path.join(params_dir, name + "-0000.params"))
    finally:
        shutil.rmtree(tmp)
    return out


def check_sensitive(name, out):
    """Refuse outputs that hardly depend on the input: their test would miss early errors."""
    if not np.isfinite(out).all():
        raise SystemExit(f"{name}: the outputs hold NaN or infinity; change zoo_params' scales")
    spread, std = float(np.abs(out[0] - out[1]).max()), float(out.std())
    sensitivity = spread / std if std > 0 else 0.0  # a constant output depends on nothing
    print(name, "output spread between the two images / output std:", round(sensitivity, 4))
    if sensitivity < 0.01:
        raise SystemExit(
            f"{name}: the two images' outputs differ by {sensitivity:.2g} of the "
            "outputs' std; change zoo_params' scales so the input reaches the output"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(NETWORKS))
    parser.add_argument("--params", default=None, help="also keep the exported .params here")
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "outputs.npz")
    outputs = dict(np.load(path)) if os.path.exists(path) else {}
    for name in args.names:
        outputs[name] = record(name, args.params)
        print(name, outputs[name].shape, float(np.abs(outputs[name]).max()), flush=True)
        np.savez(path, **outputs)


if __name__ == "__main__":
    main()
