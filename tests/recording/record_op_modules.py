"""Record where MXNet 1.9.1 files each operator function (run with /work/mxenv/bin/python).

Writes tests/namespaces/mxnet_op_modules.json: the operator functions of
``mx.nd._internal``, ``mx.nd.op``, ``mx.sym._internal`` and ``mx.sym.op``.
"""

import json
import os

import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))


def functions(module):
    return sorted(n for n in dir(module) if not n.startswith("__") and callable(getattr(module, n)))


modules = {
    "nd._internal": functions(mx.nd._internal),
    "nd.op": functions(mx.nd.op),
    "sym._internal": functions(mx.sym._internal),
    "sym.op": functions(mx.sym.op),
}
with open(os.path.join(HERE, "..", "namespaces", "mxnet_op_modules.json"), "w") as f:
    json.dump({"mxnet_version": mx.__version__, "modules": modules}, f, indent=1)
    f.write("\n")
print({k: len(v) for k, v in modules.items()})
