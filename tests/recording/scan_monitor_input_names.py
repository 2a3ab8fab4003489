"""List the operators MXNet 1.9.1 registers without ``FListInputNames`` (monitor names).

MXNet's monitor (``monitor_all=True``) names input ``i`` of node ``n`` as
``n_<FListInputNames[i]>``, or ``n_input<i>`` where the operator lacks that
attribute. This script reads MXNet's C++ sources from the git mirror, follows
each operator registration (``NNVM_REGISTER_OP`` and the macros around it) to
the end of its statement, and prints, as a Python list, the names rebind
registers that lack the attribute: the contents of
``core/executor/monitor_names.INPUT_INDEX_OPS``.

Usage: /work/venv/bin/python tests/recording/scan_monitor_input_names.py
"""

import re
import subprocess

import rebind  # noqa: F401 - fills the operator registry
from rebind import registry

REPO = "/work/.mirror/apache+mxnet/repo"
TAG = "1.9.1"
ATTR = "FListInputNames"


def _sources():
    listing = ["git", "-C", REPO, "ls-tree", "-r", "--name-only", TAG, "src/operator"]
    paths = subprocess.run(listing, capture_output=True, text=True, check=True).stdout.split()
    show = ["git", "-C", REPO, "show"]
    for path in paths:
        if path.endswith((".cc", ".h")):
            yield subprocess.run([*show, f"{TAG}:{path}"], capture_output=True, text=True).stdout


def _macros(texts):
    """Macro name -> body, for every #define (continuation lines joined)."""
    found = {}
    for text in texts:
        for match in re.finditer(r"#define\s+(\w+)(\([^)]*\))?(.*)", text.replace("\\\n", " ")):
            found[match.group(1)] = match.group(3)
    return found


def _mentions(body, macros, word, depth=0):
    """Whether ``body``, with the macros it uses expanded (a few levels), contains ``word``."""
    if word in body:
        return True
    if depth > 4:
        return False
    used = (m for m in re.findall(r"\b([A-Z][A-Z0-9_]+)\b", body) if m in macros)
    return any(_mentions(macros[m], macros, word, depth + 1) for m in used)


def _statement_end(blank, start):
    """The index of the ``;`` closing the statement at ``start`` (brackets balanced)."""
    depth = 0
    for index in range(start, len(blank)):
        char = blank[index]
        depth += (char in "({[") - (char in ")}]")
        if char == ";" and depth == 0:
            return index
    return len(blank)


def _blank_strings(text):
    """``text`` with string contents blanked (same length), so brackets in strings are skipped."""
    text = re.sub(r'"(?:\\.|[^"\\])*"', lambda q: '"' + " " * (len(q.group(0)) - 2) + '"', text)
    return re.sub(r"'(?:\\.|[^'\\])'", lambda q: " " * len(q.group(0)), text)


def scan():
    """Operator name -> whether MXNet registers it with FListInputNames."""
    texts = list(_sources())
    macros = _macros(texts)
    registering = {n for n, b in macros.items() if _mentions(b, macros, "NNVM_REGISTER_OP")}
    registering.add("NNVM_REGISTER_OP")
    has, alias_of = {}, {}
    for text in texts:
        code = re.sub(r"#define[^\n]*", "", re.sub(r"//[^\n]*", "", text.replace("\\\n", " ")))
        blank = _blank_strings(code)
        for match in re.finditer(r"\b(\w+)\(\s*(\w+)\s*[,)]", code):
            macro, name = match.groups()
            if macro not in registering:
                continue
            chain = code[match.start() : _statement_end(blank, match.start() + len(macro))]
            has[name] = has.get(name, False) or _mentions(chain, macros, ATTR)
            alias_of.update(dict.fromkeys(re.findall(r'add_alias\("(\w+)"\)', chain), name))
        for name in re.findall(r"MXNET_REGISTER_OP_PROPERTY\((\w+)", text):
            has[name] = True  # legacy operators get their ListArguments as input names
    for alias, name in alias_of.items():
        has[alias] = has.get(name, False)
    return has


def main():
    has = scan()
    ours = [name for name, _ in registry.get_registry("operators").items()]
    print(sorted(name for name in ours if name in has and not has[name]))


if __name__ == "__main__":
    main()
