# ruff: noqa: B905 - this runs on MXNet's Python 3.8, whose zip() has no strict=
"""Record sparse operator cases from MXNet 1.9.1 (run with /work/mxenv/bin/python).

Usage: ``record_sparse_ops.py`` from the repository root. Each imperative case
calls ``mx.nd.<op>`` on inputs of the given storage types (dense values drawn
here, with all-zero rows, an all-zero input and NaN among them) and stores the
output's storage type and dense values, whether MXNet printed its storage
fallback warning, or the error it raised. Each symbolic case binds a symbol
with ``simple_bind`` (``stype`` on its variables) and stores the output and
gradient storage types and values after one forward and backward.

Writes ``tests/golden/sparse_ops/imperative.json`` and ``symbolic.json``.
"""

import json
import os
import sys
import tempfile
import threading

import mxnet as mx
import numpy as np
from sparse_cases_imperative import imperative_cases
from sparse_cases_symbolic import symbolic_cases
from sparse_values import encode

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "tests", "golden", "sparse_ops")


def to_mx(values, stype):
    array = mx.nd.array(values, dtype=values.dtype)
    return array if stype == "default" else array.tostype(stype)


class StderrCapture:
    """What the C++ library writes to file descriptor 2 while active."""

    def __enter__(self):
        sys.stderr.flush()
        self._file = tempfile.TemporaryFile(mode="w+b")
        self._saved = os.dup(2)
        os.dup2(self._file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.seek(0)
        self.text = self._file.read().decode("utf-8", "replace")
        self._file.close()


def error_line(text):
    """The line of an MXNet error message that says what failed."""
    for line in text.splitlines():
        if "Error" in line or "failed" in line:
            return line.split("MXNetError: ")[-1][:300]
    return text.splitlines()[0][:300] if text else ""


def run_imperative(case):
    """``record_case`` in a new thread: MXNet logs each fallback warning once per thread."""
    result = {}
    worker = threading.Thread(target=lambda: result.update(record_case(case)))
    worker.start()
    worker.join()
    return result


def record_case(case):
    func = case["func"]
    target = mx.nd
    for part in func.split("."):
        target = getattr(target, part)
    inputs = [
        to_mx(np.array(v["values"], v["dtype"]).reshape(v["shape"]), s)
        for v, s in zip(case["inputs"], case["stypes"])
    ]
    record = dict(case)
    try:
        with StderrCapture() as capture:
            out = target(*inputs, **case["params"])
            outs = out if isinstance(out, (list, tuple)) else [out]
            dense = [o.asnumpy() for o in outs]
            mx.nd.waitall()
        record["out_stypes"] = [o.stype for o in outs]
        record["outputs"] = [encode(d) for d in dense]
        record["fallback"] = "Storage type fallback detected" in capture.text
    except Exception as error:  # noqa: BLE001 - the error is the recorded result
        record["error"] = type(error).__name__
        record["message"] = error_line(str(error))
    return record


def run_symbolic(case, rng):
    """``record_symbolic`` in a new thread (a fresh log-once store, as for imperative)."""
    result = {}
    worker = threading.Thread(target=lambda: result.update(record_symbolic(case, rng)))
    worker.start()
    worker.join()
    return result


def record_symbolic(case, rng):
    """simple_bind, set the inputs, forward(is_train=True), backward with random head grads."""
    case_id, symbol, stype_dict, inputs = case
    shapes = {k: (v[0] if isinstance(v, tuple) else v).shape for k, v in inputs.items()}
    record = {
        "id": case_id,
        "symbol": symbol.tojson(),
        "stype_dict": stype_dict,
        "shapes": {k: list(s) for k, s in shapes.items()},
    }
    record["inputs"] = {
        k: {
            "value": encode(v[0] if isinstance(v, tuple) else v),
            "stype": v[1] if isinstance(v, tuple) else "default",
        }
        for k, v in inputs.items()
    }
    try:
        grad_req = {
            k: "null"
            if k in ("data", "label") and k not in ("a", "b") and "dot" not in case_id
            else "write"
            for k in symbol.list_arguments()
        }
        record["grad_req"] = grad_req
        with StderrCapture() as capture:  # MXNet warns of fallbacks when it binds
            exe = symbol.simple_bind(mx.cpu(), grad_req=grad_req, stype_dict=stype_dict, **shapes)
        record["fallback"] = "Storage type fallback detected" in capture.text
        record["arg_stypes"] = {k: a.stype for k, a in exe.arg_dict.items()}
        record["grad_stypes"] = {k: a.stype for k, a in exe.grad_dict.items() if a is not None}
        for k, v in inputs.items():
            values, stype = v if isinstance(v, tuple) else (v, "default")
            to_mx(values, stype).copyto(exe.arg_dict[k])
        outs = exe.forward(is_train=True)
        heads = [rng.uniform(-1, 1, o.shape).astype("float32") for o in outs]
        exe.backward([mx.nd.array(h) for h in heads])
        mx.nd.waitall()
        record["head_grads"] = [encode(h) for h in heads]
        record["out_stypes"] = [o.stype for o in outs]
        record["outputs"] = [encode(o.asnumpy()) for o in outs]
        record["grads"] = {
            k: encode(g.asnumpy()) for k, g in exe.grad_dict.items() if grad_req[k] != "null"
        }
        record["grad_stypes_after"] = {
            k: g.stype for k, g in exe.grad_dict.items() if g is not None
        }
    except Exception as error:  # noqa: BLE001 - the error is the recorded result
        record["error"] = type(error).__name__
        record["message"] = error_line(str(error))
    return record


def main():
    rng = np.random.RandomState(3)
    os.makedirs(OUT, exist_ok=True)
    records = [run_imperative(c) for c in imperative_cases(rng)]
    with open(os.path.join(OUT, "imperative.json"), "w") as f:
        json.dump({"mxnet": mx.__version__, "cases": records}, f, indent=0)
    print(len(records), "imperative cases;", sum("error" in r for r in records), "errors")
    rng = np.random.RandomState(4)
    records = [run_symbolic(c, rng) for c in symbolic_cases(rng)]
    with open(os.path.join(OUT, "symbolic.json"), "w") as f:
        json.dump({"mxnet": mx.__version__, "cases": records}, f, indent=0)
    print(len(records), "symbolic cases;", sum("error" in r for r in records), "errors")


if __name__ == "__main__":
    main()
