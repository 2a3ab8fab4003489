"""The golden cases of issue 13's operators, as a whole.

* Every recorded symbol composes in rebind to MXNet's ``tojson()``, byte for byte.
* Every case definition in ``tests/ops/cases/`` was recorded (the recordings
  are not stale), and every recorded case's operator exists in rebind.
"""

import importlib
import json
import pkgutil

import pytest

import rebind as mx
from rebind import registry
from tests.conftest import GOLDEN
from tests.ops import cases as case_package


def _families():
    return sorted(m.name for m in pkgutil.iter_modules(case_package.__path__))


def _definitions():
    found = {}
    for family in _families():
        module = importlib.import_module(f"tests.ops.cases.{family}")
        for case in module.CASES:
            found[case["id"]] = (family, case)
    return found


def _recorded(family):
    path = GOLDEN / "ops_extra" / f"{family}.json"
    return json.loads(path.read_text())["cases"] if path.exists() else []


def _composable():
    return sorted(c["id"] for f in _families() for c in _recorded(f) if not c.get("imperative"))


def compose(case):
    """The rebind symbol for a case definition, built as the recorder builds MXNet's."""
    func = mx.sym  # a dotted sym_func ("linalg.syevd") names a submodule's function
    for part in case["sym_func"].split("."):
        func = getattr(func, part)
    variables = [mx.sym.Variable(name) for name in case["args"]]
    if case["positional"]:
        return func(*variables, name=case["node_name"], **case["attrs"])
    named = dict(zip(case["args"], variables, strict=True))
    return func(name=case["node_name"], **named, **case["attrs"])


@pytest.mark.parametrize("case_id", _composable())
def test_symbol_json_is_mxnets(case_id):
    family, definition = _definitions()[case_id]
    recorded = {c["id"]: c for c in _recorded(family)}[case_id]
    assert compose(definition).tojson() == recorded["symbol_json"]


@pytest.mark.parametrize("family", _families())
def test_every_case_definition_is_recorded(family):
    module = importlib.import_module(f"tests.ops.cases.{family}")
    recorded = {c["id"]: c for c in _recorded(family)}
    assert sorted(recorded) == sorted(c["id"] for c in module.CASES), (
        f"re-run tests/recording/record_ops.py {family}"
    )
    for case in module.CASES:
        assert recorded[case["id"]]["op"] == case["op"]
        assert recorded[case["id"]]["sym_func"] == case["sym_func"]


@pytest.mark.parametrize("family", _families())
def test_recorded_operators_exist(family):
    operators = registry.get_registry("operators")
    missing = sorted({c["op"] for c in _recorded(family)} - set(operators.names()))
    assert not missing, f"recorded operators rebind lacks: {missing}"


# operators without a recorded case, and why MXNet could not record one
NO_GOLDEN = {
    "Custom": "runs the user's Python operator; test_custom.py checks MXNet's custom-op protocol",
    "_NoGradient": "a placeholder MXNet's graph puts where no gradient flows; not runnable alone",
    "_CrossDeviceCopy": "inserted by MXNet's graph between devices (group2ctx); not runnable alone",
    "_broadcast_backward": "the reduction MXNet's graph builds for broadcast gradients; internal",
    "_square_sum": "MXNet 1.9.1 computes it for row_sparse input only; dense input fails there",
    "_zeros_without_dtype": "MXNet cannot infer its dtype when it stands alone in a graph",
    # sparse inputs: recorded from MXNet in tests/golden/sparse_ops and sparse_update_ops
    # (replayed by tests/ops/test_sparse_golden.py and test_sparse_update_ops.py)
    "_contrib_SparseEmbedding": "row_sparse gradient: recorded in tests/golden/sparse_ops",
    "_contrib_getnnz": "csr input: recorded in tests/golden/sparse_ops",
    "_sparse_retain": "row_sparse input: recorded in tests/golden/sparse_ops",
    "_sparse_adagrad_update": "row_sparse only: recorded in tests/golden/sparse_update_ops",
    "_contrib_group_adagrad_update": "row_sparse only: recorded in tests/golden/sparse_update_ops",
    "_contrib_edge_id": "csr graphs: test_contrib_graph.py checks MXNet's printed values",
    "_contrib_dgl_adjacency": "csr graphs: test_contrib_dgl.py checks MXNet's printed values",
    "_contrib_dgl_subgraph": "csr graphs: test_contrib_dgl.py checks MXNet's printed values",
    "_contrib_dgl_graph_compact": "csr graphs: test_contrib_dgl.py checks MXNet's printed values",
    "_contrib_dgl_csr_neighbor_uniform_sample": "random draws MXNet re-seeds per vertex; "
    "test_contrib_dgl_sample.py checks what every sample must satisfy",
    "_contrib_dgl_csr_neighbor_non_uniform_sample": "random draws MXNet re-seeds per vertex; "
    "test_contrib_dgl_sample.py checks what every sample must satisfy",
    "_contrib_count_sketch": "MXNet 1.9.1 runs it on a GPU only; checked by definition",
    "_contrib_fft": "MXNet 1.9.1 runs it on a GPU only; checked against numpy.fft",
    "_contrib_ifft": "MXNet 1.9.1 runs it on a GPU only; checked against numpy.fft",
    "_contrib_boolean_mask": "its output shape depends on values, so MXNet cannot bind it "
    "in a recorded graph; test_contrib_misc.py checks it by definition",
}


def test_every_operator_in_scope_has_golden_cases():
    from tests.namespaces.test_operator_names import IN_SCOPE
    from tests.ops.harness import golden_cases

    operators = registry.get_registry("operators")
    recorded = {id(operators.get(c["op"])) for c in golden_cases().values() if c["op"] in operators}
    lacking = {
        operators.get(n).name
        for n in IN_SCOPE
        if n in operators and id(operators.get(n)) not in recorded
    }
    assert lacking == set(NO_GOLDEN)
