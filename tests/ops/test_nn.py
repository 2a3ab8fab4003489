"""FullyConnected and Activation: golden cases, finite differences, inference."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden


@pytest.mark.parametrize("case_id", case_ids("FullyConnected", "Activation"))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


@pytest.mark.parametrize(
    "attrs, shapes",
    [
        ({"num_hidden": "3"}, [(2, 4), (3, 4), (3,)]),
        ({"num_hidden": "3", "no_bias": "True"}, [(2, 2, 2), (3, 4)]),
        ({"num_hidden": "3", "flatten": "False"}, [(2, 5, 4), (3, 4), (3,)]),
    ],
)
def test_fully_connected_numeric_gradient(attrs, shapes, ctx):
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(s) for s in shapes]
    check_numeric_gradient("FullyConnected", attrs, inputs, ctx)


@pytest.mark.parametrize("act_type", ["relu", "sigmoid", "tanh", "softrelu", "softsign"])
def test_activation_numeric_gradient(act_type, ctx):
    rng = np.random.default_rng(2)
    data = rng.standard_normal((3, 4))
    data[np.abs(data) < 1e-3] = 0.5  # keep relu away from its kink
    check_numeric_gradient("Activation", {"act_type": act_type}, [data], ctx)


def test_fully_connected_infers_weight_and_bias_from_data():
    ins, outs, _ = infer("FullyConnected", {"num_hidden": "10"}, [(8, 3, 5), None, None])
    assert ins == [(8, 3, 5), (10, 15), (10,)] and outs == [(8, 10)]
    ins, outs, _ = infer(
        "FullyConnected", {"num_hidden": "10", "flatten": "False"}, [(8, 3, 5), None, None]
    )
    assert ins[1] == (10, 5) and outs == [(8, 3, 10)]


def test_fully_connected_learns_batch_size_from_output():
    ins, outs, _ = infer(
        "FullyConnected", {"num_hidden": "4"}, [(0, 6), None, None], out_shapes=[(5, 4)]
    )
    assert ins[0] == (5, 6) and outs == [(5, 4)]


def test_fully_connected_wrong_weight_shape_names_node_argument_and_shapes():
    with pytest.raises(ShapeError) as info:
        infer("FullyConnected", {"num_hidden": "4"}, [(2, 7), (4, 5), None])
    message = str(info.value)
    assert "node0" in message and "'weight'" in message
    assert "(4, 5)" in message and "(4, 7)" in message and "data=(2, 7)" in message


@pytest.mark.parametrize(
    "attrs, fragment",
    [
        ({}, "required parameter 'num_hidden'"),
        ({"num_hidden": "0"}, "num_hidden must be positive"),
        ({"num_hidden": "x"}, "num_hidden='x' is invalid"),
        ({"num_hidden": "2", "flaten": "True"}, "unknown parameter 'flaten'"),
    ],
)
def test_fully_connected_bad_params(attrs, fragment):
    with pytest.raises(ParamError, match=fragment):
        opdef("FullyConnected").parse(attrs)


def test_activation_rejects_unknown_act_type():
    with pytest.raises(ParamError, match="act_type='gelu'"):
        opdef("Activation").parse({"act_type": "gelu"})


def test_activation_shape_mismatch_between_input_and_output():
    with pytest.raises(ShapeError):
        infer("Activation", {"act_type": "relu"}, [(2, 3)], out_shapes=[(3, 2)])
