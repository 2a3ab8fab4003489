# ruff: noqa: B905 - this runs on MXNet's Python 3.8, whose zip() has no strict=
"""Record golden operator cases from MXNet 1.9.1 (run with /work/mxenv/bin/python).

Usage: ``record_ops.py FAMILY [FAMILY ...]`` from the repository root. For
each case of ``tests/ops/cases/FAMILY.py`` it composes ``mx.sym.<sym_func>``
over one variable per argument, binds it on the CPU, and stores:

* ``arg.<name>`` / ``aux.<name>``: the inputs (drawn here, seeded by the id);
* ``out.<i>``: forward in training mode; ``arg_after.<name>`` for every input
  the forward changed (update operators' states); ``aux_after_fwd.<name>``;
* ``head_grad.<i>``, ``grad.<name>``, ``aux_after.<name>``: backward;
* ``out_infer.<i>``: forward in inference mode on a fresh bind, where it
  differs from training mode.

It writes ``tests/golden/ops_extra/FAMILY/<id>.npz`` and the case list
``tests/golden/ops_extra/FAMILY.json`` in the shared manifest's "ops" format.
"""

import importlib.util
import json
import os
import sys
import zlib

import mxnet as mx
import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
GOLDEN = os.path.join(ROOT, "tests", "golden")
sys.path.insert(0, ROOT)


def load_cases(family):
    path = os.path.join(ROOT, "tests", "ops", "cases", family + ".py")
    spec = importlib.util.spec_from_file_location("cases_" + family, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES


def draw(spec, rng):
    shape, dtype, kind = tuple(spec["shape"]), spec["dtype"], spec["kind"]
    low, high = spec["low"], spec["high"]
    if kind == "values":
        return np.array(spec["values"], dtype=dtype).reshape(shape)
    if kind == "int":
        return rng.randint(int(low), int(high), size=shape).astype(dtype)
    if kind == "normal":
        return (rng.standard_normal(shape) * high).astype(dtype)
    if kind == "spd":
        n = shape[-1]
        a = rng.uniform(-1, 1, size=shape)
        return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)
    if kind == "lower":
        n = shape[-1]
        a = np.tril(rng.uniform(-1, 1, size=shape))
        diagonal = rng.uniform(1, 2, size=shape[:-1])
        index = np.arange(n)
        a[..., index, index] = diagonal
        return a.astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


def compose(case):
    func = mx.sym  # a dotted sym_func ("linalg.syevd") names a submodule's function
    for part in case["sym_func"].split("."):
        func = getattr(func, part)
    variables = [mx.sym.Variable(name) for name in case["args"]]
    if case["positional"]:
        return func(*variables, name=case["node_name"], **case["attrs"])
    named = dict(zip(case["args"], variables))
    return func(name=case["node_name"], **named, **case["attrs"])


def _bind(sym, case, grad_req):
    shapes = {n: tuple(s["shape"]) for n, s in case["args"].items()}
    types = {n: np.dtype(s["dtype"]) for n, s in case["args"].items()}
    if isinstance(grad_req, dict) and not grad_req:
        grad_req = "null"  # an operator without inputs (a creator or sampler)
    return sym.simple_bind(mx.cpu(), grad_req=grad_req, type_dict=types, **shapes)


def _load(exe, arrays):
    for name, value in arrays.items():
        target = exe.arg_dict.get(name)
        if target is None:
            target = exe.aux_dict[name]
        target[:] = value


def record_imperative(case, family):
    """One call of ``mx.nd.<sym_func>``: outputs and the inputs it changed."""
    rng = np.random.RandomState(zlib.crc32(case["id"].encode()))
    data = {f"arg.{n}": draw(spec, rng) for n, spec in case["args"].items()}
    arrays = [mx.nd.array(data[f"arg.{n}"], dtype=data[f"arg.{n}"].dtype) for n in case["args"]]
    attrs = dict(case["attrs"])
    targets = case.get("targets", {})
    for name, spec in targets.items():
        data[f"target.{name}"] = draw(spec, rng)
    if case.get("out"):
        named = dict(zip(case["args"], arrays))
        named.update(
            {n: mx.nd.array(data[f"target.{n}"], dtype=s["dtype"]) for n, s in targets.items()}
        )
        targets = [named[n] for n in case["out"]]
        attrs["out"] = targets[0] if len(targets) == 1 else targets
    func = mx.nd  # a dotted sym_func ("_internal._multi_adamw_update") names a submodule's
    for part in case["sym_func"].split("."):
        func = getattr(func, part)
    outs = func(*arrays, **attrs)
    outs = [o.asnumpy() for o in (outs if isinstance(outs, (list, tuple)) else [outs])]
    for i, out in enumerate(outs):
        data[f"out.{i}"] = out
    mutated = []
    for name, array in zip(case["args"], arrays):
        after = array.asnumpy()
        if not np.array_equal(after, data[f"arg.{name}"], equal_nan=True):
            data[f"arg_after.{name}"] = after
            mutated.append(name)
    relative = f"ops_extra/{family}/{case['id']}.npz"
    np.savez(os.path.join(GOLDEN, relative), **data)
    return {
        "id": case["id"],
        "file": relative,
        "sym_func": case["sym_func"],
        "modes": ["train"],
        "backward": False,
        "infer_same_as_train": True,
        "op": case["op"],
        "node_name": case["node_name"],
        "attrs": {k: str(v) for k, v in case["attrs"].items()},
        "arguments": list(case["args"]),
        "aux_states": [],
        "outputs": [f"{case['node_name']}_output{i}" for i in range(len(outs))],
        "arg_dtypes": {n: s["dtype"] for n, s in case["args"].items()},
        "grad_req": {n: "null" for n in case["args"]},
        "out_shapes": [list(o.shape) for o in outs],
        "out_dtypes": [o.dtype.name for o in outs],
        "random": case["random"],
        "positional": True,
        "imperative": True,
        "out": case.get("out", []),
        "targets": list(case.get("targets", {})),
        "mutated": mutated,
        "fields": {k: {"shape": list(v.shape), "dtype": v.dtype.name} for k, v in data.items()},
    }


def record(case, family):
    if case.get("imperative"):
        return record_imperative(case, family)
    rng = np.random.RandomState(zlib.crc32(case["id"].encode()))
    sym = compose(case)
    arguments, aux_names = sym.list_arguments(), sym.list_auxiliary_states()
    grad_req = {
        n: "write" if case["backward"] and case["args"].get(n, {}).get("grad") else "null"
        for n in arguments
    }
    exe = _bind(sym, case, grad_req)
    data = {f"arg.{n}": draw(case["args"][n], rng) for n in arguments}
    for name in aux_names:
        spec = case["aux"].get(name)
        value = (
            draw(spec, rng)
            if spec
            else rng.uniform(0.5, 2.0, exe.aux_dict[name].shape).astype(exe.aux_dict[name].dtype)
        )
        data[f"aux.{name}"] = value
    inputs = {k.split(".", 1)[1]: v for k, v in data.items()}
    _load(exe, inputs)
    outs = [o.asnumpy() for o in exe.forward(is_train=True)]
    for i, out in enumerate(outs):
        data[f"out.{i}"] = out
    mutated = []
    for name in arguments:
        after = exe.arg_dict[name].asnumpy()
        if not np.array_equal(after, data[f"arg.{name}"], equal_nan=True):
            data[f"arg_after.{name}"] = after
            mutated.append(name)
    for name in aux_names:
        data[f"aux_after_fwd.{name}"] = exe.aux_dict[name].asnumpy()
    if case["backward"]:
        heads = []
        for i, out in enumerate(outs):
            if out.dtype.kind == "f":
                head = rng.standard_normal(out.shape).astype(out.dtype)
                data[f"head_grad.{i}"] = head
            else:
                head = np.zeros(out.shape, out.dtype)
            heads.append(mx.nd.array(head, dtype=out.dtype))
        exe.backward(heads)
        for name in arguments:
            if grad_req[name] == "write":
                data[f"grad.{name}"] = exe.grad_dict[name].asnumpy()
        for name in aux_names:
            data[f"aux_after.{name}"] = exe.aux_dict[name].asnumpy()
    same = True
    if "infer" in case["modes"]:
        fresh = _bind(sym, case, "null")
        _load(fresh, inputs)
        infer = [o.asnumpy() for o in fresh.forward(is_train=False)]
        for i, (a, b) in enumerate(zip(infer, outs)):
            if not np.array_equal(a, b, equal_nan=True):
                data[f"out_infer.{i}"] = a
                same = False
    relative = f"ops_extra/{family}/{case['id']}.npz"
    np.savez(os.path.join(GOLDEN, relative), **data)
    node = [n for n in json.loads(sym.tojson())["nodes"] if n["op"] != "null"][-1]
    _, out_shapes, _ = sym.infer_shape(**{n: tuple(s["shape"]) for n, s in case["args"].items()})
    return {
        "id": case["id"],
        "file": relative,
        "sym_func": case["sym_func"],
        "modes": case["modes"],
        "backward": case["backward"],
        "infer_same_as_train": same,
        "op": case["op"],
        "mxnet_op": node["op"],
        "node_name": case["node_name"],
        "attrs": node.get("attrs", {}),
        "arguments": arguments,
        "aux_states": aux_names,
        "outputs": sym.list_outputs(),
        "arg_dtypes": {n: case["args"][n]["dtype"] for n in arguments},
        "grad_req": grad_req,
        "out_shapes": [list(s) for s in out_shapes],
        "out_dtypes": [o.dtype.name for o in outs],
        "random": case["random"],
        "positional": case["positional"],
        "mutated": mutated,
        "symbol_json": sym.tojson(),
        "fields": {k: {"shape": list(v.shape), "dtype": v.dtype.name} for k, v in data.items()},
    }


def main(families):
    for family in families:
        folder = os.path.join(GOLDEN, "ops_extra", family)
        os.makedirs(folder, exist_ok=True)
        for stale in os.listdir(folder):  # cases removed from the family go too
            os.remove(os.path.join(folder, stale))
        cases = load_cases(family)
        ids = [c["id"] for c in cases]
        duplicated = {i for i in ids if ids.count(i) > 1}
        if duplicated:
            raise SystemExit(f"{family}: duplicated case ids {sorted(duplicated)}")
        recorded = []
        for c in cases:
            try:
                recorded.append(record(c, family))
            except Exception:
                print(f"{family}: case {c['id']} failed in MXNet", file=sys.stderr)
                raise
        manifest = {
            "mxnet_version": mx.__version__,
            "numpy_version": np.__version__,
            "generator": "tests/recording/record_ops.py",
            "family": family,
            "cases": recorded,
        }
        with open(os.path.join(GOLDEN, "ops_extra", family + ".json"), "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"{family}: {len(recorded)} cases")


if __name__ == "__main__":
    main(sys.argv[1:])
