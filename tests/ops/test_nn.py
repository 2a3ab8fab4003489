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
        # one row: the kernel's matrix-vector path
        ({"num_hidden": "3"}, [(1, 4), (3, 4), (3,)]),
        ({"num_hidden": "3", "flatten": "False"}, [(1, 1, 4), (3, 4), (3,)]),
        # a (num_hidden, 1) bias, which MXNet's shape inference also accepts
        ({"num_hidden": "3"}, [(2, 4), (3, 4), (3, 1)]),
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


def test_fully_connected_one_row_equals_its_row_of_a_batch(ctx):
    """Batch-1 forward takes a matrix-vector product; each row must match the batched result."""
    from rebind.ops.base import OpContext

    rng = np.random.default_rng(3)
    data = rng.standard_normal((5, 7)).astype(np.float32)
    weight = rng.standard_normal((6, 7)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    op = opdef("FullyConnected")
    params = op.parse({"num_hidden": "6"})
    op_ctx = OpContext(False, ctx.backend, ctx.device_id)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in (data, weight, bias)]
    (batched,), _ = op.forward(op_ctx, params, arrays, [])
    for row in range(5):
        (single,), _ = op.forward(op_ctx, params, [arrays[0][row : row + 1], *arrays[1:]], [])
        assert single.shape == (1, 6)
        np.testing.assert_allclose(
            ctx.backend.to_host(single)[0], data[row] @ weight.T + bias, rtol=1e-5, atol=1e-5
        )
        np.testing.assert_allclose(
            ctx.backend.to_host(single),
            ctx.backend.to_host(batched[row : row + 1]),
            rtol=1e-6,
            atol=1e-6,
        )


def test_fully_connected_infers_weight_and_bias_from_data():
    ins, outs, _ = infer("FullyConnected", {"num_hidden": "10"}, [(8, 3, 5), None, None])
    assert ins == [(8, 3, 5), (10, 15), (10,)] and outs == [(8, 10)]
    ins, outs, _ = infer(
        "FullyConnected", {"num_hidden": "10", "flatten": "False"}, [(8, 3, 5), None, None]
    )
    assert ins[1] == (10, 5) and outs == [(8, 3, 10)]


def test_fully_connected_column_bias_adds_per_hidden_unit(ctx):
    """A (num_hidden, 1) bias adds like the (num_hidden,) one (MXNet's non-oneDNN kernel)."""
    import rebind as mx

    data = np.arange(6.0).reshape(2, 3)
    bias = np.arange(4.0).reshape(4, 1)
    out = mx.nd.FullyConnected(
        mx.nd.array(data, ctx=ctx),
        mx.nd.ones((4, 3), ctx=ctx),
        mx.nd.array(bias, ctx=ctx),
        num_hidden=4,
    )
    expected = data.sum(axis=1, keepdims=True) + bias.T
    np.testing.assert_allclose(out.asnumpy(), expected)
    with pytest.raises(ShapeError, match="bias"):
        infer("FullyConnected", {"num_hidden": "4"}, [(2, 3), None, (4, 2)])


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
