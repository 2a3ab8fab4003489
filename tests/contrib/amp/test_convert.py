"""convert_symbol / convert_model against MXNet 1.9.1's recorded conversions."""

import json
from pathlib import Path

import numpy as np
import pytest

import rebind as mx
from rebind.contrib import amp
from tests.contrib.amp.networks import BUILDERS, mlp

REFERENCE = json.loads((Path(__file__).parent / "amp_reference.json").read_text())
CASES = {  # recorded case -> (network, convert_symbol keyword arguments)
    "mlp": ("mlp", {}),
    "mlp_excluded": ("mlp", {"excluded_sym_names": ["fc2"]}),
    "mlp_optional": ("mlp", {"cast_optional_params": True}),
    "residual": ("residual", {}),
    "multicast": ("multicast", {}),
    "conv": ("conv", {}),
}


def _nodes(graph):
    return [(n["op"], n["name"], n.get("attrs", {}), n["inputs"]) for n in graph["nodes"]]


def _given_types(sym):
    # what the recording gave: float32 for every argument without a __dtype__ of its own
    attrs = sym.attr_dict()
    return {k: "float32" for k in sym.list_arguments() if "__dtype__" not in attrs.get(k, {})}


def _dtype_names(types):
    return [None if t is None else np.dtype(t).name for t in types]


@pytest.mark.parametrize("case", sorted(CASES))
def test_converted_graph_matches_mxnet(case):
    network, kwargs = CASES[case]
    sym, _ = BUILDERS[network]()
    converted = amp.convert_symbol(sym, **kwargs)
    recorded = REFERENCE[case]
    assert recorded["kwargs"] == kwargs
    graph = json.loads(converted.tojson(remove_amp_cast=False))
    assert _nodes(graph) == _nodes(recorded["converted"])
    assert graph["heads"] == recorded["converted"]["heads"]
    # by default the casts are left out of the JSON, as MXNet does
    assert _nodes(json.loads(converted.tojson())) == _nodes(recorded["converted_stripped"])
    # the original symbol is untouched
    assert _nodes(json.loads(sym.tojson())) == _nodes(recorded["original"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_converted_dtypes_match_mxnet(case):
    network, kwargs = CASES[case]
    converted = amp.convert_symbol(BUILDERS[network]()[0], **kwargs)
    expected = REFERENCE[case]["dtypes"]
    args, outs, auxs = converted.infer_type(**_given_types(converted))
    assert (
        dict(zip(converted.list_outputs(), _dtype_names(outs), strict=True))
        == (expected["outputs"])
    )
    internals = converted.get_internals()
    _, inner, _ = internals.infer_type(**_given_types(converted))
    assert (
        dict(zip(internals.list_outputs(), _dtype_names(inner), strict=True))
        == (expected["internals"])
    )


@pytest.mark.parametrize("optional", [False, True])
def test_convert_model_matches_mxnet(optional):
    sym, shapes = mlp()
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    params = {
        n: mx.nd.ones(s)
        for n, s in zip(sym.list_arguments(), arg_shapes, strict=True)
        if n not in ("data", "softmax_label")
    }
    converted, args, aux = amp.convert_model(sym, dict(params), {}, cast_optional_params=optional)
    recorded = REFERENCE["convert_model"][str(optional)]
    graph = json.loads(converted.tojson(remove_amp_cast=False))
    assert _nodes(graph) == _nodes(recorded["converted"])
    assert {k: np.dtype(v.dtype).name for k, v in args.items()} == recorded["arg_dtypes"]
    assert aux == {}


def test_conversion_refuses_bad_requests():
    sym, _ = mlp()
    with pytest.raises(ValueError, match="float16"):
        amp.convert_symbol(sym, target_dtype="bfloat16")
    with pytest.raises(ValueError, match="both target_dtype_ops and fp32_ops"):
        amp.convert_symbol(sym, target_dtype_ops=["FullyConnected"], fp32_ops=["FullyConnected"])
    with pytest.raises(ValueError, match="no_such_op"):
        amp.convert_symbol(sym, fp32_ops=["no_such_op"])
    with pytest.raises(TypeError, match="Symbol"):
        amp.convert_symbol("not a symbol")
    with pytest.raises(NotImplementedError, match="Gluon"):
        amp.convert_hybrid_block(object())


def test_user_lists_override_the_defaults():
    sym, _ = mlp()
    # only fc3 in float16 when the float16 list is FullyConnected and fc1/fc2 are excluded
    converted = amp.convert_symbol(sym, excluded_sym_names=["fc1", "fc2"])
    internals = converted.get_internals()
    _, types, _ = internals.infer_type(**_given_types(converted))
    got = dict(zip(internals.list_outputs(), _dtype_names(types), strict=True))
    assert got["fc1_output"] == got["fc2_output"] == "float32"
    assert got["fc3_output"] == "float16"
    # an empty float16 list leaves every FullyConnected in float32
    plain = amp.convert_symbol(sym, target_dtype_ops=[])
    assert "float16" not in plain.tojson(remove_amp_cast=False)


def test_lists_keep_registered_operators_only():
    lp16 = amp.list_lp16_ops("float16")
    assert lp16 == ["Convolution", "Deconvolution", "FullyConnected", "RNN"]
    assert "softmax" in amp.list_fp32_ops("float16")
    assert "SoftmaxOutput" in amp.list_loss_output_functions("float16")
    assert ("Activation", "act_type", ["softrelu"]) in amp.list_conditional_fp32_ops("float16")
    assert "Concat" in amp.list_widest_type_cast("float16")
    assert amp.list_lp16_use_fp32_params("float16") is None
    missing = amp.missing_ops()
    registered = set(mx.registry.get_registry("operators").names())
    for name, ops in missing.items():
        assert not set(ops) & registered, name
    assert "_NDArray" in missing["FP32_FUNCS"]  # the legacy NDArrayOp, which rebind lacks


def _tutorial_conversion():
    sym, shapes = BUILDERS["conv"]()
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    inputs = ("data", "softmax_label")
    names = sym.list_arguments()
    args = {n: mx.nd.ones(s) for n, s in zip(names, arg_shapes, strict=True) if n not in inputs}
    auxs = {n: mx.nd.ones(s) for n, s in zip(sym.list_auxiliary_states(), aux_shapes, strict=True)}
    return amp.convert_model(
        sym,
        args,
        auxs,
        target_dtype_ops=["Convolution"],
        fp32_ops=["SoftmaxOutput", "FullyConnected"],
        cast_optional_params=True,
    )


def test_tutorial_conversion_matches_mxnet():
    converted, args, auxs = _tutorial_conversion()
    recorded = REFERENCE["tutorial"]
    graph = json.loads(converted.tojson(remove_amp_cast=False))
    assert _nodes(graph) == _nodes(recorded["converted"])
    assert {k: np.dtype(v.dtype).name for k, v in args.items()} == recorded["arg_dtypes"]
    assert {k: np.dtype(v.dtype).name for k, v in auxs.items()} == recorded["aux_dtypes"]


def test_tutorial_module_runs_and_round_trips_a_checkpoint(ctx, tmp_path):
    converted, args, auxs = _tutorial_conversion()
    mod = mx.mod.Module(converted, data_names=["data"], label_names=["softmax_label"], context=ctx)
    mod.bind(data_shapes=[["data", (2, 1, 8, 8)]], label_shapes=[["softmax_label", (2,)]])
    mod.set_params(args, auxs)
    mod.forward(mx.io.DataBatch(data=[mx.nd.ones((2, 1, 8, 8))], label=[mx.nd.ones((2,))]))
    out = mod.get_outputs()[0]
    assert np.dtype(out.dtype) == np.float32
    np.testing.assert_allclose(out.asnumpy().sum(axis=1), 1.0, rtol=1e-3)
    params = mod.get_params()[0]
    assert np.dtype(params["conv_weight"].dtype) == np.float16
    assert np.dtype(params["fc_bias"].dtype) == np.float32
    prefix = str(tmp_path / "amp_model")
    mod.save_checkpoint(prefix, 0, remove_amp_cast=False)
    loaded, loaded_args, _ = mx.model.load_checkpoint(prefix, 0)
    assert loaded.tojson(remove_amp_cast=False) == converted.tojson(remove_amp_cast=False)
    assert np.dtype(loaded_args["conv_weight"].dtype) == np.float16
    mod.save_checkpoint(prefix, 1)  # the default leaves the casts out, as MXNet
    assert "amp_cast" not in mx.sym.load(f"{prefix}-symbol.json").tojson(remove_amp_cast=False)
