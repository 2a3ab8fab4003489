"""The 2-layer LSTM language model of MXNet's lstm_bucketing example, rebuilt with mx.rnn cells.

Golden cases recorded from MXNet 1.9.1: the unrolled network at 5 and 8 steps
(symbols/lstm_lm_T*: arguments, shapes, JSON, forward and backward) and a
BucketingModule checkpoint of it (checkpoints/lstm_lm: MXNet-trained weights
and the predictions they give at two bucket lengths).
"""

import json
import re

import numpy as np
import pytest

import rebind as mx
from tests.conftest import GOLDEN
from tests.ops.harness import assert_close

MANIFEST = json.loads((GOLDEN / "manifest.json").read_text())["categories"]
SYMBOL_CASES = {c["id"]: c for c in MANIFEST["symbols"]["cases"]}
(CHECKPOINT,) = [c for c in MANIFEST["checkpoints"]["cases"] if c["id"] == "lstm_lm"]
NETWORK_TOLERANCE = (2e-4, 2e-5)
# names MXNet makes up for unnamed nodes: they depend on what was built before
AUTOMATIC = re.compile(r"^(split|_plus|_mul|activation|expand_dims|concat|reshape)\d+$")


def lstm_lm(seq_len, vocab, num_embed, num_hidden, num_layers=2):
    """The lstm_bucketing example's sym_gen: Embedding, stacked LSTMCells, FC, SoftmaxOutput."""
    data = mx.sym.Variable("data")
    label = mx.sym.Variable("softmax_label")
    embed = mx.sym.Embedding(data=data, input_dim=vocab, output_dim=num_embed, name="embed")
    stack = mx.rnn.SequentialRNNCell()
    for layer in range(num_layers):
        stack.add(mx.rnn.LSTMCell(num_hidden=num_hidden, prefix=f"lstm_l{layer}_"))
    outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
    pred = mx.sym.Reshape(outputs, shape=(-1, num_hidden))
    pred = mx.sym.FullyConnected(data=pred, num_hidden=vocab, name="pred")
    label = mx.sym.Reshape(label, shape=(-1,))
    return mx.sym.SoftmaxOutput(data=pred, label=label, name="softmax")


def _symbol_case_network(case_id):
    case = SYMBOL_CASES[case_id]
    seq_len = case["infer_shape_inputs"]["data"][1]
    shapes = case["infer_shape"]["arg_shapes"]
    vocab, num_embed = shapes["embed_weight"]
    num_hidden = shapes["lstm_l0_h2h_weight"][1]
    with mx.name.NameManager():
        return case, lstm_lm(seq_len, vocab, num_embed, num_hidden)


def _without_automatic_names(text):
    graph = json.loads(text)
    for node in graph["nodes"]:
        node["name"] = AUTOMATIC.sub(r"\1#", node["name"])
    return graph


@pytest.mark.parametrize("case_id", ["lstm_lm_T5", "lstm_lm_T8"])
def test_structure_and_shapes_equal_mxnet(case_id):
    case, network = _symbol_case_network(case_id)
    assert network.list_arguments() == case["list_arguments"]
    assert network.list_outputs() == case["list_outputs"]
    assert network.list_auxiliary_states() == []
    assert network.get_internals().list_outputs() == case["internals_outputs"]
    assert network.attr_dict() == case["attr_dict"]
    arg_shapes, out_shapes, _ = network.infer_shape(**case["infer_shape_inputs"])
    expected = case["infer_shape"]
    assert (
        dict(zip(network.list_arguments(), map(list, arg_shapes), strict=True))
        == (expected["arg_shapes"])
    )
    assert [list(s) for s in out_shapes] == expected["out_shapes"]


@pytest.mark.parametrize("case_id", ["lstm_lm_T5", "lstm_lm_T8"])
def test_json_equals_mxnet(case_id):
    case, network = _symbol_case_network(case_id)
    # built with fresh automatic names, as MXNet did: the text is the same, byte for byte
    assert network.tojson() == (GOLDEN / case["file"]).read_text()


@pytest.mark.parametrize("case_id", ["lstm_lm_T5", "lstm_lm_T8"])
def test_forward_backward_equal_mxnet(case_id, ctx):
    case, network = _symbol_case_network(case_id)
    with np.load(GOLDEN / case["forward_file"]) as npz:
        data = {key: npz[key] for key in npz.files}
    args = {n: mx.nd.array(data[f"arg.{n}"], ctx=ctx) for n in network.list_arguments()}
    grads = {
        n: mx.nd.zeros(a.shape, ctx=ctx)
        for n, a in args.items()
        if case["grad_req"].get(n, "null") != "null"
    }
    executor = network.bind(ctx, args, args_grad=grads, grad_req=case["grad_req"])
    (output,) = executor.forward(is_train=True)
    assert_close(output.asnumpy(), data["out.0"], f"{case_id} output", NETWORK_TOLERANCE)
    executor.backward([mx.nd.array(data["head_grad.0"], ctx=ctx)])
    for name, grad in executor.grad_dict.items():
        assert_close(grad.asnumpy(), data[f"grad.{name}"], f"{case_id} {name}", NETWORK_TOLERANCE)


def _checkpoint_network(seq_len):
    sizes = CHECKPOINT["info"]["sizes"]
    return lstm_lm(
        seq_len, sizes["vocab"], sizes["num_embed"], sizes["num_hidden"], sizes["num_layers"]
    )


@pytest.mark.parametrize("part", ["eval", "eval2"])
def test_mxnet_checkpoint_predicts_the_same(part, ctx):
    prefix = str(GOLDEN / CHECKPOINT["dir"] / CHECKPOINT["prefix"])
    arg_params, aux_params = mx.model.load_params(prefix, CHECKPOINT["epoch"])
    with np.load(f"{prefix}-data.npz") as npz:
        tokens, labels = npz[f"{part}.data"], npz[f"{part}.softmax_label"]
        expected = npz[f"{part}.output.0"]
    network = _checkpoint_network(tokens.shape[1])
    assert sorted(f"arg:{n}" for n in arg_params) == CHECKPOINT["params_keys"]
    args = {n: a.as_in_context(ctx) for n, a in arg_params.items()}
    args["data"] = mx.nd.array(tokens, ctx=ctx)
    args["softmax_label"] = mx.nd.array(labels, ctx=ctx)
    (output,) = network.bind(ctx, args, grad_req="null", aux_states=aux_params).forward()
    np.testing.assert_allclose(output.asnumpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("seq_len", [4, 6])
def test_checkpoint_bucket_symbols_equal_ours_but_for_automatic_names(seq_len):
    """BucketingModule wrote one symbol per bucket; sym_gen was called several times there."""
    prefix = GOLDEN / CHECKPOINT["dir"] / CHECKPOINT["prefix"]
    saved = (prefix.parent / f"{prefix.name}-{seq_len}-symbol.json").read_text()
    ours = _checkpoint_network(seq_len).tojson()
    assert _without_automatic_names(ours) == _without_automatic_names(saved)


def test_bucketing_module_with_our_sym_gen_reproduces_mxnet(ctx):
    """The lstm_bucketing workflow: sym_gen from mx.rnn cells, MXNet's trained weights."""
    prefix = str(GOLDEN / CHECKPOINT["dir"] / CHECKPOINT["prefix"])
    info = CHECKPOINT["info"]
    arg_params, aux_params = mx.model.load_params(prefix, CHECKPOINT["epoch"])

    def sym_gen(seq_len):
        return _checkpoint_network(seq_len), ("data",), ("softmax_label",)

    module = mx.mod.BucketingModule(
        sym_gen, default_bucket_key=info["default_bucket_key"], context=ctx
    )
    data = np.load(f"{prefix}-data.npz")
    shape = data["eval.data"].shape
    module.bind([("data", shape)], [("softmax_label", shape)], for_training=False)
    module.set_params(arg_params, aux_params)
    for part in ("eval", "eval2", "eval"):
        tokens, labels = data[f"{part}.data"], data[f"{part}.softmax_label"]
        batch = mx.io.DataBatch(
            [mx.nd.array(tokens)],
            [mx.nd.array(labels)],
            bucket_key=tokens.shape[1],
            provide_data=[("data", tokens.shape)],
            provide_label=[("softmax_label", labels.shape)],
        )
        module.forward(batch, is_train=False)
        np.testing.assert_allclose(
            module.get_outputs()[0].asnumpy(), data[f"{part}.output.0"], rtol=1e-5, atol=1e-6
        )
