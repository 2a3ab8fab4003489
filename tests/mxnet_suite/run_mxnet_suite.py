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

Which tests count (in scope) and how a file is patched for rebind is decided in
``suite_scope.py`` next to this file; its docstring states the rule.

Printed per file and overall (``--report-only`` reprints from the saved XML): the
tests MXNet ran, how many are out of and in scope, how many in-scope tests pass on
MXNet ("MX ok") and how many of those pass on rebind ("RB ok"); then each in-scope
test that passes on MXNet but not on rebind, with a one-line cause (the exception,
the failing line, where). A file with no result on one side is listed as not
compared. ``OUT/summary.json`` keeps the same data.
"""

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

from suite_scope import DEFAULT_SKIP, MISSING_SUBSYSTEM, FileScope, patched_copy

SUITES = ("unittest", "train")


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
