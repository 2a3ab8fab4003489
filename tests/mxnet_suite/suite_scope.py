"""Which of MXNet's tests rebind is measured on, and the copies it runs them from.

Used by ``run_mxnet_suite.py`` (the runner: it runs the files and compares the
results); this module only reads test sources and writes patched copies.

Scope rule. rebind is MXNet's Module/Symbol/NDArray API, sparse storage
(``mx.nd.sparse``, CSR and row-sparse) and the contrib operators included; it has no
Gluon, autograd, ``mx.np``/``npx``, control-flow operators (``foreach``,
``while_loop``, ``cond``), ``mx.contrib`` Python packages other than ``amp``, ``onnx``
and ``svrg_optimization``, or GPU-only paths. A test is OUT of scope when any of these
holds, else IN scope:

1. its file matches the runner's ``--skip`` (default ``DEFAULT_SKIP``: the gluon,
   numpy, autograd, subgraph, extension, TVM and dynamic-shape files, and the contrib
   files of those missing pieces: ``contrib.autograd``, ``contrib.io``,
   ``contrib.text``, intgemm (``npx``), the straight-through estimators (Gluon blocks
   only) and control flow), which are then not run;
2. its source, or the source of a module-level function or class of the same file it
   refers to (followed transitively), contains a marker: ``gluon``, ``autograd``,
   ``mx.np``, ``npx``, ``use_np``/``np_shape``/``np_array``; or refers to a name that
   the file imports at module level from such a module (``from mxnet import gluon``,
   ``from mxnet.contrib.text import ...``) or that names such a subsystem (``from
   mxnet.util import set_np_shape``);
3. on rebind it fails with the error of a missing subsystem: ``has no attribute
   'gluon'`` (or autograd, np, npx), ``No module named 'mxnet.gluon'`` (or autograd,
   numpy, numpy_extension, or a missing ``mxnet.contrib`` package), or a GPU that
   cannot be used (a test that merely names ``mx.gpu(1)`` without computing on it
   stays in scope).

For rebind, a file whose module-level imports name such modules runs from a copy
(``OUT/tree``) with just those imported names removed (and the tests decorated with
them, e.g. ``@use_np``); its tests that need the removed names are out of scope by
rule 2, and a file whose module-level code still needs them is reported as a
collection error.
"""

import ast
import os
import re
import shutil

DEFAULT_SKIP = (
    "test_gluon*.py test_numpy_*.py test_autograd.py test_higher_order_grad.py "
    "test_subgraph*.py test_extensions.py test_tvm_op.py test_dynamic_shape.py "
    "test_contrib_autograd.py test_contrib_io.py test_contrib_text.py test_contrib_intgemm.py "
    "test_contrib_stes_op.py test_contrib_control_flow.py"
).split()
MARKERS = re.compile(
    r"\bgluon\b|\bautograd\b|\bmx\.npx?\b|\bnpx\b|\buse_np\w*|\bnp_shape\b|\bnp_array\b"
)
# the mx.contrib packages rebind has: amp, onnx, svrg_optimization and the operators
MISSING_CONTRIB = r"contrib\.(?!(amp|onnx|svrg_optimization|nd|ndarray|sym|symbol)\b)\w+"
OUT_OF_SCOPE_MODULE = re.compile(
    rf"^mxnet\.(gluon|autograd|numpy|numpy_extension|{MISSING_CONTRIB})(\.|$)"
)
OUT_OF_SCOPE_IMPORT = {"gluon", "autograd", "np", "npx", "numpy_extension"}
OUT_OF_SCOPE_NAME = re.compile(r"(^|_)npx?(_|$)|[Nn]umpy|gluon|autograd")
MISSING_SUBSYSTEM = re.compile(
    r"has no attribute '(gluon|autograd|np|npx)'"
    r"|No module named '(mxnet|rebind)\.(gluon|autograd|numpy|numpy_extension|"
    + MISSING_CONTRIB
    + r")"
    r"|gpu\(\d+\) cannot be used|no backend serves device type 'gpu'"
)


def out_of_scope_imports(tree):
    """Module-level import statements of out-of-scope modules and the names they bind."""
    nodes, names = [], set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        bound = []
        if isinstance(node, ast.Import):
            for a in node.names:
                if OUT_OF_SCOPE_MODULE.match(a.name):
                    bound.append(a.asname or a.name.split(".")[0])
        elif node.module and OUT_OF_SCOPE_MODULE.match(node.module):
            bound = [a.asname or a.name for a in node.names]
        elif node.module and node.module.split(".")[0] == "mxnet":
            bound = [a.asname or a.name for a in node.names if _out_of_scope_name(node, a.name)]
        if bound:
            nodes.append(node)
            names.update(bound)
    return nodes, names


def _out_of_scope_name(node, name):
    """Whether ``from <node.module> import <name>`` names an out-of-scope subsystem.

    By the name (``set_np_shape``, ``gluon``) or as a missing package
    (``from mxnet.contrib import text``).
    """
    if name in OUT_OF_SCOPE_IMPORT or OUT_OF_SCOPE_NAME.search(name):
        return True
    return bool(OUT_OF_SCOPE_MODULE.match(f"{node.module}.{name}"))


def module_level(tree):
    """Nodes at module level, descending into ``if``/``try`` blocks."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.If, ast.Try)):
            stack.extend(node.body + node.orelse + getattr(node, "handlers", []))
            stack.extend(getattr(node, "finalbody", []))
        elif isinstance(node, ast.ExceptHandler):
            stack.extend(node.body)


class FileScope:
    """Which tests of one file are out of scope by their source (rules 2)."""

    def __init__(self, path):
        self.source = open(path, encoding="utf-8").read()
        self.tree = ast.parse(self.source)
        imports, self.bad_names = out_of_scope_imports(self.tree)
        level = set(module_level(self.tree))
        self.bad_imports = [n for n in imports if n in level]
        self.defs = {}
        for node in level:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                self.defs[node.name] = node
        self._memo = {}

    def _names(self, node):
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
            n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
        }

    def reason(self, name, seen=None):
        """Why module-level ``name`` is out of scope, or ``None``."""
        if name in self._memo:
            return self._memo[name]
        seen = set() if seen is None else seen
        node = self.defs.get(name)
        if node is None or name in seen:
            return None
        seen.add(name)
        first = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
        text = "\n".join(self.source.splitlines()[first - 1 : node.end_lineno])
        match = MARKERS.search(text)
        used = self._names(node)
        why = f"uses {match.group(0)!r}" if match else None
        if why is None and used & self.bad_names:
            why = f"uses {sorted(used & self.bad_names)[0]!r}"
        for callee in sorted(used & self.defs.keys() - {name}) if why is None else []:
            inner = self.reason(callee, seen)
            if inner:
                why = f"{callee}() {inner}"
                break
        self._memo[name] = why
        return why

    def test_reason(self, cls, func):
        """Why test ``func`` (method of ``cls`` if given) is out of scope, or ``None``."""
        if cls and cls in self.defs:
            for node in self.defs[cls].body:
                if isinstance(node, ast.FunctionDef) and node.name == func:
                    text = ast.get_source_segment(self.source, node) or ""
                    match = MARKERS.search(text)
                    if match:
                        return f"uses {match.group(0)!r}"
            return self.reason(cls)
        return self.reason(func)


def patched_copy(args, suite, name, scope):
    """Path of the file to run on rebind: a copy without out-of-scope imports if needed."""
    tree_dir = os.path.join(args.out, "tree")
    if not os.path.isdir(tree_dir):
        shutil.copytree(args.tests_dir, tree_dir)
    path = os.path.join(tree_dir, suite, name)
    lines = scope.source.splitlines(keepends=True)
    for node in scope.bad_imports:
        indent = " " * node.col_offset
        kept = [a for a in node.names if (a.asname or a.name) not in scope.bad_names]
        if isinstance(node, ast.ImportFrom) and kept and node.level == 0:
            names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in kept)
            lines[node.lineno - 1] = f"{indent}from {node.module} import {names}\n"
        else:
            lines[node.lineno - 1] = f"{indent}pass  # import removed by run_mxnet_suite\n"
        for i in range(node.lineno, node.end_lineno):
            lines[i] = "\n"
    # a test decorated with a removed name (@use_np) would fail the whole file's import
    for node in scope.tree.body:
        decorators = getattr(node, "decorator_list", [])
        if any(scope._names(d) & scope.bad_names for d in decorators):
            for i in range(decorators[0].lineno - 1, node.end_lineno):
                lines[i] = "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(lines))
    return path
