"""Record facts from real MXNet 1.9.1's test_utils into tests/test_utils/data/.

Run with /work/mxenv/bin/python (not collected by pytest).
"""

import json
import os

import numpy as np
from mxnet import test_utils as tu

OUT = os.path.join(os.path.dirname(__file__), "..", "test_utils", "data", "mxnet_test_utils.json")


def message(a, b, **kwargs):
    try:
        tu.assert_almost_equal(a, b, **kwargs)
    except AssertionError as err:
        return str(err)
    return None


def main():
    facts = {
        "rtols": {np.dtype(k).name: v for k, v in tu.default_rtols().items()},
        "atols": {np.dtype(k).name: v for k, v in tu.default_atols().items()},
        "numeric_eps": {np.dtype(k).name: v for k, v in tu.default_numeric_eps().items()},
        "get_tols_f16_f32": list(
            tu.get_tols(np.zeros(1, np.float16), np.zeros(1, np.float32), None, None)
        ),
        "get_atol_default": tu.get_atol(),
        "get_rtol_default": tu.get_rtol(),
        "message_1d": message(
            np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.5, 3.0]), names=("p", "q")
        ),
        "message_2d_f32": message(
            np.zeros((2, 3), np.float32), np.array([[0, 0, 0.5], [0, 2, 0]], np.float32)
        ),
        "almost_equal_default_f32": bool(tu.almost_equal(np.float32([1.0]), np.float32([1.00001]))),
        "collapse_sum_like": tu.collapse_sum_like(
            np.arange(24.0).reshape(2, 3, 4), (3, 1)
        ).tolist(),
        "np_reduce": tu.np_reduce(np.arange(24.0).reshape(2, 3, 4), (0, 2), True, np.sum).tolist(),
    }
    ns = {}
    exec("from mxnet.test_utils import *", ns)  # noqa: S102 - the point is the star-import
    facts["star_names"] = sorted(k for k in ns if not k.startswith("_"))
    with open(OUT, "w") as f:
        json.dump(facts, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
