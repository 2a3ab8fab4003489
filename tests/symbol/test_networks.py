"""Networks of issue 13's operators against MXNet 1.9.1: JSON bytes, forward, backward.

tests/recording/record_networks.py composed them in MXNet (definitions in
tests/symbol/networks, shared with this test) and recorded their JSON, inputs,
training outputs and gradients.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import rebind as mx
from tests.ops.harness import assert_close
from tests.symbol.networks import builders

DATA = Path(__file__).parent / "data"
RECORDED = json.loads((DATA / "networks.json").read_text())["networks"]
NETWORK_TOLERANCE = (2e-4, 2e-5)


@pytest.fixture(scope="module")
def arrays():
    with np.load(DATA / "networks.npz") as npz:
        return {key: npz[key] for key in npz.files}


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_composed_json_is_mxnets(name):
    symbol, _, _ = builders(mx)[name]()
    assert symbol.tojson() == RECORDED[name]["json"]


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_loaded_json_writes_back_identically(name):
    assert mx.sym.load_json(RECORDED[name]["json"]).tojson() == RECORDED[name]["json"]


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_forward_and_backward_match_mxnet(name, ctx, arrays):
    symbol = mx.sym.load_json(RECORDED[name]["json"])
    shapes = {k: tuple(v) for k, v in RECORDED[name]["shapes"].items()}
    executor = symbol.simple_bind(ctx, grad_req="write", **shapes)
    for arg in symbol.list_arguments():
        executor.arg_dict[arg][:] = arrays[f"{name}.arg.{arg}"]
    outputs = executor.forward(is_train=True)
    for i, out in enumerate(outputs):
        assert_close(
            out.asnumpy(), arrays[f"{name}.out.{i}"], f"{name} output {i}", NETWORK_TOLERANCE
        )
    executor.backward()
    for arg in symbol.list_arguments():
        key = f"{name}.grad.{arg}"
        if key in arrays:
            got = executor.grad_dict[arg].asnumpy()
            assert_close(got, arrays[key], f"{name} gradient of {arg}", NETWORK_TOLERANCE)
