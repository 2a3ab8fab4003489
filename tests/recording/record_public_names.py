"""Record MXNet 1.9.1's public names per namespace (run with /work/mxenv/bin/python).

Writes two data files next to the namespace tests:

- tests/namespaces/mxnet_public_names.json: for each namespace, every name of
  ``dir()`` without a leading underscore, except modules from outside MXNet
  (``np``, ``os``, ``ctypes``, ...), with facts the test uses to decide scope:
  ``kind`` (function, class, module, other), ``origin`` (the module that
  defines the object, where Python knows it), ``source`` (how the name got into
  the namespace, see ``_source``), ``operator`` (a function generated from a
  registered operator, or an NDArray/Symbol fluent method) and ``sampler``
  (a hand-written wrapper of the random sampling operators).
- tests/namespaces/mxnet_operator_names.json: the registered operator names
  and, per namespace, the generated operator functions (for the operator issue).

A name is an operator function when its code object was compiled from a string
(MXNet generates every operator function with ``exec``) and the namespace's
operator prefix plus the name is a registered operator.
"""

import ast
import importlib
import inspect
import json
import sys
import types
from pathlib import Path

import mxnet as mx
from mxnet.operator import get_all_registered_operators

OUT_DIR = Path(__file__).resolve().parents[1] / "namespaces"

# namespace -> (module path, registered-operator prefix of its generated functions)
NAMESPACES = {
    "mx": ("mxnet", ""),
    "nd": ("mxnet.ndarray", ""),
    "sym": ("mxnet.symbol", ""),
    "nd.random": ("mxnet.ndarray.random", "_random_"),
    "sym.random": ("mxnet.symbol.random", "_random_"),
    "nd.linalg": ("mxnet.ndarray.linalg", "_linalg_"),
    "nd.contrib": ("mxnet.ndarray.contrib", "_contrib_"),
    "nd.sparse": ("mxnet.ndarray.sparse", "_sparse_"),
    "io": ("mxnet.io", ""),
    "model": ("mxnet.model", ""),
    "rnn": ("mxnet.rnn", ""),
    "random": ("mxnet.random", ""),
    "module": ("mxnet.module", ""),
    "metric": ("mxnet.metric", ""),
    "optimizer": ("mxnet.optimizer", ""),
    "lr_scheduler": ("mxnet.lr_scheduler", ""),
    "initializer": ("mxnet.initializer", ""),
    "callback": ("mxnet.callback", ""),
    "kvstore": ("mxnet.kvstore", ""),
    "monitor": ("mxnet.monitor", ""),
    "test_utils": ("mxnet.test_utils", ""),
    "base": ("mxnet.base", ""),
    "util": ("mxnet.util", ""),
    "runtime": ("mxnet.runtime", ""),
    "engine": ("mxnet.engine", ""),
    "profiler": ("mxnet.profiler", ""),
    "visualization": ("mxnet.visualization", ""),
    "context": ("mxnet.context", ""),
    "attribute": ("mxnet.attribute", ""),
    "name": ("mxnet.name", ""),
    "executor": ("mxnet.executor", ""),
    "operator": ("mxnet.operator", ""),
    "autograd": ("mxnet.autograd", ""),
    "recordio": ("mxnet.recordio", ""),
    "image": ("mxnet.image", ""),
    "gluon": ("mxnet.gluon", ""),
    "onnx": ("mxnet.onnx", ""),
    "contrib.amp": ("mxnet.contrib.amp", ""),
    "contrib.svrg_optimization": ("mxnet.contrib.svrg_optimization", ""),
}

# classes whose public attributes are recorded as namespaces of their own
CLASSES = {"nd.NDArray": mx.nd.NDArray, "sym.Symbol": mx.sym.Symbol}


def _kind(obj):
    if isinstance(obj, types.ModuleType):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "other"


def _origin(obj):
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    origin = getattr(obj, "__module__", None)
    return origin if isinstance(origin, str) else None


def _top_level_names(module):
    """Names bound by a def, class, assignment or import-as-alias in the module's own source."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names.update(t.id for t in ast.walk(target) if isinstance(t, ast.Name))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _source(module, name, obj, defined_here):
    """How ``name`` came into ``module``.

    defined: bound at the top level of the module's own source;
    package: an object or submodule of the module's own package (a re-export);
    mxnet: an object defined elsewhere in MXNet, imported into the module;
    foreign: an object from outside MXNet, imported into the module.
    """
    if name in defined_here and not isinstance(obj, types.ModuleType):
        return "defined"
    origin = _origin(obj)
    if origin in ("ndarray", "symbol"):  # generated operator functions
        origin = "mxnet." + origin
    if origin is None:
        return "foreign"
    package = module.__name__
    if origin == package or origin.startswith(package + "."):
        return "package"
    if origin == "mxnet" or origin.startswith("mxnet."):
        return "mxnet"
    return "foreign"


def _is_generated_op(obj, prefix, operators):
    code = getattr(obj, "__code__", None)
    if code is None or code.co_filename != "<string>":
        return False
    name = getattr(obj, "__name__", "")
    return prefix + name in operators or name in operators


def _is_sampler(module, obj, operators):
    """A hand-written sampler of mx.random / mx.nd.random / mx.sym.random."""
    if not inspect.isfunction(obj) or not module.__name__.endswith("random"):
        return False
    if _origin(obj) not in ("mxnet.ndarray.random", "mxnet.symbol.random"):
        return False
    name = obj.__name__
    stems = (f"_random_{name}", f"_sample_{name}", f"_{name}")
    return any(stem in operators for stem in stems) or name in ("randn", "multinomial")


def record_namespace(module, prefix, operators):
    """{name: facts} for one namespace module."""
    defined_here = _top_level_names(module)
    entries = {}
    for name in sorted(dir(module)):
        if name.startswith("_"):
            continue
        obj = getattr(module, name)
        if isinstance(obj, types.ModuleType) and not obj.__name__.startswith("mxnet"):
            continue
        entries[name] = {
            "kind": _kind(obj),
            "origin": _origin(obj),
            "source": _source(module, name, obj, defined_here),
            "operator": _is_generated_op(obj, prefix, operators),
            "sampler": _is_sampler(module, obj, operators),
        }
    return entries


def _is_fluent(obj):
    """NDArray/Symbol methods that only forward to an operator of the same namespace."""
    target = getattr(obj, "fget", obj)
    doc = inspect.getdoc(target) or ""
    return doc.startswith("Convenience fluent method")


def record_class(cls):
    """{name: facts} for the public attributes of NDArray or Symbol."""
    entries = {}
    for name in sorted(dir(cls)):
        if name.startswith("_") and name not in ("__array__", "__dlpack__"):
            continue
        raw = inspect.getattr_static(cls, name)
        if isinstance(raw, property):
            kind = "property"
        elif isinstance(raw, (staticmethod, classmethod)) or callable(raw):
            kind = "method"
        else:
            kind = "other"
        defining = next(k for k in cls.__mro__ if name in k.__dict__)
        entries[name] = {
            "kind": kind,
            "origin": defining.__module__ + "." + defining.__qualname__,
            "source": "defined",
            "operator": _is_fluent(raw),
            "sampler": False,
        }
    return entries


def _operator_functions(namespaces):
    return {
        ns: sorted(n for n, facts in entries.items() if facts["operator"] or facts["sampler"])
        for ns, entries in namespaces.items()
        if any(f["operator"] or f["sampler"] for f in entries.values())
    }


def main():
    operators = set(get_all_registered_operators())
    namespaces = {}
    for ns, (module_name, prefix) in NAMESPACES.items():
        module = importlib.import_module(module_name)
        namespaces[ns] = record_namespace(module, prefix, operators)
    for ns, cls in CLASSES.items():
        namespaces[ns] = record_class(cls)
    public = {"mxnet_version": mx.__version__, "namespaces": namespaces}
    ops = {
        "mxnet_version": mx.__version__,
        "registered_operators": sorted(operators),
        "namespace_functions": _operator_functions(namespaces),
    }
    OUT_DIR.mkdir(exist_ok=True)
    for file_name, data in (
        ("mxnet_public_names.json", public),
        ("mxnet_operator_names.json", ops),
    ):
        path = OUT_DIR / file_name
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
