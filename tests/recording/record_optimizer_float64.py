"""Record MXNet 1.9.1's update operators and optimizers on float64 weights.

    /work/mxenv/bin/python tests/recording/record_optimizer_float64.py

writes tests/golden/optimizers/float64_ops.npz, float64_optimizers.npz and
lamb_aggregated.npz (LAMB over several weights of float16/32/64 per call):
``<case>/<step>.<array>`` after each of the STEPS calls of every case of
tests/optimizer/float64_cases.py, or ``<case>/error`` where MXNet refuses
the case (several of its optimizers make float32 states for a float64 weight).
"""

import os
import sys

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "golden", "optimizers")
sys.path.insert(0, os.path.join(HERE, "..", "optimizer"))
from float64_cases import (  # noqa: E402
    LAMB_CASES,
    OP_CASES,
    OPTIMIZER_CASES,
    run_lamb,
    run_op,
    run_optimizer,
)


def _record(cases, run, filename):
    """Every case's arrays; a case MXNet refuses is stored as ``<case>/error`` (its message)."""
    arrays = {}
    for name in cases:
        try:
            recorded = run(mx, name)
        except mx.base.MXNetError as exc:
            arrays[f"{name}/error"] = np.array(str(exc).strip().splitlines()[-1])
            continue
        for key, value in recorded.items():
            arrays[f"{name}/{key}"] = value
    np.savez_compressed(os.path.join(OUT, filename), **arrays)


if __name__ == "__main__":
    _record(OP_CASES, run_op, "float64_ops.npz")
    _record(OPTIMIZER_CASES, run_optimizer, "float64_optimizers.npz")
    _record(LAMB_CASES, run_lamb, "lamb_aggregated.npz")
