"""Record MXNet 1.9.1's optimizer updates on row_sparse gradients (lazy and standard).

Run with MXNet: ``/work/mxenv/bin/python tests/recording/record_sparse_updates.py``.
Writes tests/golden/sparse_updates/updates.json (and adam_row_sparse.states, MXNet's
pickle of row_sparse Adam states after one step): for each case, the optimizer and
its settings, the weight's storage type and first value, the row_sparse gradients
of three steps (row ids and rows), and after each step the weight, every state
(dense values and storage type), or the error MXNet raised.
"""

import json
from pathlib import Path

import mxnet as mx
import numpy as np

OUT = Path(__file__).parent.parent / "golden" / "sparse_updates" / "updates.json"
SHAPE = (6, 3)
# the rows each step's gradient holds (ascending, as a valid row_sparse array keeps them)
STEP_ROWS = [[1, 4], [0, 1, 5], []]

CASES = [
    ("sgd", {"learning_rate": 0.1}),
    ("sgd", {"learning_rate": 0.1, "wd": 0.1, "rescale_grad": 0.5}),
    ("sgd", {"learning_rate": 0.1, "wd": 0.1, "lazy_update": False}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.05}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.05, "clip_gradient": 0.3}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.05, "lazy_update": False}),
    ("adam", {"learning_rate": 0.05, "wd": 0.02}),
    ("adam", {"learning_rate": 0.05, "wd": 0.02, "clip_gradient": 0.3, "rescale_grad": 2.0}),
    ("adam", {"learning_rate": 0.05, "wd": 0.02, "lazy_update": False}),
    ("adagrad", {"learning_rate": 0.1}),
    ("adagrad", {"learning_rate": 0.1, "clip_gradient": 0.3, "eps": 1e-3}),
    ("adagrad", {"learning_rate": 0.1, "wd": 0.1}),
    ("ftrl", {"learning_rate": 0.1}),
    ("ftrl", {"learning_rate": 0.1, "lamda1": 0.001, "beta": 0.5, "wd": 0.1, "clip_gradient": 0.4}),
    ("groupadagrad", {"learning_rate": 0.1}),
    ("groupadagrad", {"learning_rate": 0.1, "clip_gradient": 0.3, "rescale_grad": 0.5}),
]


def make_optimizer(name, kwargs):
    if name == "groupadagrad":
        return mx.optimizer.contrib.GroupAdaGrad(**kwargs)
    return mx.optimizer.create(name, **kwargs)


def inputs(seed):
    """The first weight and the gradient rows of each step, as float32 NumPy arrays."""
    rs = np.random.RandomState(seed)
    weight = rs.uniform(-1, 1, SHAPE).astype("float32")
    grads = [rs.uniform(-1, 1, (len(rows), SHAPE[1])).astype("float32") for rows in STEP_ROWS]
    return weight, grads


def rsp(rows, values):
    ids = np.array(rows, dtype="int64")
    return mx.nd.sparse.row_sparse_array((values, ids), shape=SHAPE, dtype="float32")


def as_list(state):
    if state is None:
        return []
    if isinstance(state, (list, tuple)):
        return [s for s in state]
    return [state]


def error_line(exc):
    """The line of MXNet's message that says what failed."""
    lines = [line for line in str(exc).splitlines() if "Error" in line or "Check failed" in line]
    return (lines[0] if lines else str(exc).strip().splitlines()[0])[:300]


def record_case(name, kwargs, weight_stype, seed):
    weight0, grads = inputs(seed)
    case = {
        "optimizer": name,
        "kwargs": kwargs,
        "weight_stype": weight_stype,
        "weight": weight0.astype("f8").tolist(),
        "rows": STEP_ROWS,
        "grads": [g.astype("f8").tolist() for g in grads],
        "steps": [],
    }
    opt = make_optimizer(name, kwargs)
    weight = mx.nd.array(weight0).tostype(weight_stype)
    try:
        state = opt.create_state(0, weight)
    except Exception as exc:  # noqa: BLE001 (recorded)
        case["create_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[-1]}"
        return case
    case["state_stypes"] = [s.stype for s in as_list(state)]
    for rows, values in zip(STEP_ROWS, grads):  # noqa: B905 (Python 3.8)
        try:
            opt.update(0, weight, rsp(rows, values), state)
            weight.wait_to_read()
        except Exception as exc:  # noqa: BLE001 (recorded)
            case["steps"].append({"error": error_line(exc)})
            break
        case["steps"].append(
            {
                "weight": weight.asnumpy().astype("f8").tolist(),
                "weight_stype": weight.stype,
                "states": [s.asnumpy().astype("f8").tolist() for s in as_list(state)],
                "state_stypes": [s.stype for s in as_list(state)],
            }
        )
    return case


def record_states_file():
    """MXNet's pickled updater states after one lazy Adam step on a row_sparse weight."""
    updater = mx.optimizer.get_updater(mx.optimizer.create("adam", learning_rate=0.1))
    weight = mx.nd.ones(SHAPE).tostype("row_sparse")
    grad = rsp([1, 4], np.arange(6, dtype="float32").reshape(2, 3))
    updater(0, grad, weight)
    mx.nd.waitall()  # else the pickle may catch a state's storage shape before the update
    (OUT.parent / "adam_row_sparse.states").write_bytes(updater.get_states())


def main():
    record_states_file()
    cases = []
    for i, (name, kwargs) in enumerate(CASES):
        for weight_stype in ("row_sparse", "default"):
            cases.append(record_case(name, kwargs, weight_stype, seed=i))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"mxnet": mx.__version__, "cases": cases}, indent=1) + "\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
