"""Shared check for ONNX export: rebind's own prediction against ONNX Runtime's.

``check_export(symbol, arg_params, aux_params, inputs)`` exports the network
with ``mx.onnx.export_model``, validates the file with ``onnx.checker``, runs
it in ONNX Runtime on ``inputs`` and compares every output with rebind's
inference forward of the same network (1e-5 relative for float32 by default).
"""

import numpy as np
import pytest

import rebind as mx

onnx = pytest.importorskip("onnx", reason="the onnx package (extra 'onnx') is not installed")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime (extra 'test') is not installed")

from rebind.onnx.export import graph_input_names  # noqa: E402 - after the skips


def rebind_outputs(symbol, arg_params, aux_params, inputs):
    """The outputs of rebind's inference forward, as NumPy arrays."""
    shapes = {name: value.shape for name, value in inputs.items()}
    types = {name: value.dtype for name, value in inputs.items()}
    executor = symbol.simple_bind(mx.cpu(), grad_req="null", type_dict=types, **shapes)
    for name, value in {**arg_params, **aux_params}.items():
        target = executor.arg_dict.get(name, executor.aux_dict.get(name))
        if target is not None:
            target[:] = value.asnumpy() if hasattr(value, "asnumpy") else value
    for name, value in inputs.items():
        executor.arg_dict[name][:] = value
    return [out.asnumpy() for out in executor.forward(is_train=False)]


def run_onnx(path, inputs):
    """ONNX Runtime's outputs of the model at ``path`` for ``inputs`` (name -> array)."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, {name: inputs[name] for name in names})


def check_export(
    symbol,
    arg_params,
    aux_params,
    inputs,
    tmp_path,
    rtol=1e-5,
    atol=1e-6,
    dynamic=False,
    **export_kwargs,
):
    """Export, check, run in ONNX Runtime and compare with rebind; returns the ONNX model."""
    params = {**arg_params, **aux_params}  # as MXNet's users pass them
    path = tmp_path / "model.onnx"
    # in_shapes / in_types follow the graph's input order, whatever the dict's
    names = [n for n in graph_input_names(symbol, params) if n in inputs]
    mx.onnx.export_model(
        symbol,
        params,
        in_shapes=[inputs[n].shape for n in names],
        in_types=[inputs[n].dtype for n in names],
        onnx_file_path=str(path),
        dynamic=dynamic,
        **export_kwargs,
    )
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    expected = rebind_outputs(symbol, arg_params, aux_params, inputs)
    got = run_onnx(path, inputs)
    assert len(got) == len(expected)
    for i, (a, b) in enumerate(zip(got, expected, strict=True)):
        assert a.shape == b.shape, f"output {i}: ONNX shape {a.shape}, rebind {b.shape}"
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"output {i}")
    return model
