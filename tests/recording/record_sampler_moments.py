"""Record the moments of MXNet 1.9.1's samplers over a grid of parameters.

Run with the side virtualenv that has the real MXNet:
    /work/mxenv/bin/python tests/recording/record_sampler_moments.py
It writes tests/golden/samplers/moments.json: for every case of
``sampler_moment_cases.CASES`` the summary of each output of a large draw (and
the shapes of a 7-draw call), or MXNet's error message where it refuses.
"""

import json
import os
import sys

import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from sampler_moment_cases import CASES, draw, summary  # noqa: E402

OUT = os.path.join(HERE, "..", "golden", "samplers", "moments.json")
DRAWS = 200_000


def _message(error):
    """The informative line of MXNet's error (its C++ check), not the traceback."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    checks = [line for line in lines if "Check failed" in line or "Error" in line]
    return (checks or lines)[-1][:300]


def record(spec):
    """One case's record: summaries of a large draw and the shapes of a small one."""
    if spec["kwargs"].get("crashes_mxnet"):
        return {"error": "MXNet 1.9.1 dies of SIGFPE (not run)"}
    try:
        outs = draw(mx, spec, DRAWS)
        small = draw(mx, spec, 7)
    except Exception as error:  # MXNet's refusal is what is recorded
        return {"error": _message(error)}
    return {
        "outputs": [summary(o) for o in outs],
        "shapes7": [list(o.shape) for o in small],
    }


def main():
    mx.random.seed(1234)
    recorded = {"mxnet": mx.__version__, "draws": DRAWS, "cases": {}}
    for case_id, spec in CASES.items():
        recorded["cases"][case_id] = {"spec": spec, **record(spec)}
        print(case_id, recorded["cases"][case_id].get("error", "ok"))
    with open(OUT, "w") as handle:
        json.dump(recorded, handle, sort_keys=True, separators=(",", ":"))
        handle.write("\n")


if __name__ == "__main__":
    main()
