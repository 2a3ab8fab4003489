"""Every in-scope public name of MXNet 1.9.1 exists in rebind, or refuses honestly.

The names come from tests/namespaces/mxnet_public_names.json (recorded from
MXNet); scope is explained in names.py. Only the namespaces in COVERED are
checked: the others are completed by parallel work and join COVERED when it
lands (``python -m tests.namespaces.report`` lists what each one still lacks).
"""

import types

import pytest

from .names import (
    NOT_IMPLEMENTED,
    RECORDED,
    in_scope_names,
    matches_kind,
    out_of_scope_reason,
    target,
)

COVERED = [
    "optimizer",
    "model",
    "mx",
    "operator",
    "kvstore",
    "io",
    "callback",
    "context",
    "util",
    "runtime",
    "engine",
    "attribute",
    "base",
    "contrib.amp",
    "contrib.svrg_optimization",
    "executor",
    "image",
    "initializer",
    "lr_scheduler",
    "metric",
    "module",
    "monitor",
    "name",
    "nd",
    "nd.NDArray",
    "nd.random",
    "nd.sparse",
    "onnx",
    "profiler",
    "random",
    "recordio",
    "rnn",
    "sym",
    "sym.Symbol",
    "sym.random",
    "test_utils",
    "visualization",
]

CASES = [(ns, name) for ns in COVERED for name in in_scope_names(ns)]


def test_covered_namespaces_are_recorded_and_in_scope():
    for namespace in COVERED:
        assert namespace in RECORDED, namespace
        assert out_of_scope_reason(namespace) is None, namespace
        assert in_scope_names(namespace), namespace


def test_not_implemented_entries_are_recorded_in_scope_names():
    for key in NOT_IMPLEMENTED:
        namespace, _, name = key.rpartition(".")
        assert name in in_scope_names(namespace), key


def _refuses(owner, name, reason):
    """Access, then call or instantiate: one of them raises NotImplementedError with reason."""
    with pytest.raises(NotImplementedError) as info:
        obj = getattr(owner, name)
        assert callable(obj) and not isinstance(obj, types.ModuleType), (
            f"{name} is listed as not implemented but is a non-callable {type(obj).__name__}"
        )
        obj()
    assert reason in str(info.value)


@pytest.mark.parametrize(("namespace", "name"), CASES, ids=[f"{n}.{m}" for n, m in CASES])
def test_public_name(namespace, name):
    owner = target(namespace)
    reason = NOT_IMPLEMENTED.get(f"{namespace}.{name}")
    if reason is not None:
        _refuses(owner, name, reason)
        return
    obj = getattr(owner, name)
    kind = RECORDED[namespace][name]["kind"]
    assert matches_kind(obj, kind), f"{namespace}.{name}: MXNet's is a {kind}, rebind's {obj!r}"


def _module_aliases():
    """(namespace, name, MXNet module path) for module names that alias another name."""
    return [
        (ns, name, facts["origin"])
        for ns, entries in RECORDED.items()
        for name, facts in entries.items()
        if facts["kind"] == "module"
        and facts["origin"].rsplit(".", 1)[-1] != name
        and name in in_scope_names(ns)
    ]


@pytest.mark.parametrize(("namespace", "name", "origin"), _module_aliases())
def test_module_aliases_point_where_mxnets_do(namespace, name, origin):
    owner = target(namespace)
    if not hasattr(owner, name):
        pytest.skip(f"{namespace}.{name} is not in rebind yet (see the report)")
    home = "rebind" + origin[len("mxnet") :]
    assert getattr(owner, name).__name__ == home
