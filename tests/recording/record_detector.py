# ruff: noqa: B905 - this runs on MXNet's Python 3.8, whose zip() has no strict=
"""Record a small GluonCV-style detector from MXNet 1.9.1 (run with /work/mxenv/bin/python).

GluonCV is not installed beside MXNet here, so this builds the graph its SSD
exports (per-scale class and box convolutions, anchors, ``box_decode``, a
softmax, per-class rows and ``box_nms`` with ``id_index=0``), plus the other
contrib heads exported models use: ``MultiBoxDetection`` (MXNet's own SSD),
``ROIAlign`` over the top detections (Faster R-CNN), ``BilinearResize2D``
(segmentation) and ``AdaptiveAvgPooling2D`` (SE blocks). Weights and input are
seeded. It writes ``tests/golden/detector/detector-symbol.json``,
``detector-0000.params`` and ``expected.npz`` (input and outputs of an
inference forward), and copies the checkpoint to /work/zoo/gcv/.
"""

import os
import shutil

import mxnet as mx
import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "tests", "golden", "detector")
ZOO = "/work/zoo/gcv"
CLASSES = 3
SIZES, RATIOS = (0.3, 0.5), (1, 2)
ANCHORS = len(SIZES) + len(RATIOS) - 1


def conv(x, name, filters, stride=1, kernel=3):
    pad = kernel // 2
    return mx.sym.Convolution(
        x, num_filter=filters, kernel=(kernel,) * 2, stride=(stride,) * 2, pad=(pad,) * 2, name=name
    )


def heads(feature, index):
    """Class scores (B, N, classes + 1), box offsets (B, N, 4) and anchors of one scale."""
    cls = conv(feature, f"cls{index}", ANCHORS * (CLASSES + 1))
    box = conv(feature, f"box{index}", ANCHORS * 4)
    cls = mx.sym.reshape(mx.sym.transpose(cls, axes=(0, 2, 3, 1)), shape=(0, -1, CLASSES + 1))
    box = mx.sym.reshape(mx.sym.transpose(box, axes=(0, 2, 3, 1)), shape=(0, -1, 4))
    anchors = mx.sym.contrib.MultiBoxPrior(feature, sizes=SIZES, ratios=RATIOS, clip=True)
    return cls, box, anchors


def build():
    data = mx.sym.var("data")
    stem = mx.sym.relu(conv(data, "stem", 8))
    feature1 = mx.sym.relu(conv(stem, "down1", 8, stride=2))
    feature2 = mx.sym.relu(conv(feature1, "down2", 8, stride=2))
    parts = [heads(feature1, 1), heads(feature2, 2)]
    cls = mx.sym.concat(*[p[0] for p in parts], dim=1)
    box = mx.sym.concat(*[p[1] for p in parts], dim=1)
    anchors = mx.sym.concat(*[p[2] for p in parts], dim=1)
    # GluonCV's SSD inference path
    prob = mx.sym.softmax(cls, axis=-1)
    boxes = mx.sym.contrib.box_decode(box, anchors, 0.1, 0.1, 0.2, 0.2, format="corner")
    rows = []
    for k in range(CLASSES):
        score = mx.sym.slice_axis(prob, axis=-1, begin=k + 1, end=k + 2)
        rows.append(mx.sym.concat(mx.sym.ones_like(score) * k, score, boxes, dim=-1))
    result = mx.sym.contrib.box_nms(
        mx.sym.concat(*rows, dim=1),
        overlap_thresh=0.45,
        valid_thresh=0.01,
        topk=40,
        id_index=0,
        score_index=1,
        coord_start=2,
        force_suppress=False,
    )
    result = mx.sym.slice_axis(result, axis=1, begin=0, end=20)
    # MXNet's own SSD decoding
    detection = mx.sym.contrib.MultiBoxDetection(
        mx.sym.transpose(prob, axes=(0, 2, 1)), mx.sym.flatten(box), anchors, nms_topk=30
    )
    # Faster R-CNN: ROIAlign of the four best boxes on the finer feature map
    top = mx.sym.reshape(mx.sym.slice_axis(result, axis=1, begin=0, end=4), shape=(-1, 6))
    corners = mx.sym.slice_axis(top, axis=1, begin=2, end=6) * 32
    rois = mx.sym.concat(mx.sym.zeros_like(mx.sym.slice_axis(top, axis=1, begin=0, end=1)), corners)
    pooled = mx.sym.contrib.ROIAlign(feature1, rois, pooled_size=(3, 3), spatial_scale=0.5)
    # segmentation and squeeze-excitation heads
    mask = mx.sym.contrib.BilinearResize2D(conv(feature2, "seg", 2, kernel=1), data, mode="like")
    squeeze = mx.sym.contrib.AdaptiveAvgPooling2D(feature2, output_size=(2, 2))
    logits = mx.sym.FullyConnected(squeeze, num_hidden=5, name="fc")
    return mx.sym.Group([result, detection, pooled, mask, logits])


def main():
    os.makedirs(OUT, exist_ok=True)
    sym = build()
    rng = np.random.RandomState(33)
    shape = (1, 3, 32, 32)
    arg_shapes, _, _ = sym.infer_shape(data=shape)
    params = {}
    for name, arg_shape in zip(sym.list_arguments(), arg_shapes):
        if name != "data":
            scale = 2.0 if name.startswith("cls") else 0.5
            params[name] = mx.nd.array(
                rng.normal(0, scale, arg_shape) / np.sqrt(np.prod(arg_shape[1:]))
            )
    data = rng.uniform(0, 1, shape).astype(np.float32)
    prefix = os.path.join(OUT, "detector")
    mx.model.save_checkpoint(prefix, 0, sym, params, {})
    module = mx.mod.Module(sym, data_names=["data"], label_names=None, context=mx.cpu())
    module.bind(data_shapes=[("data", shape)], for_training=False)
    module.set_params(params, {})
    module.forward(mx.io.DataBatch([mx.nd.array(data)]), is_train=False)
    outputs = {f"out{i}": o.asnumpy() for i, o in enumerate(module.get_outputs())}
    np.savez(os.path.join(OUT, "expected.npz"), data=data, **outputs)
    os.makedirs(ZOO, exist_ok=True)
    for suffix in ("-symbol.json", "-0000.params"):
        shutil.copy(prefix + suffix, os.path.join(ZOO, "detector" + suffix))
    print({k: v.shape for k, v in outputs.items()})


if __name__ == "__main__":
    main()
