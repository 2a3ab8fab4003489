"""mx.operator.get_operator_arguments: inputs and parameters in MXNet's words.

Expected strings come from MXNet 1.9.1 itself: its test_get_operator_arguments,
and tests/namespaces/mxnet_operator_signatures.json (recorded from its C
registry by tests/recording/record_op_signatures.py).
"""

import json
from pathlib import Path

import pytest

import rebind as mx
from rebind.errors import UnknownNameError
from rebind.operator import OperatorArguments, get_operator_arguments

SIGNATURES = json.loads(
    (Path(__file__).parent / "namespaces" / "mxnet_operator_signatures.json").read_text()
)["operators"]


def test_activation_as_mxnets_own_test():
    arguments = get_operator_arguments("Activation")
    assert isinstance(arguments, OperatorArguments)
    assert arguments.names == ["data", "act_type"]
    assert arguments.types == [
        "NDArray-or-Symbol",
        "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required",
    ]
    assert arguments.narg == 2
    assert mx.operator.get_operator_arguments is get_operator_arguments


@pytest.mark.parametrize(
    "name",
    # operators whose every input and parameter rebind describes as MXNet does
    ["FullyConnected", "Dropout", "SoftmaxOutput", "Pooling", "Concat", "LayerNorm",
     "SliceChannel", "clip", "broadcast_to", "argsort", "batch_dot", "adam_update"],
)  # fmt: skip
def test_descriptions_match_mxnets_registry(name):
    recorded = SIGNATURES[name]
    arguments = get_operator_arguments(name)
    inputs = [
        (i.rstrip("[]"), "NDArray-or-Symbol" + ("[]" if i.endswith("[]") else ""))
        for i in recorded["inputs"]
    ]
    expected = inputs + list(recorded["params"].items())
    assert sorted(zip(arguments.names, arguments.types, strict=True)) == sorted(expected)
    assert arguments.narg == len(expected)
    # inputs come first, in MXNet's order
    assert arguments.names[: len(inputs)] == [name for name, _ in inputs]


def test_an_alias_describes_its_operator_and_unknown_names_fail():
    assert get_operator_arguments("concat") == get_operator_arguments("Concat")
    with pytest.raises(UnknownNameError, match="unknown operator 'NoSuchOp'"):
        get_operator_arguments("NoSuchOp")
