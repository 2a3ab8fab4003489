"""Record MXNet 1.9.1's ``Symbol.debug_str()`` for a few graphs (run with /work/mxenv/bin/python).

Each case is a Python expression over ``mx``; the test evaluates the same
expression with ``mx`` bound to rebind and compares the text.
Writes tests/symbol/data/debug_str.json.
"""

import json
from pathlib import Path

import mxnet as mx

CASES = {
    "variable": "mx.sym.Variable('a')",
    "mlp": (
        "mx.sym.FullyConnected(data=2 * mx.sym.Variable('a') + mx.sym.sin(mx.sym.Variable('a')),"
        " num_hidden=10)"
    ),
    "group_with_aux": (
        "mx.sym.Group([mx.sym.SliceChannel(mx.sym.Variable('a'), num_outputs=2)[1],"
        " mx.sym.BatchNorm(mx.sym.SliceChannel(mx.sym.Variable('a'), num_outputs=2,"
        " name='sc')[0], name='bn')])"
    ),
    "shared_aux": (
        "mx.sym.BatchNorm(mx.sym.BatchNorm(mx.sym.Variable('x'), moving_mean=mx.sym.Variable('m'),"
        " moving_var=mx.sym.Variable('v'), name='bn1'), moving_mean=mx.sym.Variable('m'),"
        " moving_var=mx.sym.Variable('v'), name='bn2')"
    ),
}


def main():
    recorded = {}
    for name, expression in CASES.items():
        with mx.name.NameManager():
            symbol = eval(expression, {"mx": mx})
        recorded[name] = {"expression": expression, "debug_str": symbol.debug_str()}
    path = Path(__file__).resolve().parents[1] / "symbol" / "data" / "debug_str.json"
    path.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
