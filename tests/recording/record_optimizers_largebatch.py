"""Record MXNet 1.9.1's LBSGD and Test optimizers over a few steps.

    /work/mxenv/bin/python tests/recording/record_optimizers_largebatch.py

writes tests/optimizer/data/largebatch.json: for each case, the weight after
every step, from the same start and gradients rebind's test uses.
"""

import json
import os
import sys

import mxnet as mx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "optimizer"))
from largebatch_cases import CASES, inputs  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "optimizer", "data", "largebatch.json")


def main():
    weight0, grads = inputs()
    recorded = {}
    for case, (name, kwargs) in CASES.items():
        opt = mx.optimizer.create(name, learning_rate=0.1, **kwargs)
        updater = mx.optimizer.get_updater(opt)
        weight = mx.nd.array(weight0)
        steps = []
        for grad in grads:
            updater(0, mx.nd.array(grad), weight)
            steps.append(weight.asnumpy().tolist())
        recorded[case] = steps
    with open(OUT, "w") as handle:
        json.dump(recorded, handle)
        handle.write("\n")


if __name__ == "__main__":
    main()
