"""The documentation site builds in strict mode, and its reference covers every public name.

``mkdocs build --strict`` fails on any warning: a broken link or anchor, a
reference that does not resolve, a docstring griffe cannot parse. The test extra
installs mkdocs, mkdocs-material and mkdocstrings, so CI always runs this test;
without them it is skipped, naming the extra.
"""

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import types

import pytest

import rebind
from rebind import registry

from .blocks import ROOT

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None,
    reason="mkdocs and mkdocstrings are not installed (pip install -e '.[docs]' or '.[test]')",
)

# every namespace with a reference page (docs/reference/*.md), as Python imports it
NAMESPACES = [
    "rebind",
    "rebind.ndarray",
    "rebind.ndarray.random",
    "rebind.ndarray.linalg",
    "rebind.ndarray.image",
    "rebind.ndarray.contrib",
    "rebind.ndarray.utils",
    "rebind.symbol",
    "rebind.symbol.random",
    "rebind.symbol.linalg",
    "rebind.symbol.image",
    "rebind.symbol.contrib",
    "rebind.executor",
    "rebind.module",
    "rebind.io",
    "rebind.kvstore",
    "rebind.optimizer",
    "rebind.lr_scheduler",
    "rebind.initializer",
    "rebind.metric",
    "rebind.callback",
    "rebind.model",
    "rebind.rnn",
    "rebind.image",
    "rebind.recordio",
    "rebind.onnx",
    "rebind.profiler",
    "rebind.visualization",
    "rebind.contrib",
    "rebind.contrib.amp",
    "rebind.contrib.svrg_optimization",
    "rebind.test_utils",
    "rebind.operator",
    "rebind.random",
    "rebind.context",
    "rebind.base",
    "rebind.util",
    "rebind.runtime",
    "rebind.engine",
    "rebind.monitor",
    "rebind.name",
    "rebind.attribute",
    "rebind.registry",
    "rebind.hookspecs",
    "rebind.alias",
]
FAMILIES = ("optimizers", "initializers", "metrics", "kvstores")
# operator functions are made at import; their sub-namespace -> the registered name's prefix
OPERATOR_MODULES = ("rebind.ndarray.imperative", "rebind.symbol.compose")
FILED_PREFIX = {"linalg": "_linalg_", "image": "_image_", "contrib": "_contrib_"}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built once with ``mkdocs build --strict``, as on a fresh checkout."""
    out = tmp_path_factory.mktemp("site")
    # without the package tree the hook assembles: a new clone's first build must work
    shutil.rmtree(ROOT / "build" / "docs-src", ignore_errors=True)
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    return out


def resolve(path):
    """The object an inventory name denotes, or None."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


@pytest.fixture(scope="module")
def documented(site):
    """ids of every object the reference documents (its objects.inv)."""
    from mkdocstrings import Inventory

    with open(site / "objects.inv", "rb") as handle:
        names = list(Inventory.parse_sphinx(handle))
    return {id(obj) for obj in map(resolve, names) if obj is not None}


@pytest.fixture(scope="module")
def operator_anchors(site):
    """The anchors of the generated operator page."""
    html = (site / "reference" / "operators" / "index.html").read_text()
    return set(re.findall(r'id="([^"]+)"', html))


def is_ours(obj):
    """Whether ``obj`` is rebind's (not numpy, os, OrderedDict re-exported for MXNet's sake)."""
    name = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", "")
    return (name or "").startswith("rebind")


def public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:  # hookspecs: the functions it defines
        names = [
            n for n, v in vars(module).items() if getattr(v, "__module__", "") == module.__name__
        ]
    return [n for n in names if not n.startswith("_")]


def undocumented(module, documented, anchors, seen=None):
    """The public names of ``module`` without a reference entry."""
    seen = set() if seen is None else seen
    missing = []
    for name in public_names(module):
        obj = getattr(module, name)
        if not is_ours(obj) or id(obj) in documented or id(obj) in seen:
            continue
        seen.add(id(obj))
        if getattr(obj, "__module__", None) in OPERATOR_MODULES:
            family = module.__name__.rsplit(".", 1)[-1]
            if FILED_PREFIX.get(family, "") + name in anchors or name in anchors:
                continue
        elif isinstance(obj, types.ModuleType):  # an MXNet import path: its names count
            if not undocumented(obj, documented, anchors, seen):
                continue
        missing.append(f"{module.__name__}.{name}")
    return missing


def test_every_public_name_has_a_reference_entry(documented, operator_anchors):
    missing = []
    for namespace in NAMESPACES:
        missing += undocumented(importlib.import_module(namespace), documented, operator_anchors)
    assert not missing, f"no reference entry for {missing}; add them to docs/reference/"


def test_every_registered_class_has_a_reference_entry(documented):
    missing = []
    for family in FAMILIES:
        table = registry.get_registry(family)
        for name in table.names():
            implementation = table.get(name)
            # classes users name (mx.optimizer.SGD); kvstore factories and private helpers
            # (SVRG's _AssignmentOptimizer) are documented through their modules
            if not isinstance(implementation, type) or implementation.__name__.startswith("_"):
                continue
            if is_ours(implementation) and id(implementation) not in documented:
                missing.append(f"{family}: {name} ({implementation!r})")
    assert not missing, missing


def test_every_operator_has_an_entry(operator_anchors):
    names = set(registry.get_registry("operators").names())
    assert names - operator_anchors == set()
    assert len(names) > 400


def test_reference_pages_are_in_the_navigation(site):
    pages = {path.stem for path in (ROOT / "docs" / "reference").glob("*.md")}
    built = {path.parent.name for path in (site / "reference").glob("*/index.html")}
    assert pages - {"index"} <= built
    assert rebind.__version__ in (site / "reference" / "operators" / "index.html").read_text()
