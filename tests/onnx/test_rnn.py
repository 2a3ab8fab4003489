"""Export of the RNN operator, the Sequence* operators and the golden LSTM LM, run in
ONNX Runtime."""

import json

import numpy as np
import pytest

import rebind as mx

from .harness import check_export, onnx, rebind_outputs, run_onnx

SIZES = {"steps": 3, "batch": 2, "width": 4, "hidden": 5}


def _rnn_network(mode, num_layers, bidirectional, state_outputs=True, **extra):
    """An RNN node with every input a variable, and all its outputs as heads."""
    inputs = {
        "data": mx.sym.var("data"),
        "parameters": mx.sym.var("rnn_parameters"),
        "state": mx.sym.var("state"),
    }
    if mode == "lstm":
        inputs["state_cell"] = mx.sym.var("state_cell")
    out = mx.sym.RNN(
        **inputs,
        state_size=SIZES["hidden"],
        num_layers=num_layers,
        mode=mode,
        bidirectional=bidirectional,
        state_outputs=state_outputs,
        name="rnn",
        **extra,
    )
    return mx.sym.Group([out[i] for i in range(len(out.list_outputs()))])


def _rnn_values(symbol, mode, num_layers, bidirectional, seed=0):
    """Random packed parameters and data / begin states for ``symbol``."""
    rng = np.random.default_rng(seed)
    steps, batch, width, hidden = (SIZES[k] for k in ("steps", "batch", "width", "hidden"))
    shapes = dict(
        zip(symbol.list_arguments(), symbol.infer_shape(data=(steps, batch, width))[0], strict=True)
    )
    flat = rng.uniform(-0.6, 0.6, shapes["rnn_parameters"]).astype(np.float32)
    states = (num_layers * (2 if bidirectional else 1), batch, hidden)
    inputs = {
        "data": rng.standard_normal((steps, batch, width)).astype(np.float32),
        "state": rng.standard_normal(states).astype(np.float32),
    }
    if mode == "lstm":
        inputs["state_cell"] = rng.standard_normal(states).astype(np.float32)
    return {"rnn_parameters": mx.nd.array(flat)}, inputs


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_rnn_op_exports_with_begin_states(tmp_path, mode, num_layers, bidirectional):
    symbol = _rnn_network(mode, num_layers, bidirectional)
    args, inputs = _rnn_values(symbol, mode, num_layers, bidirectional)
    model = check_export(symbol, args, {}, inputs, tmp_path, rtol=1e-5, atol=1e-5)
    op_type = {"lstm": "LSTM", "gru": "GRU"}.get(mode, "RNN")
    assert [n.op_type for n in model.graph.node].count(op_type) == num_layers


def test_rnn_op_without_state_outputs_and_dropout_exports(tmp_path):
    symbol = _rnn_network("lstm", 2, True, state_outputs=False, p=0.3)
    args, inputs = _rnn_values(symbol, "lstm", 2, True, seed=1)
    check_export(symbol, args, {}, inputs, tmp_path, rtol=1e-5, atol=1e-5)


def test_rnn_op_with_dynamic_batch_runs_at_another_batch_size(tmp_path):
    symbol = _rnn_network("gru", 2, True)
    args, inputs = _rnn_values(symbol, "gru", 2, True, seed=2)
    # TNC data: the batch is axis 1 of the data and of the states
    dims = [(v.shape[0], None, v.shape[2]) for v in inputs.values()]
    check_export(
        symbol, args, {}, inputs, tmp_path, rtol=1e-5, atol=1e-5, dynamic_input_shapes=dims
    )
    wider = {k: np.concatenate([v, v[:, :1] * 0.5], axis=1) for k, v in inputs.items()}
    got = run_onnx(tmp_path / "model.onnx", wider)
    expected = rebind_outputs(symbol, args, {}, wider)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_rnn_op_with_parameters_not_given_is_refused(tmp_path):
    # 'rnn_parameters' left out of params: a graph input, not weights to repack
    symbol = _rnn_network("gru", 1, False)
    shapes = [(2, 1, 3), (3 * 5 * (3 + 5) + 6 * 5,), (1, 1, 5)]
    with pytest.raises(mx.onnx.OnnxExportError, match="'parameters' input 'rnn_parameters'"):
        mx.onnx.export_model(symbol, {}, shapes, onnx_file_path=str(tmp_path / "m.onnx"))
    assert not (tmp_path / "m.onnx").exists()


# -- SequenceMask / SequenceLast / SequenceReverse ----------------------------------------

SEQUENCE_OPS = [
    ("SequenceMask", {"value": -2.5}),
    ("SequenceLast", {}),
    ("SequenceReverse", {}),
]


def _sequence_case(op, attrs, axis, with_lengths, rank=3):
    data = mx.sym.var("data")
    kwargs = dict(attrs, use_sequence_length=with_lengths)
    if op != "SequenceReverse":
        kwargs["axis"] = axis
    if with_lengths:
        kwargs["sequence_length"] = mx.sym.var("lengths")
    symbol = getattr(mx.sym, op)(data=data, name="seq", **kwargs)
    rng = np.random.default_rng(3)
    shape = (4, 3, 2, 2)[:rank] if axis == 0 else (3, 4, 2, 2)[:rank]
    inputs = {"data": rng.standard_normal(shape).astype(np.float32)}
    if with_lengths:
        # truncated as MXNet does; 0 and more than T are held within [0, T]
        inputs["lengths"] = np.array([2.7, 0.0, 9.0], dtype=np.float32)
    return symbol, inputs


# SequenceReverse has only axis 0 (as in MXNet)
SEQUENCE_AXES = [(op, attrs, axis) for op, attrs in SEQUENCE_OPS for axis in (0, 1)][:-1]


@pytest.mark.parametrize(("op", "attrs", "axis"), SEQUENCE_AXES)
@pytest.mark.parametrize("with_lengths", [False, True])
def test_sequence_ops_export(tmp_path, op, attrs, axis, with_lengths):
    symbol, inputs = _sequence_case(op, attrs, axis, with_lengths)
    check_export(symbol, {}, {}, inputs, tmp_path)


@pytest.mark.parametrize(("op", "attrs"), SEQUENCE_OPS)
def test_sequence_ops_on_rank_2_and_4_with_dynamic_batch(tmp_path, op, attrs):
    for rank in (2, 4):
        symbol, inputs = _sequence_case(op, attrs, 0, True, rank=rank)
        check_export(symbol, {}, {}, inputs, tmp_path, dynamic=True)


# -- the golden bucketed LSTM language model at a fixed length ------------------------------


def _lstm_lm(golden):
    manifest = json.loads((golden / "manifest.json").read_text())
    cases = manifest["categories"]["checkpoints"]["cases"]
    (case,) = [c for c in cases if c["id"] == "lstm_lm"]
    prefix = str(golden / case["dir"] / case["prefix"])
    return case, prefix, np.load(f"{prefix}-data.npz")


def test_golden_lstm_lm_exports_at_a_fixed_length(golden, tmp_path):
    case, prefix, data = _lstm_lm(golden)
    default = case["info"]["default_bucket_key"]
    symbol = mx.sym.load(f"{prefix}-{default}-symbol.json")
    _, arg_params, aux_params = mx.model.load_checkpoint(prefix, case["epoch"])
    tokens = data["eval.data"].astype(np.float32)
    path = tmp_path / "lm.onnx"
    # the label only feeds the loss (through a Reshape): not a graph input
    mx.onnx.export_model(
        symbol, {**arg_params, **aux_params}, [tokens.shape], onnx_file_path=str(path), dynamic=True
    )
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == ["data"]
    labels = data["eval.softmax_label"].astype(np.float32)
    ours = rebind_outputs(symbol, arg_params, aux_params, {"data": tokens, "softmax_label": labels})
    got = run_onnx(path, {"data": tokens})[0]
    np.testing.assert_allclose(got, ours[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, data["eval.output.0"], rtol=1e-5, atol=1e-6)
    # the begin states' batch comes from the input at run time
    wider = np.concatenate([tokens, tokens[::-1]], axis=0)
    doubled = rebind_outputs(
        symbol,
        arg_params,
        aux_params,
        {"data": wider, "softmax_label": np.concatenate([labels, labels[::-1]], axis=0)},
    )
    np.testing.assert_allclose(run_onnx(path, {"data": wider})[0], doubled[0], rtol=1e-5, atol=1e-6)
    # another batch size through the symbolic batch axis
    half = run_onnx(path, {"data": tokens[:3]})[0]
    np.testing.assert_allclose(half, data["eval.output.0"][: 3 * default], rtol=1e-5, atol=1e-6)
