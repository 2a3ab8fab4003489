"""FusedRNNCell: the RNN operator against its unfused cells, weight (un)packing, golden GRU."""

import json
import warnings

import numpy as np
import pytest

import rebind as mx
from tests.conftest import GOLDEN
from tests.ops.harness import assert_close

MODES = ["lstm", "gru", "rnn_tanh", "rnn_relu"]
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
STEPS, BATCH, FEATURES, HIDDEN = 4, 3, 5, 6
TOLERANCE = (1e-5, 1e-6)


def _run(symbol, args, head, ctx):
    """(output, gradients) of ``symbol`` given argument arrays and the output's head gradient."""
    args = {name: value.as_in_context(ctx) for name, value in args.items()}
    grads = {name: mx.nd.zeros(value.shape, ctx=ctx) for name, value in args.items()}
    executor = symbol.bind(ctx, args, args_grad=grads)
    (output,) = executor.forward(is_train=True)
    executor.backward([mx.nd.array(head, ctx=ctx)])
    return output.asnumpy(), executor.grad_dict


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_fused_and_unfused_give_the_same_outputs_and_gradients(
    mode, num_layers, bidirectional, ctx
):
    rng = np.random.default_rng(7)
    fused = mx.rnn.FusedRNNCell(
        HIDDEN, num_layers=num_layers, mode=mode, bidirectional=bidirectional, prefix="f_"
    )
    data = mx.sym.Variable("data")
    fused_net, _ = fused.unroll(STEPS, data, layout="TNC", merge_outputs=True)
    unfused = fused.unfuse()
    unfused_net, _ = unfused.unroll(STEPS, data, layout="TNC", merge_outputs=True)

    size = fused_net.infer_shape(data=(STEPS, BATCH, FEATURES))[0][1][0]
    fused_args = {
        "data": mx.nd.array(rng.standard_normal((STEPS, BATCH, FEATURES))),
        "f_parameters": mx.nd.array(rng.uniform(-0.5, 0.5, size)),
    }
    unfused_args = unfused.pack_weights(fused.unpack_weights(fused_args))
    assert sorted(unfused_args) == sorted(unfused_net.list_arguments())

    head = rng.standard_normal((STEPS, BATCH, HIDDEN * (2 if bidirectional else 1)))
    fused_out, fused_grads = _run(fused_net, fused_args, head, ctx)
    unfused_out, unfused_grads = _run(unfused_net, unfused_args, head, ctx)
    assert_close(unfused_out, fused_out, "output", TOLERANCE)
    assert_close(unfused_grads["data"].asnumpy(), fused_grads["data"].asnumpy(), "data grad")
    as_fused = fused.pack_weights(unfused.unpack_weights(dict(unfused_grads)))
    assert_close(
        as_fused["f_parameters"].asnumpy(),
        fused_grads["f_parameters"].asnumpy(),
        "parameters grad",
        (1e-5, 1e-5),
    )


@pytest.mark.parametrize("mode", MODES)
def test_unpack_names_shapes_and_values(mode):
    fused = mx.rnn.FusedRNNCell(3, num_layers=2, mode=mode, bidirectional=True, prefix="m_")
    gates, hidden = GATES[mode], 3
    # per (layer, direction): i2h (G*H, in) + h2h (G*H, H) + two biases (G*H)
    size = 2 * gates * hidden * (2 + hidden + 2) + 2 * gates * hidden * (2 * hidden + hidden + 2)
    flat = np.arange(size, dtype=np.float32)
    unpacked = fused.unpack_weights({"m_parameters": mx.nd.array(flat), "other": mx.nd.ones(1)})
    names = {"lstm": "ifco", "gru": "rzo"}.get(mode)
    suffixes = [f"_{g}" for g in names] if names else [""]
    expected = {"other"}
    for layer in range(2):
        for side in "lr":
            for group in ("i2h", "h2h"):
                for gate in suffixes:
                    expected |= {f"m_{side}{layer}_{group}{gate}_{w}" for w in ("weight", "bias")}
    assert set(unpacked) == expected
    assert unpacked["m_l0_i2h" + suffixes[0] + "_weight"].shape == (hidden, 2)
    assert unpacked["m_r1_i2h" + suffixes[-1] + "_weight"].shape == (hidden, 2 * hidden)
    assert unpacked["m_l1_h2h" + suffixes[0] + "_bias"].shape == (hidden,)
    # packing order: weights of l0, r0, l1, r1 (i2h gates, then h2h gates), then biases
    np.testing.assert_array_equal(
        unpacked["m_l0_i2h" + suffixes[0] + "_weight"].asnumpy().ravel(), flat[: hidden * 2]
    )
    np.testing.assert_array_equal(
        unpacked["m_r1_h2h" + suffixes[-1] + "_bias"].asnumpy(), flat[-3:]
    )
    repacked = fused.pack_weights(unpacked)
    assert sorted(repacked) == ["m_parameters", "other"]
    np.testing.assert_array_equal(repacked["m_parameters"].asnumpy(), flat)


def test_unpack_rejects_a_vector_of_the_wrong_size():
    fused = mx.rnn.FusedRNNCell(4, mode="lstm")
    with pytest.raises(mx.ShapeError, match="lstm_parameters has 100 elements"):
        fused.unpack_weights({"lstm_parameters": mx.nd.zeros(100)})


def test_parameters_variable_carries_the_fused_initializer():
    cell = mx.rnn.FusedRNNCell(5, num_layers=3, mode="lstm", forget_bias=0.5, prefix="enc_")
    out, states = cell.unroll(2, mx.sym.Variable("data"), layout="TNC")
    assert states == []
    assert out.list_arguments() == ["data", "enc_parameters"]
    init = json.loads(out.attr_dict()["enc_parameters"]["__init__"])
    assert init == [
        "fusedrnn",
        {
            "init": None,
            "num_hidden": 5,
            "num_layers": 3,
            "mode": "lstm",
            "bidirectional": False,
            "forget_bias": 0.5,
        },
    ]


def test_next_states_and_ntc_layout(ctx):
    cell = mx.rnn.FusedRNNCell(4, num_layers=2, mode="lstm", get_next_state=True)
    assert cell.state_info == [{"shape": (2, 0, 4), "__layout__": "LNC"}] * 2
    with pytest.warns(UserWarning, match="TNC"):
        outputs, states = cell.unroll(3, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    assert len(states) == 2
    network = mx.sym.Group([outputs, *states])
    _, out_shapes, _ = network.infer_shape(data=(5, 3, 2))
    assert out_shapes == [(5, 3, 4), (2, 5, 4), (2, 5, 4)]
    rnn_node = network.get_internals()["lstm_rnn_output"]
    assert rnn_node.attr("__layout__") == "LNC"


def test_fused_cannot_step():
    cell = mx.rnn.FusedRNNCell(4)
    with pytest.raises(NotImplementedError, match="unroll"):
        cell(mx.sym.Variable("x"), cell.begin_state())


def test_unfuse_structure():
    cell = mx.rnn.FusedRNNCell(4, num_layers=3, mode="gru", bidirectional=True, dropout=0.5)
    stack = cell.unfuse()
    kinds = [type(c).__name__ for c in stack._cells]
    assert kinds == [
        "BidirectionalCell",
        "DropoutCell",
        "BidirectionalCell",
        "DropoutCell",
        "BidirectionalCell",
    ]
    assert [c.prefix for c in stack._cells[0]._cells] == ["gru_l0_", "gru_r0_"]
    assert stack._cells[1].prefix == "gru__dropout0_"
    assert len(stack.state_info) == 6


def test_golden_fused_bidirectional_gru(ctx):
    """Embedding + FusedRNNCell(gru, 2 layers, bidirectional) + SequenceLast, as MXNet built it."""
    (case,) = [
        c
        for c in json.loads((GOLDEN / "manifest.json").read_text())["categories"]["symbols"][
            "cases"
        ]
        if c["id"] == "gru_fused_bidirectional"
    ]
    with mx.name.NameManager():
        data = mx.sym.Variable("data")
        embed = mx.sym.Embedding(data=data, input_dim=20, output_dim=8, name="embed")
        cell = mx.rnn.FusedRNNCell(12, num_layers=2, mode="gru", bidirectional=True)
        outputs, _ = cell.unroll(4, embed, layout="TNC", merge_outputs=True)
        last = mx.sym.SequenceLast(outputs, name="last")
        cls = mx.sym.FullyConnected(last, num_hidden=4, name="cls")
        network = mx.sym.SoftmaxOutput(cls, name="softmax")
    assert network.tojson() == (GOLDEN / case["file"]).read_text()
    with np.load(GOLDEN / case["forward_file"]) as npz:
        arrays = {key: npz[key] for key in npz.files}
    args = {n: mx.nd.array(arrays[f"arg.{n}"], ctx=ctx) for n in network.list_arguments()}
    (output,) = network.bind(ctx, args, grad_req="null").forward()
    assert_close(output.asnumpy(), arrays["out_infer.0"], "output", (2e-4, 2e-5))
    # the same weights unpacked, run through the unfused cells, predict the same
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stack = cell.unfuse()
        outputs, _ = stack.unroll(4, embed, layout="TNC", merge_outputs=True)
    last = mx.sym.SequenceLast(outputs, name="last")
    cls = mx.sym.FullyConnected(last, num_hidden=4, name="cls")
    unfused = mx.sym.SoftmaxOutput(cls, name="softmax")
    unfused_args = stack.pack_weights(cell.unpack_weights(args))
    (again,) = unfused.bind(ctx, unfused_args, grad_req="null").forward()
    assert_close(again.asnumpy(), arrays["out_infer.0"], "unfused output", (2e-4, 2e-5))
