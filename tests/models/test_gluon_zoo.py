"""GluonCV's and GluonNLP's networks exported by MXNet 1.9.1 predict in rebind as they do in MXNet.

Each network (``tests/recording/gluon_zoo_specs.py``: SSD, YOLOv3, Faster and
Mask R-CNN, FCN, DeepLab, PSPNet, SimplePose, BERT, a transformer encoder) is
the checkpoint ``HybridBlock.export`` wrote: its symbol JSON, and parameters
rebuilt from ``zoo_params`` plus the constants the network computed itself,
saved here as a ``.params`` file in MXNet's format and read back with
``mx.model.load_checkpoint``. A Module binds it for inference and runs the
seeded inputs: every output must match MXNet's within
``RTOL * max(1, max |mxnet|)``, detections with the same classes, on every
backend present; the networks whose operators all export to ONNX also run on
ONNX Runtime. Scaling any one network's first weights by 1.001 moves its
outputs 30 to 50000 times past these tolerances (tried on each network).
"""

import time

import numpy as np
import pytest

import rebind as mx
from tests.conftest import GOLDEN
from tests.recording import gluon_zoo_specs, zoo_params

from .zoo import scale, worst_error

ZOO = GOLDEN / "gluon_zoo"
NETWORKS = gluon_zoo_specs.NETWORKS
# as tests/models/test_model_zoo.py: float32 sums taken in another order differ
# by a few 1e-7 per layer; detections' box coordinates are in pixels
RTOL = 2e-5
# Faster R-CNN: measured 7.8e-5 on its boxes (0.064 of 815 pixels). Its
# ResNet-50 trunk differs by 2e-6 of the features' scale (float32 sums in
# another order), and box_decode's exp of the random head's large offsets
# multiplies that into boxes far outside the 128-pixel image
RTOL_OF = {"faster_rcnn_resnet50_v1b_voc": 2e-4}
# above 5 s on the 2-core test machine (load 6): Faster R-CNN's 300 regions
# through ResNet-50's last stage (21 s), PSPNet (6.6 s); FCN and DeepLab take 4-5 s
SLOW = {"faster_rcnn_resnet50_v1b_voc", "psp_resnet50_ade"}
# the networks whose every operator exports to ONNX (all of them since box_nms,
# box_decode, arange_like and the interleaved attention matmuls export)
ORT_NETWORKS = {
    "ssd_300_mobilenet0.25_voc",
    "yolo3_mobilenet0.25_voc",
    "faster_rcnn_resnet50_v1b_voc",
    "mask_rcnn_resnet18_v1b_coco",
    "bert_small",
    "transformer_encoder",
    "fcn_resnet50_voc",
    "deeplab_resnet50_ade",
    "psp_resnet50_ade",
    "simple_pose_resnet18_v1b",
}
# above 5 s through ONNX Runtime (load 6): Faster R-CNN 23 s, PSPNet 6.3 s, FCN 5.5 s
# (DeepLab 4.6 s, Mask R-CNN 4.6 s)
ORT_SLOW = {"psp_resnet50_ade", "fcn_resnet50_voc", "faster_rcnn_resnet50_v1b_voc"}
DETECTORS = {
    "ssd_300_mobilenet0.25_voc",
    "yolo3_mobilenet0.25_voc",
    "faster_rcnn_resnet50_v1b_voc",
    "mask_rcnn_resnet18_v1b_coco",
}


def _recorded(name):
    """MXNet's outputs of ``name`` (summaries), their shapes, and the constant parameters.

    The constants come at full shape, NaN outside the corner the golden file keeps.
    """
    with np.load(ZOO / "outputs.npz") as stored:
        keys = stored.files
        count = sum(1 for key in keys if key.startswith(f"{name}/outshape"))
        outputs = [stored[f"{name}/out{i}"] for i in range(count)]
        shapes = [tuple(stored[f"{name}/outshape{i}"]) for i in range(count)]
        prefix = f"{name}/const/"
        constants = {
            key[len(prefix) :]: gluon_zoo_specs.constant_from_corner(
                stored[key], tuple(stored[f"{name}/shape/{key[len(prefix) :]}"])
            )
            for key in keys
            if key.startswith(prefix)
        }
    return outputs, shapes, constants


def _write_checkpoint(prefix, name, shapes, constants):
    """Save ``name``'s JSON and parameters at ``prefix`` as MXNet's ``export`` does."""
    text = (ZOO / f"{name}-symbol.json").read_text()
    with open(f"{prefix}-symbol.json", "w") as handle:
        handle.write(text)
    symbol = mx.sym.load_json(text)
    arg_shapes, _, aux_shapes = symbol.infer_shape(**shapes)
    saved = {}
    for pname, shape in zip(symbol.list_arguments(), arg_shapes, strict=True):
        if pname not in shapes:
            value = constants.get(pname)
            saved[f"arg:{pname}"] = zoo_params.param_value(pname, shape) if value is None else value
    for pname, shape in zip(symbol.list_auxiliary_states(), aux_shapes, strict=True):
        saved[f"aux:{pname}"] = zoo_params.param_value(pname, shape)
    mx.nd.save(f"{prefix}-0000.params", {k: mx.nd.array(v) for k, v in saved.items()})


def _predict(prefix, feeds, ctx):
    """Load the checkpoint at ``prefix``, bind a Module for inference, run ``feeds``."""
    symbol, arg_params, aux_params = mx.model.load_checkpoint(str(prefix), 0)
    module = mx.mod.Module(
        symbol, data_names=[key for key, _ in feeds], label_names=None, context=ctx
    )
    module.bind(data_shapes=[(key, value.shape) for key, value in feeds], for_training=False)
    module.set_params(arg_params, aux_params)
    module.forward(mx.io.DataBatch([mx.nd.array(value) for _, value in feeds]), is_train=False)
    return [out.asnumpy() for out in module.get_outputs()], module


def _network_params(names=tuple(NETWORKS), slow=SLOW):
    return [pytest.param(name, marks=pytest.mark.slow) if name in slow else name for name in names]


@pytest.mark.parametrize("name", _network_params())
def test_exported_gluon_network_predicts_as_mxnet(name, ctx, tmp_path):
    start = time.process_time()
    _check_network(name, _run(name, ctx, tmp_path)[0])
    print(name, "CPU seconds:", round(time.process_time() - start, 2))


@pytest.mark.parametrize("name", _network_params(sorted(ORT_NETWORKS), ORT_SLOW))
def test_exported_gluon_network_predicts_as_mxnet_on_onnxruntime(name, tmp_path, monkeypatch):
    """Networks whose operators all export run on ONNX Runtime, and agree with MXNet."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("REBIND_INFERENCE_ENGINE", "onnxruntime")
    got, module = _run(name, mx.cpu(0), tmp_path)
    assert module._exec_group.execs[0]._engine is not None, f"{name}: ONNX Runtime did not run"
    _check_network(name, got)


def _run(name, ctx, tmp_path):
    """Write ``name``'s checkpoint under ``tmp_path``, load and run it: (outputs, module)."""
    feeds = gluon_zoo_specs.inputs(name)
    _, _, constants = _recorded(name)
    prefix = tmp_path / name
    _write_checkpoint(prefix, name, {key: value.shape for key, value in feeds}, constants)
    return _predict(prefix, feeds, ctx)


def _check_network(name, got):
    """``got`` matches MXNet's recorded outputs of ``name`` (detections: the same classes)."""
    expected, shapes, _ = _recorded(name)
    assert [g.shape for g in got] == shapes, name
    if name in DETECTORS:
        _check_detections(name, got, expected)
    rtol = RTOL_OF.get(name, RTOL)
    for index, (actual, wanted) in enumerate(zip(got, expected, strict=True)):
        error = worst_error(gluon_zoo_specs.output_summary(actual), wanted)
        assert error <= rtol * scale(wanted), f"{name} output {index}: {error:.3g}"


def _check_detections(name, got, expected):
    """The same classes in the same order, and MXNet found something to compare against."""
    ids, wanted_ids = got[0], expected[0]
    assert (wanted_ids >= 0).sum() > 0, f"{name}: MXNet's recorded detections are all empty"
    np.testing.assert_array_equal(ids, wanted_ids, err_msg=f"{name}: class ids differ")
