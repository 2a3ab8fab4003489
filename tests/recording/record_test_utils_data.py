"""Record what MXNet 1.9.1's get_mnist and get_mnist_iterator give on small local files.

    /work/mxenv/bin/python tests/recording/record_test_utils_data.py

Writes tests/test_utils/data/mxnet_mnist.json: for the files of
``tests/test_utils/mnist_inputs.py`` (present, so nothing is downloaded), the
dtypes, shapes and sums of ``get_mnist()``'s arrays, and for each case of
``mnist_inputs.CASES`` the data shapes and labels of every batch of one epoch
of the train and val iterators.
"""

import json
import os
import sys
import tempfile

import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test_utils"))
import mnist_inputs  # noqa: E402  (shared with the test: the same inputs)


def _epoch(it):
    return [{"shape": list(b.data[0].shape), "label": b.label[0].asnumpy().tolist()} for b in it]


def main():
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        mnist_inputs.write(folder)
        os.chdir(folder)
        got = mx.test_utils.get_mnist()
        out["get_mnist"] = {
            key: {"dtype": str(v.dtype), "shape": list(v.shape), "sum": float(v.sum(dtype="f8"))}
            for key, v in got.items()
        }
        out["iterator"] = []
        for case in mnist_inputs.CASES:
            train, val = mx.test_utils.get_mnist_iterator(**case)
            out["iterator"].append({"case": case, "train": _epoch(train), "val": _epoch(val)})
        os.chdir(HERE)
    target = os.path.join(HERE, "..", "test_utils", "data", "mxnet_mnist.json")
    with open(target, "w") as handle:
        json.dump(out, handle, indent=1)
        handle.write("\n")


if __name__ == "__main__":
    main()
