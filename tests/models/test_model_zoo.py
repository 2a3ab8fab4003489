"""Sixteen Gluon model-zoo networks exported by MXNet 1.9.1 predict in rebind as they do in MXNet.

Each network is the symbol JSON MXNet's ``HybridBlock.export`` wrote, loaded
with ``mx.sym.load`` (or ``mx.model.load_checkpoint``), bound by a Module for
inference at batch 2 with the recorded parameter values, and run on the seeded
images: its outputs must match MXNet's within ``RTOL * max(1, max |mxnet|)``.
Every network runs on both inference engines (``REBIND_INFERENCE_ENGINE``):
rebind's NumPy plan and ONNX Runtime, and on the GPU where CuPy has one.
"""

import shutil

import numpy as np
import pytest

import rebind as mx
from rebind import registry

from .zoo import (
    NETWORKS,
    ZOO,
    images,
    load_symbol,
    parameters,
    recorded_outputs,
    scale,
    worst_error,
)

# Measured worst: 2.3e-6 of max(1, max|mxnet|) (VGG-11, whose 25088-wide dense
# layer sums the most float32 products); float32 sums in another order differ
# by a few 1e-7 per layer, so 2e-5 leaves ten times the room and still sees
# 0.1% more on one early layer's weights (tried on ResNet-18 and MobileNet).
RTOL = 2e-5
ENGINE_VARIABLE = "REBIND_INFERENCE_ENGINE"
# above ~5 s on the 2-core test machine: VGG's and AlexNet's 130 and 61 million
# parameters (drawing them and, for ONNX Runtime, exporting them)
SLOW = {"vgg11", "vgg11_bn", "alexnet"}


@pytest.fixture(
    params=[
        pytest.param(("numpy", "numpy"), id="numpy"),
        pytest.param(("onnxruntime", "numpy"), id="onnxruntime"),
        pytest.param(("numpy", "cupy"), id="cupy", marks=pytest.mark.gpu),
    ]
)
def engine(request, monkeypatch):
    """``(engine, context)``: rebind's plan or ONNX Runtime on the CPU, the plan on the GPU."""
    setting, backend = request.param
    if setting == "onnxruntime":
        pytest.importorskip("onnx")
        pytest.importorskip("onnxruntime")
    reason = registry.lookup("backends", backend).unavailable_reason()
    if reason is not None:
        pytest.skip(f"backend {backend!r} unavailable: {reason}")
    monkeypatch.setenv(ENGINE_VARIABLE, setting)
    return setting, mx.cpu(0) if backend == "numpy" else mx.gpu(0)


def _network_params():
    return [
        pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name for name in NETWORKS
    ]


def _bind(symbol, shape, ctx):
    module = mx.mod.Module(symbol, label_names=None, context=ctx)
    module.bind(data_shapes=[("data", shape)], for_training=False)
    return module


def _check_engine(module, setting):
    """The engine asked for is the one that ran the pass (ONNX Runtime did not fall back)."""
    ran = module._exec_group.execs[0]._engine is not None
    assert ran == (setting == "onnxruntime"), (
        f"{ENGINE_VARIABLE}={setting}, but ONNX Runtime {'ran' if ran else 'did not run'}"
    )


@pytest.mark.parametrize("name", _network_params())
def test_exported_network_predicts_as_mxnet(name, engine):
    setting, ctx = engine
    side = NETWORKS[name][1]
    x = images(side)
    symbol = load_symbol(name)
    module = _bind(symbol, x.shape, ctx)
    module.set_params(*parameters(symbol, x.shape))
    module.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=False)
    got = module.get_outputs()[0].asnumpy()
    expected = recorded_outputs(name)
    assert got.shape == expected.shape == (2, 1000)
    assert worst_error(got, expected) <= RTOL * scale(expected), name
    _check_engine(module, setting)


def test_checkpoint_in_mxnet_format_predicts_as_mxnet(tmp_path, engine):
    """load_checkpoint reads the exported JSON and .params (arg:/aux: names); predict agrees."""
    setting, ctx = engine
    name = "squeezenet1.1"
    x = images(NETWORKS[name][1])
    args, auxs = parameters(load_symbol(name), x.shape)
    prefix = tmp_path / name
    shutil.copyfile(ZOO / f"{name}-symbol.json", f"{prefix}-symbol.json")
    saved = {f"arg:{k}": v for k, v in args.items()}
    saved.update({f"aux:{k}": v for k, v in auxs.items()})
    mx.nd.save(f"{prefix}-0000.params", saved)

    symbol, arg_params, aux_params = mx.model.load_checkpoint(str(prefix), 0)
    assert sorted(arg_params) == sorted(args) and sorted(aux_params) == sorted(auxs)
    module = _bind(symbol, x.shape, ctx)
    module.set_params(arg_params, aux_params)
    got = module.predict(mx.io.NDArrayIter(x, batch_size=2)).asnumpy()
    expected = recorded_outputs(name)
    assert worst_error(got, expected) <= RTOL * scale(expected)
    _check_engine(module, setting)


def test_mobilenet_at_batch_32_runs_auto_on_onednn_as_mxnet(monkeypatch):
    """The default engine at a batch of 32 picks the fused oneDNN plan (ort_engine.auto)."""
    from rebind.executor.ort_engine import ONEDNN_BATCH
    from rebind.ops import dnnl_lib

    if dnnl_lib.library() is None:
        pytest.skip(f"oneDNN did not load: {dnnl_lib.missing_reason()}")
    monkeypatch.setenv(ENGINE_VARIABLE, "auto")
    name = "mobilenet1.0"
    x = images(NETWORKS[name][1])
    batch = np.tile(x, (ONEDNN_BATCH // 2, 1, 1, 1))  # the two recorded images, over and over
    symbol = load_symbol(name)
    module = _bind(symbol, batch.shape, mx.cpu(0))
    module.set_params(*parameters(symbol, x.shape))
    module.forward(mx.io.DataBatch([mx.nd.array(batch)]), is_train=False)
    got = module.get_outputs()[0].asnumpy()
    assert module._exec_group.execs[0]._engine is None  # the plan, not ONNX Runtime
    expected = recorded_outputs(name)
    for start in range(0, ONEDNN_BATCH, 2):  # every copy of the two images
        assert worst_error(got[start : start + 2], expected) <= RTOL * scale(expected), start
