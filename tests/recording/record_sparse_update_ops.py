# ruff: noqa: B905 - this runs on MXNet's Python 3.8, whose zip() has no strict=
"""Record MXNet 1.9.1's update operators called directly on row_sparse inputs.

Run with MXNet: ``/work/mxenv/bin/python tests/recording/record_sparse_update_ops.py``.
Each case calls one update operator (``mx.nd.sgd_update``, ``sgd_mom_update``,
``adam_update``, ``ftrl_update``, ``mx.nd.sparse.adagrad_update``,
``mx.nd.contrib.group_adagrad_update``, ``mp_sgd_update``, ``nag_mom_update``)
once, with the weight, gradient and states in the given storage types
(``row_sparse`` weights and states holding every row, ``empty``: a row_sparse
state holding no row, ``partial``: a row_sparse weight missing rows), the
gradient holding the given rows, and the result written to the weight
(``out=weight``), to a new array (no ``out``) or to another array. Stored:
the inputs, then MXNet's result (storage type, values, whether it is the
weight), the weight and every state afterwards (storage type, stored rows,
values), whether MXNet printed its storage fallback warning, or the error.

Also stores each operator function's argument names. Writes
``tests/golden/sparse_update_ops/cases.json``.
"""

import json
import os
import sys

import mxnet as mx
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record_sparse_ops import StderrCapture, error_line  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "tests", "golden", "sparse_update_ops", "cases.json")
SHAPE = (5, 3)
ROWS = [1, 3]

# op -> (python function path, state names, how to draw each state)
OPS = {
    "sgd_update": ("nd.sgd_update", []),
    "sgd_mom_update": ("nd.sgd_mom_update", ["signed"]),
    "adam_update": ("nd.adam_update", ["signed", "positive"]),
    "ftrl_update": ("nd.ftrl_update", ["signed", "positive"]),
    "_sparse_adagrad_update": ("nd.sparse.adagrad_update", ["positive"]),
    "_contrib_group_adagrad_update": ("nd.contrib.group_adagrad_update", ["column"]),
    "mp_sgd_update": ("nd.mp_sgd_update", ["master"]),
    "nag_mom_update": ("nd.nag_mom_update", ["signed"]),
}
BASE = {
    "sgd_update": {"lr": 0.1, "wd": 0.1},
    "sgd_mom_update": {"lr": 0.1, "momentum": 0.9, "wd": 0.05},
    "adam_update": {"lr": 0.05, "wd": 0.02},
    "ftrl_update": {"lr": 0.1, "wd": 0.1, "lamda1": 0.01},
    "_sparse_adagrad_update": {"lr": 0.1},
    "_contrib_group_adagrad_update": {"lr": 0.1},
    "mp_sgd_update": {"lr": 0.1, "wd": 0.1},
    "nag_mom_update": {"lr": 0.1, "momentum": 0.9, "wd": 0.1},
}
CLIP = {"clip_gradient": 0.3, "rescale_grad": 2.0}
LAZY_OPS = ("sgd_update", "sgd_mom_update", "adam_update")


def case(op, weight, states, grad="row_sparse", rows=ROWS, out="weight", **kwargs):
    params = dict(BASE[op])
    params.update(kwargs)
    return {
        "op": op,
        "params": params,
        "weight_stype": weight,
        "grad_stype": grad,
        "rows": list(rows),
        "state_stypes": list(states),
        "out": out,
    }


def state_combos(op):
    """(weight stype, state stypes) pairs worth a case for ``op``."""
    n = len(OPS[op][1])
    if n == 0:
        return [("row_sparse", []), ("default", [])]
    combos = [
        ("row_sparse", ["row_sparse"] * n),
        ("row_sparse", ["empty"] * n),
        ("row_sparse", ["default"] * n),
        ("default", ["default"] * n),
        ("default", ["row_sparse"] * n),
    ]
    if op == "mp_sgd_update":
        return [("row_sparse", ["default"]), ("default", ["default"])]
    return combos


def cases():
    found = []
    for op in OPS:
        for weight, states in state_combos(op):
            lazies = (True, False) if op in LAZY_OPS else (None,)
            for lazy in lazies:
                extra = {} if lazy is None else {"lazy_update": lazy}
                found.append(case(op, weight, states, **extra))
                found.append(case(op, weight, states, rows=[], **extra))
                found.append(case(op, weight, states, **extra, **CLIP))
        n = len(OPS[op][1])
        dense = ["default"] * n
        found.append(case(op, "default", dense, grad="default"))
        found.append(case(op, "row_sparse", ["row_sparse"] * n, grad="default"))
        found.append(case(op, "partial", ["row_sparse"] * n))
        found.append(case(op, "row_sparse", ["row_sparse"] * n, out="none"))
        found.append(case(op, "default", dense, out="none"))
        found.append(case(op, "row_sparse", ["row_sparse"] * n, rows=[], out="none"))
        found.append(case(op, "default", dense, out="other"))
        found.append(case(op, "row_sparse", ["row_sparse"] * n, rows=[0, 1, 2, 3, 4]))
    found.append(case("_sparse_adagrad_update", "row_sparse", ["row_sparse"], wd=0.1))
    found.append(case("_sparse_adagrad_update", "default", ["default"], wd=0.1))
    found.append(case("sgd_mom_update", "row_sparse", ["row_sparse"], momentum=0.0))
    found.append(case("adam_update", "row_sparse", ["row_sparse", "default"]))
    found.append(case("ftrl_update", "row_sparse", ["row_sparse", "default"]))
    found.append(case("_contrib_group_adagrad_update", "row_sparse", ["partial"]))
    return found


def state_shape(op):
    return (SHAPE[0], 1) if op == "_contrib_group_adagrad_update" else SHAPE


def draw(kind, shape, rs):
    if kind == "positive":
        return rs.uniform(0.1, 1, shape)
    return rs.uniform(-1, 1, shape)


def inputs_of(spec, seed):
    """The dense starting values of weight, gradient rows and states (float64 lists)."""
    rs = np.random.RandomState(seed)
    op = spec["op"]
    weight = rs.uniform(-1, 1, SHAPE)
    grad = rs.uniform(-1, 1, (len(spec["rows"]), SHAPE[1]))
    states = []
    for kind, stype in zip(OPS[op][1], spec["state_stypes"]):
        if kind == "master":
            states.append(weight.copy())
        elif stype == "empty":
            states.append(np.zeros(state_shape(op)))
        else:
            states.append(draw(kind, state_shape(op), rs))
    return weight, grad, states


def dtype_of(spec):
    return "float16" if spec["op"] == "mp_sgd_update" else "float32"


def to_mx(values, stype, dtype):
    """An MXNet array: ``empty`` row_sparse holding no row, ``partial`` holding rows 0, 1, 3."""
    if stype == "empty":
        return mx.nd.sparse.zeros("row_sparse", values.shape, dtype=dtype)
    if stype == "partial":
        rows = np.array([0, 1, 3], dtype="int64")
        data = values[rows].astype(dtype)
        return mx.nd.sparse.row_sparse_array((data, rows), shape=values.shape, dtype=dtype)
    if stype == "row_sparse":  # every row stored, zero or not (as an initializer leaves it)
        rows = np.arange(values.shape[0], dtype="int64")
        return mx.nd.sparse.row_sparse_array((values.astype(dtype), rows), shape=values.shape)
    return mx.nd.array(values, dtype=dtype)


def grad_of(spec, rows_values):
    dtype = dtype_of(spec)
    if spec["grad_stype"] == "default":
        dense = np.zeros(SHAPE)
        dense[spec["rows"]] = rows_values
        return mx.nd.array(dense, dtype=dtype)
    ids = np.array(spec["rows"], dtype="int64")
    data = rows_values.astype(dtype).reshape((len(ids),) + SHAPE[1:])
    return mx.nd.sparse.row_sparse_array((data, ids), shape=SHAPE, dtype=dtype)


def function(path):
    target = mx
    for part in path.split("."):
        target = getattr(target, part)
    return target


def described(array):
    rows = array.indices.asnumpy().tolist() if array.stype == "row_sparse" else None
    return {
        "stype": array.stype,
        "rows": rows,
        "values": array.asnumpy().astype("f8").tolist(),
    }


def run(spec, seed):
    weight0, grad0, states0 = inputs_of(spec, seed)
    record = dict(spec)
    record["weight"] = weight0.tolist()
    record["grad"] = grad0.tolist()
    record["states"] = [s.tolist() for s in states0]
    dtype = dtype_of(spec)
    weight = to_mx(weight0, spec["weight_stype"], dtype)
    grad = grad_of(spec, grad0)
    master = OPS[spec["op"]][1] == ["master"]
    states = [
        to_mx(v, s, "float32" if master else dtype) for v, s in zip(states0, spec["state_stypes"])
    ]
    kwargs = dict(spec["params"])
    if spec["out"] == "weight":
        kwargs["out"] = weight
    elif spec["out"] == "other":
        kwargs["out"] = mx.nd.zeros(SHAPE, dtype=dtype)
    with StderrCapture() as captured:
        try:
            result = function(OPS[spec["op"]][0])(weight, grad, *states, **kwargs)
            mx.nd.waitall()
            record["result"] = described(result)
            record["result_is_weight"] = result is weight
            record["after_weight"] = described(weight)
            record["after_states"] = [described(s) for s in states]
        except Exception as exc:  # noqa: BLE001 (recorded)
            record["error"] = error_line(str(exc))
    record["fallback_warning"] = "Storage type fallback detected" in captured.text
    return record


def signatures():
    """Each operator's Python function: its argument names, in MXNet's order."""
    import inspect

    return {
        op: [n for n in inspect.signature(function(path)).parameters if n not in DROPPED]
        for op, (path, _) in OPS.items()
    }


DROPPED = ("out", "name", "kwargs")


def main():
    records = [run(spec, seed) for seed, spec in enumerate(cases())]
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as handle:
        record = {"mxnet": mx.__version__, "shape": SHAPE, "signatures": signatures()}
        record["cases"] = records
        json.dump(record, handle, indent=1)
        handle.write("\n")
    errors = sum("error" in r for r in records)
    print(f"wrote {len(records)} cases ({errors} errors) to {OUT}")


if __name__ == "__main__":
    main()
