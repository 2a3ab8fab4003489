"""MXNet 1.9.1's public names (recorded by tests/recording/record_public_names.py) and scope.

A recorded name is in scope for rebind unless one of these holds:
- it is an operator function, an NDArray/Symbol fluent method, or a random
  sampler (the operator issues own those: tests/namespaces/mxnet_operator_names.json);
- MXNet imported it from outside MXNet (``namedtuple`` in ``mx.model``);
- it is a module MXNet imported from another of its packages (``mx.model.nd``);
- MXNet's module imported it from mxnet.base or mxnet.util for its own use
  (``check_call``, ``c_str``, ``py_str``, ``is_np_array`` in ``mx.profiler``, ...):
  libmxnet plumbing and NumPy-mode switches, not that module's API;
- its namespace or its qualified name is listed in out_of_scope.json, with the reason.

An in-scope name must exist in rebind, or be listed in not_implemented.json
with a reason that rebind's NotImplementedError repeats.
"""

import importlib
import json
import types
from pathlib import Path

import rebind as mx

HERE = Path(__file__).parent
RECORDED = json.loads((HERE / "mxnet_public_names.json").read_text())["namespaces"]
OUT_OF_SCOPE = json.loads((HERE / "out_of_scope.json").read_text())
NOT_IMPLEMENTED = json.loads((HERE / "not_implemented.json").read_text())

# modules whose names other MXNet modules import for their own use only
_PLUMBING = ("mxnet.base", "mxnet.util")

# recorded classes whose attributes are checked on an instance
_INSTANCES = {
    "nd.NDArray": lambda: mx.nd.array([[1.0, 2.0], [3.0, 4.0]]),
    "sym.Symbol": lambda: mx.sym.Variable("x") + 1,
}


def out_of_scope_reason(namespace, name=None):
    """Why a namespace (or one of its names) is out of scope, or None."""
    parts = namespace.split(".")
    for end in range(1, len(parts) + 1):
        reason = OUT_OF_SCOPE.get(".".join(parts[:end]))
        if reason:
            return reason
    if name is not None:
        return OUT_OF_SCOPE.get(f"{namespace}.{name}")
    return None


def in_scope(namespace, name):
    """True when rebind must have ``name`` in ``namespace``."""
    facts = RECORDED[namespace][name]
    if facts["operator"] or facts["sampler"] or facts["source"] == "foreign":
        return False
    if facts["kind"] == "module" and facts["source"] != "package":
        return False
    if facts["source"] == "mxnet" and facts["origin"] in _PLUMBING:
        return False
    return out_of_scope_reason(namespace, name) is None


def in_scope_names(namespace):
    """The sorted in-scope names of a recorded namespace ([] when it is out of scope)."""
    if out_of_scope_reason(namespace) is not None:
        return []
    return sorted(n for n in RECORDED[namespace] if in_scope(namespace, n))


def target(namespace):
    """The rebind object standing for ``namespace`` (a module, or an instance for a class)."""
    if namespace in _INSTANCES:
        return _INSTANCES[namespace]()
    if namespace == "mx":
        return mx
    head, *rest = namespace.split(".")
    obj = getattr(mx, head)
    for part in rest:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module(f"{obj.__name__}.{part}")
    return obj


def missing(namespace):
    """In-scope names that rebind has neither implemented nor listed as not implemented."""
    try:
        owner = target(namespace)
    except (AttributeError, ImportError):
        return list(in_scope_names(namespace))
    absent = []
    for name in in_scope_names(namespace):
        if f"{namespace}.{name}" in NOT_IMPLEMENTED:
            continue
        try:
            getattr(owner, name)
        except AttributeError:
            absent.append(name)
    return absent


def matches_kind(obj, kind):
    """Whether rebind's object is of the kind MXNet's is (module, class or callable)."""
    if kind == "module":
        return isinstance(obj, types.ModuleType)
    if kind in ("class", "function", "method"):
        return callable(obj)
    return True
