"""core/ keeps MXNet's namespaces as packages and its modules free of import circles."""

import ast
import collections
import importlib
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core"


def _modules():
    found = {}
    for path in CORE.rglob("*.py"):
        parts = list(path.relative_to(CORE).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join(["rebind", *parts])] = (path, is_package)
    return found


def _edges(modules, anywhere):
    """module -> the rebind modules it imports (at the top level, or also inside functions)."""
    graph = collections.defaultdict(set)
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text())
        nodes = ast.walk(tree) if anywhere else tree.body
        for node in nodes:
            if not (isinstance(node, ast.ImportFrom) and node.level):
                continue
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
            for candidate in (target, *(f"{target}.{a.name}" for a in node.names)):
                if candidate in modules and candidate != name:
                    graph[name].add(candidate)
    return graph


def _circles(graph, modules):
    """Circles among plain modules (a package's __init__ importing its children is no circle)."""
    circles, done = [], set()

    def visit(node, path):
        for nxt in sorted(graph[node]):
            if nxt in path:
                circle = path[path.index(nxt) :] + [nxt]
                if not any(modules[m][1] for m in circle):
                    circles.append(" -> ".join(circle))
            elif (node, nxt) not in done:
                done.add((node, nxt))
                visit(nxt, path + [nxt])

    for start in sorted(graph):
        visit(start, [start])
    return circles


def test_no_module_imports_itself_back_at_import_time():
    modules = _modules()
    assert _circles(_edges(modules, anywhere=False), modules) == []


@pytest.mark.parametrize(
    "first, second",
    [
        ("rebind.executor.binding", "rebind.executor.executor"),
        ("rebind.module.base", "rebind.module.training"),
        ("rebind.optimizer.optimizer", "rebind.optimizer.updater"),
        ("rebind.optimizer.updater", "rebind.optimizer.states"),
    ],
)
def test_the_former_circles_stay_open_even_inside_functions(first, second):
    modules = _modules()
    graph = _edges(modules, anywhere=True)
    there, back = _reachable(graph, first, modules), _reachable(graph, second, modules)
    assert not (second in there and first in back)


def _reachable(graph, start, modules):
    """Plain modules reachable from ``start`` (not through package __init__ files)."""
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            if not modules[nxt][1]:
                seen.add(nxt)
                todo.append(nxt)
    return seen


@pytest.mark.parametrize(
    "path, attribute",
    [
        ("rebind.io", "NDArrayIter"),
        ("rebind.io", "DataBatch"),
        ("rebind.optimizer", "Optimizer"),
        ("rebind.optimizer", "get_updater"),
        ("rebind.optimizer", "Updater"),
        ("rebind.lr_scheduler", "FactorScheduler"),
        ("rebind.kvstore", "create"),
        ("rebind.callback", "Speedometer"),
        ("rebind.callback", "do_checkpoint"),
        ("rebind.monitor", "Monitor"),
        ("rebind.module.executor_group", "DataParallelExecutorGroup"),
        ("rebind.executor", "Executor"),
    ],
)
def test_the_import_paths_mxnet_users_write_keep_working(path, attribute):
    assert callable(getattr(importlib.import_module(path), attribute))


@pytest.mark.parametrize("namespace", ["io", "optimizer", "kvstore", "callback", "contrib"])
def test_namespaces_with_several_files_are_packages(namespace):
    assert (CORE / namespace / "__init__.py").is_file()
    assert not (CORE / f"{namespace}.py").exists()
