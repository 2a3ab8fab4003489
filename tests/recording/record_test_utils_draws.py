"""Record what MXNet 1.9.1's test_utils random helpers return after np.random.seed(n).

Run with the side virtualenv that has the real MXNet:
    /work/mxenv/bin/python tests/recording/record_test_utils_draws.py
It writes tests/test_utils/data/draws.json; rebind's helpers must draw the same.
"""

import json
import os
import sys

import mxnet as mx
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test_utils"))
from draw_cases import calls  # noqa: E402

tu = mx.test_utils
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "test_utils", "data", "draws.json")


def main():
    recorded = {}
    for name, call in calls(tu, np).items():
        for seed in (0, 7):
            np.random.seed(seed)
            recorded[f"{name}/{seed}"] = call()
    with open(OUT, "w") as handle:
        json.dump(recorded, handle, indent=None, separators=(",", ":"))
        handle.write("\n")


if __name__ == "__main__":
    main()
