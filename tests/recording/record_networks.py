# ruff: noqa: B905 - this runs on MXNet's Python 3.8, whose zip() has no strict=
"""Record networks of issue 13's operators from MXNet 1.9.1 (run with /work/mxenv/bin/python).

For each network of tests/symbol/networks: its ``tojson()``, seeded argument
values, the outputs of a training forward and the gradients of a backward
(loss heads, so no head gradients), into tests/symbol/data/networks.json and
tests/symbol/data/networks.npz.
"""

import json
import os
import sys
import zlib

import mxnet as mx
import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, ROOT)
from tests.symbol.networks import builders  # noqa: E402

DATA = os.path.join(ROOT, "tests", "symbol", "data")


def draw(name, shape, integer, rng):
    if integer:
        low, high = integer
        return rng.randint(low, high, size=shape).astype(np.float32)
    return rng.uniform(-1, 1, size=shape).astype(np.float32)


def record(name, build, arrays):
    sym, shapes, integers = build()
    rng = np.random.RandomState(zlib.crc32(name.encode()))
    exe = sym.simple_bind(mx.cpu(), grad_req="write", **shapes)
    for arg in sym.list_arguments():
        value = draw(arg, exe.arg_dict[arg].shape, integers.get(arg), rng)
        exe.arg_dict[arg][:] = value
        arrays[f"{name}.arg.{arg}"] = value
    for i, out in enumerate(exe.forward(is_train=True)):
        arrays[f"{name}.out.{i}"] = out.asnumpy()
    exe.backward()
    for arg in sym.list_arguments():
        if arg not in integers:
            arrays[f"{name}.grad.{arg}"] = exe.grad_dict[arg].asnumpy()
    return {"json": sym.tojson(), "shapes": {k: list(v) for k, v in shapes.items()}}


def main():
    arrays, networks = {}, {}
    for name, build in builders(mx).items():
        networks[name] = record(name, build, arrays)
    np.savez(os.path.join(DATA, "networks.npz"), **arrays)
    with open(os.path.join(DATA, "networks.json"), "w") as f:
        json.dump({"mxnet_version": mx.__version__, "networks": networks}, f, indent=1)
        f.write("\n")
    print(sorted(networks))


if __name__ == "__main__":
    main()
