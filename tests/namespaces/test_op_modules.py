"""``mx.nd._internal``, ``mx.nd.op``, ``mx.sym._internal``, ``mx.sym.op`` file operators as MXNet.

mxnet_op_modules.json records the operator functions of those four modules in
MXNet 1.9.1 (tests/recording/record_op_modules.py); rebind must place every
in-scope operator it has in the same module, and nowhere else.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import rebind as mx
from rebind import registry
from rebind.op_namespaces import is_internal, is_public

from .test_operator_names import out_of_scope_reason

RECORDED = json.loads((Path(__file__).parent / "mxnet_op_modules.json").read_text())["modules"]
OPERATORS = set(
    json.loads((Path(__file__).parent / "mxnet_operator_names.json").read_text())[
        "registered_operators"
    ]
)


@pytest.mark.parametrize("module", sorted(RECORDED))
def test_placement_is_mxnets(module):
    accepts = is_internal if module.endswith("_internal") else is_public
    mxnet = {n for n in RECORDED[module] if n in OPERATORS and out_of_scope_reason(n) is None}
    ours = {n for n in OPERATORS if out_of_scope_reason(n) is None and accepts(n)}
    assert ours == mxnet


@pytest.mark.parametrize("module", ["nd._internal", "nd.op", "sym._internal", "sym.op"])
def test_every_operator_rebind_has_is_reachable(module):
    namespace, name = module.split(".")
    owner = getattr(getattr(mx, namespace), name)
    have = set(registry.get_registry("operators").names())
    expected = sorted(n for n in RECORDED[module] if n in have)
    assert expected and all(callable(getattr(owner, n)) for n in expected)
    assert sorted(n for n in dir(owner) if n in have) == sorted(
        n for n in have if (is_internal if name == "_internal" else is_public)(n)
    )


def test_internal_functions_compute_as_the_operator():
    x = mx.nd.array([1.0, -2.0])
    np.testing.assert_array_equal(mx.nd._internal._plus_scalar(x, scalar=3).asnumpy(), [4, 1])
    np.testing.assert_array_equal(mx.nd.op.relu(x).asnumpy(), [1, 0])
    v = mx.sym.Variable("x")
    assert (
        mx.sym._internal._mul_scalar(v, scalar=2, name="m").tojson()
        == mx.sym._mul_scalar(v, scalar=2, name="m").tojson()
    )


def test_names_outside_a_module_are_not_there():
    with pytest.raises(AttributeError, match="relu"):
        mx.nd._internal.relu  # noqa: B018
    with pytest.raises(AttributeError, match="_plus_scalar"):
        mx.sym.op._plus_scalar  # noqa: B018
    with pytest.raises(AttributeError, match="no such operator"):
        mx.nd._internal._no_such_operator  # noqa: B018


def test_contrib_names_reach_the_operators_registered_under_contrib():
    data, label = mx.sym.Variable("d"), mx.sym.Variable("l")
    # MXNet 1.9.1 writes the operator's real name, and names the node by the function
    composed = mx.sym.contrib.CTCLoss(data, label, name="c")
    assert [n["op"] for n in json.loads(composed.tojson())["nodes"]] == ["null", "null", "CTCLoss"]
    assert mx.sym.contrib.ctc_loss(data, label).name.startswith("ctc_loss")
    assert "CTCLoss" in dir(mx.nd.contrib)
    with pytest.raises(AttributeError, match="no such operator"):
        mx.nd.contrib.quantized_conv  # noqa: B018 - a contrib operator rebind lacks
