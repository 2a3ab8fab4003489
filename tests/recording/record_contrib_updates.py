"""Record MXNet 1.9.1's AdamW/LAMB wrappers of mx.nd.contrib (tests/ndarray/test_contrib.py).

Run with MXNet: ``/work/mxenv/bin/python tests/recording/record_contrib_updates.py``.
Writes tests/golden/contrib/updates.json: for each wrapper, the updated
weights and the mean/var (and float32 weights) it updated in place.
"""

import json
from pathlib import Path

import mxnet as mx
import numpy as np

OUT = Path(__file__).parent.parent / "golden" / "contrib" / "updates.json"
SHAPES = [(2, 3), (4,)]


def tensors(dtype, seed):
    """weights, grads, means, vars for SHAPES (vars positive), and float32 weight copies."""
    rs = np.random.RandomState(seed)
    sets = [[rs.uniform(-1, 1, s) for s in SHAPES] for _ in range(3)]
    sets.append([rs.uniform(0.1, 1, s) for s in SHAPES])
    # mean and var are float32 states, the weights and grads are in ``dtype``
    types = [dtype, dtype, "float32", "float32"]
    arrays = [[mx.nd.array(a, dtype=t) for a in group] for group, t in zip(sets, types)]  # noqa: B905 (Python 3.8)
    arrays.append([mx.nd.array(a, dtype="float32") for a in sets[0]])
    return arrays


def run(name):
    """Call the wrapper ``name`` once; the inputs as lists and its results as lists."""
    mp = name.startswith(("mp_", "multi_mp_"))
    w, g, m, v, w32 = tensors("float16" if mp else "float32", 0)
    extra = [w32] if mp else []
    fn = getattr(mx.nd.contrib, name)
    # the multi-tensor operators need ``out`` in MXNet (the weights, as its optimizers pass)
    if name.endswith("lamb_update"):
        fn(w, g, m, v, *extra, step_count=[2, 3], lrs=[0.1, 0.05], wds=[0.01, 0.0], out=w)
    elif name.startswith("multi"):
        fn(w, g, m, v, *extra, 0.5, lrs=[0.1, 0.05], wds=[0.01, 0.0], etas=[1.0, 0.5], out=w)
    else:
        w, m, v, w32 = w[:1], m[:1], v[:1], w32[:1]
        w[0] = fn(w[0], g[0], m[0], v[0], *[x[0] for x in extra], 0.5, lr=0.1, eta=0.9, wd=0.01)
    lists = {"weight": w, "mean": m, "var": v}
    if mp:
        lists["weight32"] = w32
    return {k: [a.asnumpy().astype("f8").tolist() for a in arrays] for k, arrays in lists.items()}


NAMES = [
    "adamw_update",
    "mp_adamw_update",
    "multi_adamw_update",
    "multi_mp_adamw_update",
    "multi_lamb_update",
    "multi_mp_lamb_update",
]

if __name__ == "__main__":
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({name: run(name) for name in NAMES}, indent=1))
