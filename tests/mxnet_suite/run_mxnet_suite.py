"""Run MXNet 1.9.1's own Python tests on real MXNet and on rebind, and compare.

Not a pytest module (no ``test_`` prefix, so pytest never collects it); run it as a
script::

    nice -n 10 /work/venv/bin/python tests/mxnet_suite/run_mxnet_suite.py \
        [TESTS_DIR] [--side mxnet|rebind|both] [--files GLOB ...] [--reuse]

``TESTS_DIR`` (default ``/work/mxtests/tests/python``) holds MXNet's ``unittest/`` and
``train/`` folders. Each test file runs in its own pytest process (``pytest-timeout``
per test, ``-p no:cacheprovider``, JUnit XML into ``--out``), once with the MXNet
interpreter (``--mxnet-python``) on the original files and once with the rebind
interpreter (``--rebind-python``) under ``-p rebind.alias``. With ``--reuse`` an
existing XML result is read instead of run again, so the slow MXNet baseline can be
made once (``--side mxnet``) and rebind compared against it later.

Scope rule. rebind is MXNet's Module/Symbol/NDArray API, sparse storage
(``mx.nd.sparse``, CSR and row-sparse) and the contrib operators included; it has no
Gluon, autograd, ``mx.np``/``npx``, control-flow operators (``foreach``,
``while_loop``, ``cond``), ``mx.contrib`` Python packages other than ``amp``, ``onnx``
and ``svrg_optimization``, or GPU-only paths. A test is OUT of scope when any of these
holds, else IN scope:

1. its file matches ``--skip`` (default: the gluon, numpy, autograd, subgraph,
   extension, TVM and dynamic-shape files, and the contrib files of those missing
   pieces: ``contrib.autograd``, ``contrib.io``, ``contrib.text``, intgemm (``npx``),
   the straight-through estimators (Gluon blocks only) and control flow), which are
   then not run;
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

Printed per file and overall (``--report-only`` reprints from the saved XML): the
tests MXNet ran, how many are out of and in scope, how many in-scope tests pass on
MXNet ("MX ok") and how many of those pass on rebind ("RB ok"); then each in-scope
test that passes on MXNet but not on rebind, with a one-line cause (the exception,
the failing line, where). A file with no result on one side is listed as not
compared. ``OUT/summary.json`` keeps the same data.
"""

import argparse
import ast
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

SUITES = ("unittest", "train")
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


def parse_args(argv):
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tests_dir", nargs="?", default="/work/mxtests/tests/python")
    p.add_argument("--mxnet-python", default="/work/mxenv/bin/python")
    p.add_argument("--rebind-python", default=sys.executable)
    p.add_argument("--out", default="/tmp/rebind_mxnet_suite")
    p.add_argument("--side", choices=("mxnet", "rebind", "both"), default="both")
    p.add_argument("--files", nargs="*", default=["*"], help="globs on test file names")
    p.add_argument("--skip", nargs="*", default=DEFAULT_SKIP, help="globs of files not run")
    p.add_argument("--timeout", type=int, default=300, help="seconds per test")
    p.add_argument("--file-timeout", type=int, default=3600, help="seconds per file")
    p.add_argument("--reuse", action="store_true", help="read existing XML results")
    p.add_argument("--report-only", action="store_true", help="run nothing; report")
    return p.parse_args(argv)


def discover(args):
    """``(suite, file name)`` of every selected test file."""
    found = []
    for suite in SUITES:
        folder = os.path.join(args.tests_dir, suite)
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if not (name.startswith("test_") and name.endswith(".py")):
                continue
            if any(fnmatch.fnmatch(name, g) for g in args.skip):
                continue
            if any(fnmatch.fnmatch(name, g) for g in args.files):
                found.append((suite, name))
    return found


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


def run_file(args, side, suite, name, path):
    """Run one test file in its own pytest process; the JUnit XML path."""
    xml = os.path.join(args.out, side, f"{suite}__{name[:-3]}.xml")
    if args.report_only or (args.reuse and os.path.exists(xml)):
        return xml
    os.makedirs(os.path.dirname(xml), exist_ok=True)
    if os.path.exists(xml):
        os.remove(xml)  # a stale result must not stand in for a killed run
    python = args.mxnet_python if side == "mxnet" else args.rebind_python
    cmd = [python, "-m", "pytest", os.path.basename(path), "-q", "-p", "no:cacheprovider"]
    cmd += ["--timeout", str(args.timeout), "--junitxml", xml, "-o", "addopts="]
    cmd += ["-p", "rebind.alias"] if side == "rebind" else []
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg")
    start = time.time()
    try:
        subprocess.run(
            cmd,
            cwd=os.path.dirname(path),
            env=env,
            timeout=args.file_timeout,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # pytest-timeout ends the whole process when a test hangs in C code: no XML then
        state = "done" if os.path.exists(xml) else "no XML written (process killed?)"
    except subprocess.TimeoutExpired:
        state = "FILE TIMEOUT"
    print(f"  [{side}] {suite}/{name}: {state} in {time.time() - start:.0f}s", flush=True)
    return xml


def read_results(xml):
    """``{(class or '', test name): (status, one-line cause)}`` from a JUnit XML file.

    Status is passed, failed, skipped, or collect_error (the file did not import:
    pytest reports it as one case named after the module).
    """
    if not os.path.exists(xml):
        return None
    results = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        parts = (case.get("classname") or "").split(".")
        cls = parts[-1] if len(parts) > 1 and parts[-1][:1].isupper() else ""
        status, cause = "passed", ""
        for kind in ("failure", "error", "skipped"):
            child = case.find(kind)
            if child is not None:
                status = "skipped" if kind == "skipped" else "failed"
                if child.get("message") == "collection failure":
                    status = "collect_error"
                cause = one_line(child.text or child.get("message") or "")
                break
        results[(cls, case.get("name"))] = (status, cause)
    return results


def one_line(text):
    """A failure in one line: the exception, the failing source line and where it is."""
    lines = text.strip().splitlines()
    errors = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    code = [ln[1:].strip() for ln in lines if ln.startswith(">")]
    where = [ln.split(": ")[0] for ln in lines if re.match(r"^\S+\.py:\d+: \w", ln)]
    named = [e for e in errors if re.match(r"[\w.]+(Error|Exception|Exit|Warning)\b", e)]
    line = (named or errors or lines or [""])[0]
    if code and code[-1] not in line:
        line += f" at `{code[-1]}`"
    if where:
        line += f" ({where[-1]})"
    return line[:240]


def rebind_outcome(rb, key):
    """``(status, cause)`` of test ``key`` on rebind, explaining a missing result."""
    if rb is None:
        return "failed", "no rebind result (not run)"
    if key in rb:
        return rb[key]
    errors = [cause for status, cause in rb.values() if status == "collect_error"]
    if errors:
        return "failed", "collection error: " + errors[0]
    return "failed", "no result on rebind (the file timed out or crashed)"


def compare_file(scope, mx, rb):
    """Per-file counts and the tests that pass on MXNet but not on rebind."""
    row = {"tests": 0, "out_of_scope": 0, "in_scope": 0, "mxnet_passed": 0, "rebind_passed": 0}
    row["regressions"] = []
    for key, (status, _) in sorted(mx.items()):
        cls, name = key
        row["tests"] += 1
        rb_status, cause = rebind_outcome(rb, key)
        if scope.test_reason(cls, name.split("[")[0]) or MISSING_SUBSYSTEM.search(cause):
            row["out_of_scope"] += 1
            continue
        row["in_scope"] += 1
        if status != "passed":
            continue
        row["mxnet_passed"] += 1
        if rb_status == "passed":
            row["rebind_passed"] += 1
        else:
            label = f"{cls}::{name}" if cls else name
            row["regressions"].append((label, f"[{rb_status}] {cause}"))
    return row


def main(argv=None):
    """Run the selected files on the selected sides, then print the comparison."""
    args = parse_args(argv)
    files = discover(args)
    print(f"{len(files)} test files; results in {args.out}", flush=True)
    summary, missing = {}, []
    for suite, name in files:
        original = os.path.join(args.tests_dir, suite, name)
        scope = FileScope(original)
        xmls = {}
        for side in ("mxnet", "rebind"):
            if args.side not in (side, "both") and not args.report_only:
                xmls[side] = os.path.join(args.out, side, f"{suite}__{name[:-3]}.xml")
                continue
            path = original
            if side == "rebind" and scope.bad_imports:
                path = patched_copy(args, suite, name, scope)
            xmls[side] = run_file(args, side, suite, name, path)
        mx, rb = read_results(xmls["mxnet"]), read_results(xmls["rebind"])
        if mx is None or rb is None:
            missing.append(f"{suite}/{name} ({'mxnet' if mx is None else 'rebind'})")
            continue
        summary[f"{suite}/{name}"] = compare_file(scope, mx, rb)
    report(summary, args.out)
    if missing:
        print(f"\nnot compared, no result yet on one side: {', '.join(missing)}")


def report(summary, out):
    """Print per-file and overall counts and the regressions; save them as JSON."""
    keys = ("tests", "out_of_scope", "in_scope", "mxnet_passed", "rebind_passed")
    total = dict.fromkeys(keys, 0)
    header = ("tests", "out", "in", "MX ok", "RB ok")
    print("\n" + f"{'file':40}" + "".join(f"{h:>8}" for h in header))
    for fname, row in summary.items():
        print(f"{fname:40}" + "".join(f"{row[k]:8}" for k in keys))
        for key in keys:
            total[key] += row[key]
    print(f"{'TOTAL':40}" + "".join(f"{total[k]:8}" for k in keys) + "\n")
    total["regressions"] = sum(len(row["regressions"]) for row in summary.values())
    print(f"{total['regressions']} in-scope tests pass on MXNet and fail on rebind:")
    for fname, row in summary.items():
        for label, cause in row["regressions"]:
            print(f"  {fname}::{label}: {cause}")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump({"total": total, "files": summary}, f, indent=1)


if __name__ == "__main__":
    main()
