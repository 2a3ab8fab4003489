"""ONNX import: export -> import -> predict round trips, ONNX-built graphs against ONNX Runtime,
get_model_metadata, and the error naming unsupported operators."""

import json

import numpy as np
import pytest

import rebind as mx

from .harness import onnx, rebind_outputs, run_onnx
from .test_rnn import _rnn_network, _rnn_values

helper, TensorProto = onnx.helper, onnx.TensorProto


def _checkpoint(golden, name):
    cases = json.loads((golden / "manifest.json").read_text())["categories"]["checkpoints"]
    (case,) = [c for c in cases["cases"] if c["id"] == name]
    prefix = str(golden / case["dir"] / case["prefix"])
    symbol, arg_params, aux_params = mx.model.load_checkpoint(prefix, case["epoch"])
    return symbol, arg_params, aux_params, np.load(golden / case["data_file"])


def _round_trip(symbol, arg_params, aux_params, inputs, tmp_path, **kwargs):
    """Export, import, and compare the imported network's predictions with the original's."""
    path = str(tmp_path / "model.onnx")
    params = {**arg_params, **aux_params}
    shapes = [v.shape for v in inputs.values()]
    mx.onnx.export_model(symbol, params, shapes, onnx_file_path=path, **kwargs)
    imported, new_args, new_aux = mx.onnx.import_model(path)
    expected = rebind_outputs(symbol, arg_params, aux_params, inputs)
    got = rebind_outputs(imported, new_args, new_aux, inputs)
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    return imported, new_args, new_aux


@pytest.mark.parametrize("name", ["mlp", "lenet_bn"])
def test_golden_checkpoints_round_trip(golden, tmp_path, name):
    symbol, arg_params, aux_params, data = _checkpoint(golden, name)
    x = data["eval.data"]
    imported, new_args, new_aux = _round_trip(symbol, arg_params, aux_params, {"data": x}, tmp_path)
    # the recorded MXNet predictions too
    got = rebind_outputs(imported, new_args, new_aux, {"data": x})[0]
    np.testing.assert_allclose(got, data["eval.output.0"], rtol=1e-5, atol=1e-6)
    # every parameter comes back under its rebind name (BatchNorm is exported as arithmetic,
    # so its moving statistics return as arguments; ONNX BatchNormalization gives aux states)
    assert set(new_args) | set(new_aux) == set(imported.list_arguments()) - {"data"}
    kept = {k for k in {**arg_params, **aux_params} if not k.endswith("gamma")}
    assert kept <= set(new_args) | set(new_aux)


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_rnn_network_round_trips(tmp_path, mode):
    symbol = _rnn_network(mode, 2, True)
    args, inputs = _rnn_values(symbol, mode, 2, True, seed=4)
    imported, new_args, _ = _round_trip(symbol, args, {}, inputs, tmp_path)
    rnn_nodes = [n for n in json.loads(imported.tojson())["nodes"] if n["op"] == "RNN"]
    assert len(rnn_nodes) == 2  # one rebind RNN op per ONNX layer
    assert sorted(new_args) == ["rnn_parameters_l0", "rnn_parameters_l1"]


@pytest.mark.parametrize(("op_type", "gates"), [("LSTM", 4), ("GRU", 3), ("RNN", 1)])
def test_onnx_recurrent_node_without_initial_states_imports(tmp_path, op_type, gates):
    rng = np.random.default_rng(5)
    hidden, width = 3, 4
    weights = [
        ("W", rng.uniform(-0.5, 0.5, (2, gates * hidden, width))),
        ("R", rng.uniform(-0.5, 0.5, (2, gates * hidden, hidden))),
        ("B", rng.uniform(-0.5, 0.5, (2, 2 * gates * hidden))),
    ]
    extra = {"linear_before_reset": 1} if op_type == "GRU" else {}
    if op_type == "RNN":
        extra["activations"] = ["Relu", "Relu"]
    node = helper.make_node(
        op_type,
        ["x", "W", "R", "B"],
        ["y", "y_h"],
        hidden_size=hidden,
        direction="bidirectional",
        **extra,
    )
    model = _model(
        [node],
        [("x", ("T", "N", width))],
        ["y", "y_h"],
        [(n, v.astype(np.float32)) for n, v in weights],
    )
    for batch in (2, 5):  # the zero begin states follow the batch size
        x = rng.standard_normal((3, batch, width)).astype(np.float32)
        symbol, args, _ = _check_import(tmp_path, model, {"x": x})
    assert list(args) == [f"{op_type.lower()}0_parameters"]


# -- graphs built with onnx.helper, run in ONNX Runtime and imported ------------------------


def _model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [onnx.numpy_helper.from_array(np.asarray(v), n) for n, v in initializers],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _check_import(tmp_path, model, feeds, rtol=1e-5):
    path = tmp_path / "built.onnx"
    onnx.save(model, str(path))
    expected = run_onnx(path, feeds)
    symbol, args, aux = mx.onnx.import_model(str(path))
    got = rebind_outputs(symbol, args, aux, feeds)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b.reshape(a.shape), rtol=rtol, atol=1e-6)
    return symbol, args, aux


def _ints(values):
    return np.asarray(values, dtype=np.int64)


RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)
W = RNG.standard_normal((4, 5)).astype(np.float32)
FEEDS = {"x": X, "x2": X.reshape(6, 4), "ids": np.array([[0, 5], [2, 2]], dtype=np.float32)}

GRAPHS = {
    "gemm_transB0_alpha": (
        [helper.make_node("Gemm", ["x2", "w", "c"], ["y"], alpha=0.5, beta=2.0)],
        [("w", W), ("c", np.arange(5, dtype=np.float32))],
    ),
    "gemm_fully_connected_weight_transposed": (
        [helper.make_node("Gemm", ["x2", "w", "c"], ["y"])],
        [("w", W), ("c", np.arange(5, dtype=np.float32))],
    ),
    "matmul_add": (
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "c"], ["y"])],
        [("w", W), ("c", np.arange(5, dtype=np.float32))],
    ),
    "slice_split_concat": (
        [
            helper.make_node("Slice", ["x", "s", "e", "a"], ["s1"]),
            helper.make_node("Split", ["s1", "sp"], ["p", "q"], axis=2),
            helper.make_node("Concat", ["q", "p"], ["y"], axis=-1),
        ],
        [
            ("s", _ints([1, 0])),
            ("e", _ints([2**63 - 1, 3])),
            ("a", _ints([1, 2])),
            ("sp", _ints([1, 2])),
        ],
    ),
    "reverse_unsqueeze_squeeze": (
        [
            helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["r"]),
            helper.make_node("Unsqueeze", ["r", "ax"], ["u"]),
            helper.make_node("Squeeze", ["u", "ax"], ["y"]),
        ],
        [
            ("s", _ints([-1])),
            ("e", _ints([-(2**63)])),
            ("a", _ints([1])),
            ("st", _ints([-1])),
            ("ax", _ints([-1, 0])),
        ],
    ),
    "reductions_and_unary": (
        [
            helper.make_node("ReduceSum", ["x", "ax"], ["s"], keepdims=0),
            helper.make_node("ReduceMax", ["x"], ["m"], axes=[1], keepdims=0),
            helper.make_node("Abs", ["s"], ["a"]),
            helper.make_node("Sqrt", ["a"], ["q"]),
            helper.make_node("Sub", ["q", "m"], ["d"]),
            helper.make_node("Clip", ["d", "lo", "hi"], ["y"]),
        ],
        [("ax", _ints([1])), ("lo", np.float32(-0.5)), ("hi", np.float32(1.5))],
    ),
    "softmax_flatten_reshape_transpose": (
        [
            helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
            helper.make_node("Reshape", ["t", "shape"], ["r"]),
            helper.make_node("Flatten", ["r"], ["f"], axis=2),
            helper.make_node("LogSoftmax", ["f"], ["y"], axis=0),
        ],
        [("shape", _ints([0, -1, 3]))],
    ),
    "gather_cast_activations": (
        [
            helper.make_node("Cast", ["ids"], ["i"], to=TensorProto.INT64),
            helper.make_node("Gather", ["table", "i"], ["g"]),
            helper.make_node("LeakyRelu", ["g"], ["l"], alpha=0.2),
            helper.make_node("Elu", ["l"], ["e"], alpha=0.7),
            helper.make_node("Softsign", ["e"], ["y"]),
        ],
        [
            ("table", RNG.standard_normal((6, 3)).astype(np.float32)),
            ("ids", np.array([[0, 5], [2, 2]], dtype=np.float32)),
        ],
    ),
    "constant_pow_max_mean": (
        [
            helper.make_node("Constant", [], ["k"], value_float=2.0),
            helper.make_node("Pow", ["x", "k"], ["p"]),
            helper.make_node("Max", ["p", "x", "x"], ["m"]),
            helper.make_node("Mean", ["m", "x"], ["n"]),
            helper.make_node("Sub", ["k", "n"], ["y"]),
        ],
        [],
    ),
}


@pytest.mark.parametrize("case", sorted(GRAPHS))
def test_onnx_built_graphs_import_and_match_onnxruntime(tmp_path, case):
    nodes, initializers = GRAPHS[case]
    used = {i for n in nodes for i in n.input}
    feeds = {n: v for n, v in FEEDS.items() if n in used}
    model = _model(nodes, [(n, v.shape) for n, v in feeds.items()], ["y"], initializers)
    _check_import(tmp_path, model, feeds)


def test_conv_pool_batchnorm_graph_imports(tmp_path):
    rng = np.random.default_rng(8)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 1]),
        helper.make_node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["n"]),
        helper.make_node("MaxPool", ["n"], ["p"], kernel_shape=[2, 2], ceil_mode=1),
        helper.make_node("ConvTranspose", ["p", "wt"], ["d"], strides=[2, 2], group=2),
        helper.make_node("AveragePool", ["d"], ["a"], kernel_shape=[3, 3], pads=[1] * 4),
        helper.make_node("GlobalAveragePool", ["a"], ["y"]),
    ]
    params = [
        ("w", rng.standard_normal((4, 2, 3, 3))),
        ("b", rng.standard_normal(4)),
        ("g", rng.uniform(0.5, 1.5, 4)),
        ("be", rng.standard_normal(4)),
        ("mu", rng.standard_normal(4)),
        ("var", rng.uniform(0.5, 2, 4)),
        ("wt", rng.standard_normal((4, 3, 2, 2))),
    ]
    params = [(n, v.astype(np.float32)) for n, v in params]
    model = _model(nodes, [("x", (1, 2, 7, 6))], ["y"], params)
    x = rng.standard_normal((1, 2, 7, 6)).astype(np.float32)
    _, args, aux = _check_import(tmp_path, model, {"x": x})
    assert sorted(aux) == ["mu", "var"]
    assert sorted(args) == ["b", "be", "g", "w", "wt"]


# -- metadata and errors ---------------------------------------------------------------------


def test_get_model_metadata_names_inputs_and_outputs(tmp_path):
    symbol = _rnn_network("gru", 1, False)
    args, inputs = _rnn_values(symbol, "gru", 1, False)
    path = str(tmp_path / "m.onnx")
    mx.onnx.export_model(symbol, args, [v.shape for v in inputs.values()], onnx_file_path=path)
    meta = mx.contrib.onnx.get_model_metadata(path)
    float32 = TensorProto.FLOAT
    assert meta["input_tensor_data"] == [
        ("data", (3, 2, 4), float32),
        ("state", (1, 2, 5), float32),
    ]
    assert meta["output_tensor_data"] == [
        ("rnn_output", (3, 2, 5)),
        ("rnn_state_output", (1, 2, 5)),
    ]
    mx.onnx.export_model(
        symbol, args, [v.shape for v in inputs.values()], onnx_file_path=path, dynamic=True
    )
    # a symbolic dimension reads 0, as in MXNet
    assert mx.onnx.get_model_metadata(path)["input_tensor_data"][0][1] == (0, 2, 4)


def test_unsupported_operators_are_all_named_before_anything_is_built(tmp_path, monkeypatch):
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("NonMaxSuppression", ["r", "r"], ["n"]),
        helper.make_node("Einsum", ["r"], ["e"], equation="ij->ji"),
        helper.make_node("Einsum", ["e"], ["y"], equation="ij->ji"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 2, 3))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(graph), str(path))
    from rebind.onnx import importer

    monkeypatch.setattr(importer, "GraphReader", None)  # building anything would fail differently
    with pytest.raises(mx.onnx.OnnxImportError) as info:
        mx.onnx.import_model(str(path))
    message = str(info.value)
    assert "Einsum (2 nodes)" in message and "NonMaxSuppression (1 node)" in message
    assert "Relu" not in message
    assert isinstance(info.value, ValueError)


def test_untranslatable_attributes_name_the_node(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], pads=[0, 1, 1, 1], name="conv7")]
    model = _model(nodes, [("x", (1, 1, 4, 4))], ["y"], [("w", np.ones((1, 1, 2, 2), np.float32))])
    onnx.save(model, str(tmp_path / "m.onnx"))
    with pytest.raises(mx.onnx.OnnxImportError, match=r"Conv node 'conv7'.*asymmetric pads"):
        mx.onnx.import_model(str(tmp_path / "m.onnx"))
