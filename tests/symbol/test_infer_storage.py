"""Storage-type inference over symbols (rebind.symbol.infer_storage).

Expected storage types are MXNet 1.9.1's, from the symbolic cases recorded in
tests/golden/sparse_ops/symbolic.json (what its executors held after binding).
"""

import json
import os

import pytest

import rebind as mx
from rebind.base import MXNetError
from rebind.symbol.infer_storage import infer_storage_type

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden", "sparse_ops", "symbolic.json")
with open(GOLDEN) as handle:
    CASES = [c for c in json.load(handle)["cases"] if "error" not in c]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_matches_mxnet_bound_storage(case):
    symbol = mx.sym.load_json(case["symbol"])
    args, outs, _ = infer_storage_type(symbol, **(case["stype_dict"] or {}))
    assert dict(zip(symbol.list_arguments(), args, strict=True)) == case["arg_stypes"]
    assert outs == case["out_stypes"]


def test_stype_attribute_survives_json_and_given_stypes_override_it():
    x = mx.sym.Variable("x", stype="csr")
    sym = mx.sym.sparse.dot(x, mx.sym.Variable("w"), transpose_a=True)
    loaded = mx.sym.load_json(sym.tojson())
    assert loaded.get_internals()["x"].attr("__storage_type__") == "2"
    assert infer_storage_type(loaded) == (["csr", "default"], ["row_sparse"], [])
    assert infer_storage_type(loaded, x="default") == (["default", "default"], ["default"], [])


def test_an_operator_without_a_kernel_for_its_inputs_fails_inference():
    sym = mx.sym.clip(mx.sym.Variable("x", stype="csr"), a_min=1, a_max=2)
    with pytest.raises(MXNetError, match="operator = clip"):
        infer_storage_type(sym)
    with pytest.raises(MXNetError, match="operator = clip"):
        sym.simple_bind(mx.cpu(), x=(2, 2))
