"""Each operator rebind has takes MXNet 1.9.1's parameters, under MXNet's names.

mxnet_operator_signatures.json holds MXNet's own description of every
registered operator (tests/recording/record_op_signatures.py): the operator
behind each alias, its inputs and its parameters. rebind must use one
implementation per MXNet operator (an alias is the same OpDef), accept exactly
MXNet's parameter names, and take the inputs MXNet takes where they do not
depend on parameters.
"""

import json
from pathlib import Path

import attrs
import pytest

from rebind import registry
from rebind.ops import ParamError

from .test_operator_names import out_of_scope_reason

SIGNATURES = json.loads((Path(__file__).parent / "mxnet_operator_signatures.json").read_text())[
    "operators"
]

# operator -> (parameters rebind adds, parameters rebind lacks, why)
KNOWN_DIFFERENCES = {
    "_linspace": (
        {"num", "endpoint"},
        {"infer_range", "repeat", "step"},
        "MXNet describes _linspace with _arange's parameter list, but parses "
        "start/stop/num/endpoint (init_op.cc: ParamParser<LinspaceParam>); rebind takes those",
    ),
    "_broadcast_backward": (
        {"axis", "exclude", "keepdims"},
        set(),
        "MXNet lists no parameters for it but its kernel reads a reduction's axes",
    ),
    "_contrib_SparseEmbedding": (
        {"deterministic"},
        set(),
        "MXNet lists Embedding's parameters (sparse_grad) for it but parses "
        "SparseEmbeddingParam (indexing_op.cc): deterministic=True is taken, sparse_grad refused",
    ),
}
for _cholesky in ("_linalg_potrf", "_linalg_potri"):
    KNOWN_DIFFERENCES[_cholesky] = (
        {"lower"},
        set(),
        "MXNet parses `lower` (la_op.cc: ParamParser<LaCholeskyParam>) but does not list it",
    )
OPEN_ENDED = {"Custom"}  # op_type plus the custom operator's own keywords


def _in_scope_rebind_operators():
    operators = registry.get_registry("operators")
    return sorted(n for n in SIGNATURES if out_of_scope_reason(n) is None and n in operators)


NAMES = _in_scope_rebind_operators()


@pytest.mark.parametrize("name", NAMES)
def test_alias_is_the_same_operator(name):
    operators = registry.get_registry("operators")
    real = SIGNATURES[name]["real_name"]
    if real in operators:
        assert operators.get(name) is operators.get(real), f"{name} should alias {real}"


@pytest.mark.parametrize("name", [n for n in NAMES if SIGNATURES[n]["real_name"] not in OPEN_ENDED])
def test_parameters_are_mxnets(name):
    op = registry.lookup("operators", name)
    info = SIGNATURES[name]
    ours = {f.name for f in attrs.fields(op.params)}
    theirs = set(info["params"]) | ({info["key_var_num_args"]} - {""})
    added, lacking, _ = KNOWN_DIFFERENCES.get(info["real_name"], (set(), set(), ""))
    assert ours - theirs == added, f"{name}: parameters MXNet does not have"
    assert theirs - ours == lacking, f"{name}: MXNet's parameters rebind lacks"


def _fixed_inputs(name):
    """MXNet's inputs of ``name`` when they do not depend on parameters, else None."""
    inputs = SIGNATURES[name]["inputs"]
    return None if any(i.endswith("[]") for i in inputs) else inputs


def _is_subsequence(items, sequence):
    remaining = iter(sequence)
    return all(item in remaining for item in items)


@pytest.mark.parametrize("name", [n for n in NAMES if _fixed_inputs(n) is not None])
def test_inputs_are_mxnets(name):
    """With default parameters, the inputs are MXNet's, in its order.

    MXNet lists every input an operator may take (SequenceLast's ``length``
    only with use_sequence_length=True), and the aux states of most (not the
    legacy BatchNorm_v1's); internal operators (_CrossDeviceCopy) list none.
    """
    op = registry.lookup("operators", name)
    try:
        params = op.parse({})
    except ParamError as exc:
        pytest.skip(f"no default parameters: {exc}")
    theirs = _fixed_inputs(name)
    if not theirs:
        pytest.skip("MXNet describes no inputs for this internal operator")
    aux = [a for a in op.aux_states(params) if a in theirs]
    ours = [*op.arguments(params), *aux]
    assert _is_subsequence(ours, _fixed_inputs(name)), f"{ours} within {_fixed_inputs(name)}"
