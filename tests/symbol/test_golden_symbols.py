"""Whole networks recorded from MXNet 1.9.1: structure, JSON, inference, forward, backward."""

import json

import numpy as np
import pytest

import rebind as mx
from tests.conftest import GOLDEN
from tests.ops.harness import assert_close

CASES = json.loads((GOLDEN / "manifest.json").read_text())["categories"]["symbols"]["cases"]
IDS = [case["id"] for case in CASES]
# whole networks accumulate float32 rounding over many ops
NETWORK_TOLERANCE = (2e-4, 2e-5)


def _case(case_id):
    return next(c for c in CASES if c["id"] == case_id)


def _load(case):
    return mx.sym.load(GOLDEN / case["file"])


def _arrays(case):
    with np.load(GOLDEN / case["forward_file"]) as npz:
        return {key: npz[key] for key in npz.files}


@pytest.mark.parametrize("case_id", IDS)
def test_structure(case_id):
    case = _case(case_id)
    symbol = _load(case)
    assert symbol.list_arguments() == case["list_arguments"]
    assert symbol.list_outputs() == case["list_outputs"]
    assert symbol.list_auxiliary_states() == case["list_auxiliary_states"]
    assert symbol.get_internals().list_outputs() == case["internals_outputs"]
    assert symbol.attr_dict() == case["attr_dict"]


@pytest.mark.parametrize("case_id", IDS)
def test_tojson_is_byte_identical(case_id, tmp_path):
    case = _case(case_id)
    text = (GOLDEN / case["file"]).read_text()
    symbol = mx.sym.load_json(text)
    assert symbol.tojson() == text
    symbol.save(tmp_path / "again-symbol.json")
    assert (tmp_path / "again-symbol.json").read_text() == text
    assert mx.sym.load(tmp_path / "again-symbol.json").list_outputs() == case["list_outputs"]


@pytest.mark.parametrize("case_id", IDS)
def test_infer_shape_and_type(case_id):
    case = _case(case_id)
    symbol = _load(case)
    arg_shapes, out_shapes, aux_shapes = symbol.infer_shape(**case["infer_shape_inputs"])
    expected = case["infer_shape"]
    assert (
        dict(zip(symbol.list_arguments(), map(list, arg_shapes), strict=True))
        == expected["arg_shapes"]
    )
    assert [list(s) for s in out_shapes] == expected["out_shapes"]
    assert (
        dict(zip(symbol.list_auxiliary_states(), map(list, aux_shapes), strict=True))
        == expected["aux_shapes"]
    )
    partial = symbol.infer_shape_partial(**case["infer_shape_inputs"])
    assert partial == (arg_shapes, out_shapes, aux_shapes)
    arg_types, out_types, aux_types = symbol.infer_type()
    types = case["infer_type"]
    assert [t.__name__ for t in arg_types] == [
        types["arg_types"][n] for n in symbol.list_arguments()
    ]
    assert [t.__name__ for t in out_types] == types["out_types"]
    assert [t.__name__ for t in aux_types] == [
        types["aux_types"][n] for n in symbol.list_auxiliary_states()
    ]


def _bind(symbol, case, data, ctx, with_grads):
    args = {
        n: mx.nd.array(data[f"arg.{n}"], ctx=ctx, dtype=data[f"arg.{n}"].dtype)
        for n in symbol.list_arguments()
    }
    aux = {
        n: mx.nd.array(data[f"aux.{n}"], ctx=ctx, dtype=data[f"aux.{n}"].dtype)
        for n in symbol.list_auxiliary_states()
    }
    grads = (
        {
            n: mx.nd.zeros(a.shape, ctx=ctx, dtype=a.dtype)
            for n, a in args.items()
            if case["grad_req"].get(n, "null") != "null"
        }
        if with_grads
        else None
    )
    return symbol.bind(ctx, args, args_grad=grads, grad_req=case["grad_req"], aux_states=aux)


@pytest.mark.parametrize("case_id", IDS)
def test_forward_backward_match_mxnet(case_id, ctx):
    case = _case(case_id)
    symbol, data = _load(case), _arrays(case)
    executor = _bind(symbol, case, data, ctx, with_grads=True)
    outputs = executor.forward(is_train=True)
    for i, out in enumerate(outputs):
        assert_close(out.asnumpy(), data[f"out.{i}"], f"{case_id} output {i}", NETWORK_TOLERANCE)
    heads = [mx.nd.array(data[f"head_grad.{i}"], ctx=ctx) for i in range(len(outputs))]
    executor.backward(heads)
    for name, grad in executor.grad_dict.items():
        assert_close(
            grad.asnumpy(), data[f"grad.{name}"], f"{case_id} gradient {name}", NETWORK_TOLERANCE
        )
    for name, array in executor.aux_dict.items():
        assert_close(
            array.asnumpy(), data[f"aux_after.{name}"], f"{case_id} aux {name}", NETWORK_TOLERANCE
        )


@pytest.mark.parametrize("case_id", IDS)
def test_inference_matches_mxnet(case_id, ctx):
    case = _case(case_id)
    symbol, data = _load(case), _arrays(case)
    executor = _bind(symbol, case, data, ctx, with_grads=False)
    for i, out in enumerate(executor.forward(is_train=False)):
        expected = data.get(f"out_infer.{i}", data[f"out.{i}"])
        assert_close(out.asnumpy(), expected, f"{case_id} inference output {i}", NETWORK_TOLERANCE)
