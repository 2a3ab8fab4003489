"""Whole networks exported and run in ONNX Runtime: the golden checkpoints written by
MXNet 1.9.1 (MLP, LeNet with BatchNorm), the symbol-built networks of examples/,
a dynamic batch size, files as inputs, and the refusal of an unconvertible op.
"""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import rebind as mx

from .harness import check_export, onnx, rebind_outputs, run_onnx

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _checkpoint(golden, name):
    cases = json.loads((golden / "manifest.json").read_text())["categories"]["checkpoints"]
    (case,) = [c for c in cases["cases"] if c["id"] == name]
    prefix = str(golden / case["dir"] / case["prefix"])
    return case, prefix, np.load(golden / case["data_file"])


# -- the golden checkpoints -------------------------------------------------------------
@pytest.mark.parametrize("name", ["mlp", "lenet_bn"])
def test_golden_checkpoint_matches_rebind_and_mxnet(golden, tmp_path, name):
    case, prefix, data = _checkpoint(golden, name)
    symbol, arg_params, aux_params = mx.model.load_checkpoint(prefix, case["epoch"])
    inputs = {"data": data["eval.data"]}
    model = check_export(symbol, arg_params, aux_params, inputs, tmp_path)
    assert [i.name for i in model.graph.input] == ["data"]
    assert [o.name for o in model.graph.output] == symbol.list_outputs()
    (got,) = run_onnx(tmp_path / "model.onnx", inputs)
    # MXNet's own predictions, recorded with the checkpoint
    np.testing.assert_allclose(got, data["eval.output.0"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["mlp", "lenet_bn"])
def test_golden_checkpoint_with_dynamic_batch(golden, tmp_path, name):
    case, prefix, data = _checkpoint(golden, name)
    symbol, arg_params, aux_params = mx.model.load_checkpoint(prefix, case["epoch"])
    path = tmp_path / "dynamic.onnx"
    mx.onnx.export_model(
        symbol,
        {**arg_params, **aux_params},
        in_shapes=[(2, *data["eval.data"].shape[1:])],
        onnx_file_path=str(path),
        dynamic=True,
    )
    dims = onnx.load(str(path)).graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch"
    for batch in (5, 16):
        inputs = {"data": data["eval.data"][:batch]}
        (got,) = run_onnx(path, inputs)
        (expected,) = rebind_outputs(symbol, arg_params, aux_params, inputs)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_files_as_symbol_and_params(golden, tmp_path):
    """A symbol JSON path and a .params path (arg:/aux: keys), as MXNet's exporter took."""
    case, prefix, data = _checkpoint(golden, "lenet_bn")
    out = tmp_path / "from_files.onnx"
    returned = mx.onnx.export_model(
        f"{prefix}-symbol.json",
        f"{prefix}-{case['epoch']:04d}.params",
        input_shape=[data["eval.data"].shape],  # MXNet's old argument name
        input_type=np.float32,
        onnx_file_path=out,
    )
    assert returned == str(out)
    (got,) = run_onnx(out, {"data": data["eval.data"]})
    np.testing.assert_allclose(got, data["eval.output.0"], rtol=1e-5, atol=1e-6)


def test_get_params_pair_and_prefixed_keys(golden, tmp_path):
    case, prefix, data = _checkpoint(golden, "mlp")
    symbol, arg_params, aux_params = mx.model.load_checkpoint(prefix, case["epoch"])
    prefixed = {f"arg:{k}": v for k, v in arg_params.items()}
    for params in ((arg_params, aux_params), prefixed):
        path = tmp_path / "mlp.onnx"
        mx.onnx.export_model(symbol, params, [data["eval.data"].shape], onnx_file_path=path)
        (got,) = run_onnx(path, {"data": data["eval.data"]})
        np.testing.assert_allclose(got, data["eval.output.0"], rtol=1e-5, atol=1e-6)


# -- the example networks ----------------------------------------------------------------
def _example(name):
    if name != "plot_network":
        pytest.importorskip("sklearn", reason="the examples load scikit-learn's digits")
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _random_params(symbol, shapes, seed=0):
    rng = np.random.default_rng(seed)
    arg_shapes, _, aux_shapes = symbol.infer_shape(**shapes)
    args = {
        n: mx.nd.array(rng.normal(0, 0.3, size=s).astype(np.float32))
        for n, s in zip(symbol.list_arguments(), arg_shapes, strict=True)
        if n not in shapes and not n.endswith("_label")
    }
    aux = {
        n: mx.nd.array(rng.uniform(0.5, 1.5, size=s).astype(np.float32))
        for n, s in zip(symbol.list_auxiliary_states(), aux_shapes, strict=True)
    }
    return args, aux


@pytest.mark.parametrize(
    "name,builder,shape",
    [
        ("mlp_digits", "build_mlp", (4, 64)),
        ("lenet_digits", "build_lenet", (4, 1, 8, 8)),
        ("python_loss_module", "build_network", (4, 64)),
        ("distributed_mlp", "build_mlp", (4, 64)),
        ("plot_network", "build_mlp", (4, 64)),
    ],
)
@pytest.mark.parametrize("dynamic", [False, True])
def test_example_network(tmp_path, name, builder, shape, dynamic):
    symbol = getattr(_example(name), builder)()
    x = np.random.default_rng(1).normal(size=shape).astype(np.float32)
    args, aux = _random_params(symbol, {"data": shape})
    check_export(symbol, args, aux, {"data": x}, tmp_path, dynamic=dynamic)


def test_sequential_module_example_parts(tmp_path):
    chain = _example("sequential_module").build_chain()
    x = np.random.default_rng(1).normal(size=(4, 64)).astype(np.float32)
    for module in chain._modules:
        symbol = module.symbol
        args, aux = _random_params(symbol, {"data": x.shape})
        check_export(symbol, args, aux, {"data": x}, tmp_path)
        x = rebind_outputs(symbol, args, aux, {"data": x})[0]


def test_lstm_bucketing_example_at_a_fixed_length(tmp_path):
    """The unrolled LSTM cells of examples/lstm_bucketing.py at one bucket length.

    Its label is reshaped before the loss: neither is part of the ONNX graph.
    """
    module = _example_plain("lstm_bucketing")
    symbol, _, _ = module.make_sym_gen(vocab_size=12, num_embed=8, num_hidden=10, num_layers=2)(5)
    tokens = np.random.default_rng(2).integers(0, 12, size=(3, 5)).astype(np.float32)
    args, aux = _random_params(symbol, {"data": tokens.shape, "softmax_label": tokens.shape})
    path = tmp_path / "lstm.onnx"
    mx.onnx.export_model(symbol, args, [tokens.shape], onnx_file_path=str(path))
    assert [i.name for i in onnx.load(str(path)).graph.input] == ["data"]
    (got,) = run_onnx(path, {"data": tokens})
    inputs = {"data": tokens, "softmax_label": np.zeros_like(tokens)}
    (expected,) = rebind_outputs(symbol, args, aux, inputs)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def _example_plain(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- errors -------------------------------------------------------------------------------
class _Twice(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * 2)


class _TwiceProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return _Twice()


def test_unconvertible_operator_is_named_and_nothing_is_written(tmp_path, fresh_registry):
    mx.operator.register("onnx_test_twice")(_TwiceProp)
    data = mx.sym.var("data")
    hidden = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    net = mx.sym.Custom(hidden, op_type="onnx_test_twice", name="twice")
    params = {"fc_weight": mx.nd.ones((3, 4)), "fc_bias": mx.nd.zeros(3)}
    path = tmp_path / "never.onnx"
    with pytest.raises(mx.onnx.OnnxExportError, match=r"Custom node 'twice'.*nothing was written"):
        mx.onnx.export_model(net, params, [(2, 4)], onnx_file_path=str(path))
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


def test_an_operator_without_converter_is_refused(tmp_path, monkeypatch):
    from rebind.onnx import converters

    monkeypatch.delitem(converters.CONVERTERS, "Activation")
    net = mx.sym.Activation(mx.sym.var("data"), act_type="relu", name="act")
    with pytest.raises(mx.onnx.OnnxExportError, match="Activation node 'act'"):
        mx.onnx.export_model(net, {}, [(2, 3)], onnx_file_path=str(tmp_path / "m.onnx"))
    assert "Activation" not in mx.onnx.get_operator_support()


def test_wrong_number_of_input_shapes(tmp_path):
    net = mx.sym.var("a") + mx.sym.var("b")
    with pytest.raises(mx.onnx.OnnxExportError, match=r"1 in_shapes given for 2 graph inputs"):
        mx.onnx.export_model(net, {}, [(2, 3)], onnx_file_path=str(tmp_path / "m.onnx"))


def test_opset_out_of_range(tmp_path):
    net = mx.sym.relu(mx.sym.var("data"))
    with pytest.raises(mx.onnx.OnnxExportError, match="opset_version 9"):
        mx.onnx.export_model(
            net, {}, [(2, 3)], onnx_file_path=str(tmp_path / "m.onnx"), opset_version=9
        )


@pytest.mark.parametrize("opset", [13, 18])
def test_other_opsets(tmp_path, opset):
    net = mx.sym.LayerNorm(mx.sym.var("data"), name="ln")
    net = mx.sym.Pooling(mx.sym.expand_dims(net, axis=1), kernel=(1,), global_pool=True)
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
    args = {"ln_gamma": mx.nd.ones(4) * 2, "ln_beta": mx.nd.ones(4)}
    model = check_export(net, args, {}, {"data": x}, tmp_path, opset_version=opset)
    assert model.opset_import[0].version == opset


# -- the API -----------------------------------------------------------------------------
def test_reachable_as_mx_onnx_and_contrib():
    assert mx.contrib.onnx.export_model is mx.onnx.export_model
    support = mx.onnx.get_operator_support()
    for name in ("FullyConnected", "Convolution", "Pooling", "BatchNorm", "SoftmaxOutput"):
        assert name in support
    assert "Softmax" in support  # SoftmaxOutput's alias
    assert "Custom" not in support
    assert support == sorted(support)
    assert mx.onnx.get_operator_support(opset_version=13) == support


def test_dynamic_input_shapes_and_shape_inference(tmp_path):
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc", flatten=False)
    params = {"fc_weight": mx.nd.ones((2, 3)), "fc_bias": mx.nd.zeros(2)}
    path = tmp_path / "m.onnx"
    mx.onnx.export_model(
        net,
        params,
        [(2, 4, 3)],
        onnx_file_path=str(path),
        dynamic_input_shapes=[(None, None, 3)],
        run_shape_inference=True,
    )
    dims = onnx.load(str(path)).graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["batch", "data_dim1", 3]
    (got,) = run_onnx(path, {"data": np.ones((5, 7, 3), np.float32)})
    np.testing.assert_allclose(got, np.full((5, 7, 2), 3.0))


# -- the ExportGraph converters work with ---------------------------------------------
def test_export_graph_names_params_and_batch_dim():
    from rebind.onnx.graph import ExportGraph

    g = ExportGraph(17, dynamic=True, params={"w": np.ones(3)}, readers={"w": 2}, batch_input="x")
    assert g.fresh("w") == "w_1" and g.fresh("w") == "w_2"
    assert g.param("w").shape == (3,) and g.param("nothing") is None
    with pytest.raises(mx.onnx.OnnxExportError, match="read by 2 nodes"):
        g.set_param("w", np.zeros(3))
    assert g.add_node("Relu", ["x"], "y") == "y"
    batch = g.batch_dim()
    assert g.batch_dim() == batch  # computed once
    assert [n.op_type for n in g.nodes] == ["Relu", "Shape", "Slice"]
    assert isinstance(g.const(2.5, np.float32), str)


def test_a_scalar_constant_stays_zero_dimensional():
    # ONNX's Gather with a 0-d index drops the axis; a (1,) index would keep it
    from rebind.onnx.export import _initializers
    from rebind.onnx.graph import ExportGraph

    g = ExportGraph(17)
    index = g.const(2, np.int64, "index")
    g.add_node("Gather", ["x", index], ["y"], axis=0)
    (tensor,) = _initializers(onnx, g, set())
    assert tuple(tensor.dims) == ()
