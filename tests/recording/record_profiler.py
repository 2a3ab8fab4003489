"""Record MXNet 1.9.1's profiler facts for tests/profiler (run with real MXNet, not pytest).

    MXNET_EXEC_BULK_EXEC_TRAIN=0 MXNET_EXEC_BULK_EXEC_INFERENCE=0 MXNET_SUBGRAPH_BACKEND=NONE \
        /work/mxenv/bin/python tests/recording/record_profiler.py

Bulk execution is switched off so that MXNet times each operator on its own
(with it on, MXNet times a whole segment under a name like
``[FullyConnected,Activation,...]``). Writes tests/profiler/mxnet_profiler.json:
the operator counts of an MLP's passes, the names in the trace's operator
category in order, a counter's aggregate row, and the table's header lines.
"""

import json
import os
import sys
import tempfile
from pathlib import Path

import mxnet as mx
from mxnet import profiler

PASSES = 3
OUT = Path(__file__).resolve().parents[1] / "profiler" / "mxnet_profiler.json"


def mlp_executor():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=4, name="fc2")
    out = mx.sym.SoftmaxOutput(fc2, name="softmax")
    executor = out.simple_bind(mx.cpu(), data=(8, 10), softmax_label=(8,))
    for array in executor.arg_dict.values():
        array[:] = 0.1
    return executor


# NDArray arithmetic: the expression, evaluated with x (2x2 twos) and y (2x2 ones)
ARITHMETIC = [
    *(f"x{op}y" for op in ("+", "-", "*", "/", "%", "**", "==", "!=", ">", ">=", "<", "<=")),
    *(f"x{op}2" for op in ("+", "-", "*", "/", "%", "**", "==", "!=", ">", ">=", "<", "<=")),
    *(f"2{op}x" for op in ("+", "-", "*", "/", "%", "**")),
    *(f"x{op}=y" for op in ("+", "-", "*", "/", "%")),
    *(f"x{op}=2" for op in ("+", "-", "*", "/", "%")),
]


def arithmetic_operators():
    """Per expression, the operator MXNet's profiler records (MXNet's DeleteVariable left out)."""
    names = {}
    for expression in ARITHMETIC:
        x = mx.nd.ones((2, 2)) * 2
        y = mx.nd.ones((2, 2))
        mx.nd.waitall()
        profiler.dumps(reset=True)
        profiler.set_state("run")
        exec(expression, {"x": x, "y": y})  # noqa: S102 (the fixed expressions above)
        mx.nd.waitall()
        profiler.set_state("stop")
        stats = json.loads(profiler.dumps(format="json", reset=True))["Time"]["operator"]
        names[expression] = [name for name in stats if name != "DeleteVariable"]
    return names


def main():
    for name in ("MXNET_EXEC_BULK_EXEC_TRAIN", "MXNET_EXEC_BULK_EXEC_INFERENCE"):
        if os.environ.get(name) != "0":
            sys.exit(f"set {name}=0 (see the docstring)")
    executor = mlp_executor()
    trace = os.path.join(tempfile.mkdtemp(), "profile.json")
    profiler.set_config(profile_all=True, filename=trace, aggregate_stats=True)
    profiler.set_state("run")
    for _ in range(PASSES):
        executor.forward(is_train=True)
        executor.backward()
    mx.nd.waitall()
    domain = profiler.Domain("PyDom")
    counter = profiler.Counter(domain, "cnt", 5)
    counter += 2
    counter -= 1
    profiler.set_state("stop")
    stats = json.loads(profiler.dumps(format="json"))
    table = profiler.dumps().splitlines()
    profiler.dump()
    events = json.load(open(trace))["traceEvents"]
    # MXNet writes each operator twice (a B/E pair and an async b/e pair): take B
    order = [e["name"] for e in events if e.get("cat") == "operator" and e["ph"] == "B"]
    profiler.set_config(
        profile_imperative=True, aggregate_stats=True, continuous_dump=False, filename=trace
    )
    arithmetic = arithmetic_operators()
    facts = {
        "arithmetic": arithmetic,
        "passes": PASSES,
        "operator_counts": {k: v["Count"] for k, v in stats["Time"]["operator"].items()},
        "operator_order": order,
        "counter_row": stats["Time"]["PyDom"]["cnt"],
        "counter_values": [5, 7, 6],
        "table_head": table[:3],
        "section_head": table[table.index("operator") : table.index("operator") + 4],
        "json_keys": list(stats),
        "unit": stats["Unit"],
    }
    OUT.write_text(json.dumps(facts, indent=1) + "\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
