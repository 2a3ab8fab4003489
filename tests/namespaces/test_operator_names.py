"""Every MXNet 1.9.1 operator in scope exists in rebind, under the same names.

The names come from tests/namespaces/mxnet_operator_names.json, recorded from
MXNet: ``registered_operators`` (every name and alias of its operator
registry) and ``namespace_functions`` (the functions of mx.nd, mx.sym,
mx.nd.linalg, mx.nd.random, mx.sym.random, mx.random, and the fluent methods
of NDArray and Symbol). Scope and the few documented refusals are in
operator_scope.json, each with its reason.
"""

import json
from pathlib import Path

import pytest

import rebind as mx
from rebind import registry

HERE = Path(__file__).parent
RECORDED = json.loads((HERE / "mxnet_operator_names.json").read_text())
SCOPE = json.loads((HERE / "operator_scope.json").read_text())


def out_of_scope_reason(name):
    for prefix, reason in SCOPE["out_of_scope_prefixes"].items():
        if name.startswith(prefix):
            return reason
    return SCOPE["out_of_scope"].get(name)


IN_SCOPE = sorted(n for n in RECORDED["registered_operators"] if out_of_scope_reason(n) is None)

# namespace -> the rebind object whose attributes MXNet's functions must be
NAMESPACES = {
    "nd": lambda: mx.nd,
    "sym": lambda: mx.sym,
    "nd.linalg": lambda: mx.nd.linalg,
    "nd.random": lambda: mx.nd.random,
    "sym.random": lambda: mx.sym.random,
    "random": lambda: mx.random,
    "nd.NDArray": lambda: mx.nd.array([1.0, 2.0]),
    "sym.Symbol": lambda: mx.sym.Variable("x"),
}
FUNCTIONS = [
    (ns, name)
    for ns in NAMESPACES
    for name in RECORDED["namespace_functions"][ns]
    if out_of_scope_reason(name) is None
]


def test_the_recording_is_mxnet_1_9_1():
    assert RECORDED["mxnet_version"] == "1.9.1"
    assert len(IN_SCOPE) > 250


@pytest.mark.parametrize("name", IN_SCOPE)
def test_operator_is_registered(name):
    refused = SCOPE["not_implemented"].get(name)
    if refused is None:
        assert name in registry.get_registry("operators"), f"MXNet's operator {name} is missing"
        return
    with pytest.raises(NotImplementedError, match=refused[:40]):
        getattr(mx.nd, name)()


@pytest.mark.parametrize(("namespace", "name"), FUNCTIONS)
def test_namespace_function_exists(namespace, name):
    owner = NAMESPACES[namespace]()
    assert callable(getattr(owner, name)), f"mx.{namespace}.{name}"


@pytest.mark.parametrize("name", RECORDED["namespace_functions"]["nd.linalg"])
def test_symbolic_linalg_matches_ndarray_linalg(name):
    assert callable(getattr(mx.sym.linalg, name))


def test_set_aside_names_have_reasons():
    for reason in (*SCOPE["out_of_scope_prefixes"].values(), *SCOPE["out_of_scope"].values()):
        assert len(reason) > 30
