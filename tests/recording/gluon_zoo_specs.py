"""The GluonCV and GluonNLP networks recorded for rebind's tests: names, inputs, seeds.

Shared by the recorder (``record_gluon_zoo.py``, MXNet 1.9.1 under Python 3.8)
and the tests (``tests/models/test_gluon_zoo.py``): each network's inputs are
a pure function of this table, its parameters of ``zoo_params.param_value``,
so the repository keeps only the exported symbol JSON, the few constant
parameters a network computes itself (anchors, offsets) and MXNet's outputs.
Plain NumPy, nothing newer than Python 3.8.
"""

import numpy as np

SEED = 20261129
# BERT's and the transformer's sizes: small enough for the golden files, every
# part present (two layers, several heads, a padded second sequence)
VOCAB = 50
SEQUENCE = 8
VALID_LENGTHS = (8, 5)

# name -> (kind, GluonCV model name or None, input shape, constructor keywords);
# kind "image" feeds one float32 batch named ``data``, "bert" tokens, token
# types and valid lengths, "encoder" an embedded sequence and its valid
# lengths. The keywords size the anchors' table and the proposal counts to the
# small inputs where the model's constructor lets them through.
_MASK = {"rcnn_max_dets": 30, "rpn_test_pre_nms": 300, "rpn_test_post_nms": 30}
# the segmentation heads resize (and PSPNet pools) to the crop they were built for
_CROP = {"crop_size": 64, "base_size": 64}
NETWORKS = {
    "ssd_300_mobilenet0.25_voc": (
        "image", "ssd_300_mobilenet0.25_voc", (2, 3, 256, 256), {"anchor_alloc_size": 32}
    ),
    "yolo3_mobilenet0.25_voc": (
        "image", "yolo3_mobilenet0.25_voc", (2, 3, 128, 128), {}
    ),
    "faster_rcnn_resnet50_v1b_voc": (
        "image", "faster_rcnn_resnet50_v1b_voc", (1, 3, 128, 128), {}
    ),
    "mask_rcnn_resnet18_v1b_coco": (
        "image", "mask_rcnn_resnet18_v1b_coco", (1, 3, 128, 128), _MASK
    ),
    "fcn_resnet50_voc": ("image", "fcn_resnet50_voc", (2, 3, 64, 64), _CROP),
    "deeplab_resnet50_ade": ("image", "deeplab_resnet50_ade", (2, 3, 64, 64), _CROP),
    "psp_resnet50_ade": ("image", "psp_resnet50_ade", (2, 3, 64, 64), _CROP),
    "simple_pose_resnet18_v1b": ("image", "simple_pose_resnet18_v1b", (2, 3, 128, 96), {}),
    "bert_small": ("bert", None, (2, SEQUENCE), {}),
    "transformer_encoder": ("encoder", None, (2, SEQUENCE, 32), {}),
}  # fmt: skip


def inputs(name):
    """The inputs fed to network ``name``: a list of ``(input name, array)``."""
    kind, _, shape, _ = NETWORKS[name]
    rng = np.random.RandomState(SEED)
    valid = np.array(VALID_LENGTHS, dtype=np.float32)
    if kind == "image":
        return [("data", rng.uniform(-1.0, 1.0, shape).astype(np.float32))]
    if kind == "bert":
        tokens = rng.randint(0, VOCAB, shape).astype(np.float32)
        types = (np.arange(shape[1]) >= shape[1] // 2).astype(np.float32)
        return [("data0", tokens), ("data1", np.tile(types, (shape[0], 1))), ("data2", valid)]
    return [("data0", rng.uniform(-1.0, 1.0, shape).astype(np.float32)), ("data1", valid)]


# constant tables (anchors, offsets) are allocated for inputs up to 128 cells a
# side and sliced to the feature map's size: the golden file keeps a corner
CONSTANT_CORNER = 16


def constant_corner(value):
    """The corner of a constant table the recorded inputs read: long axes cut to CONSTANT_CORNER."""
    return value[tuple(slice(0, CONSTANT_CORNER) if n >= 64 else slice(None) for n in value.shape)]


def constant_from_corner(corner, shape):
    """A constant of ``shape`` holding ``corner``, NaN elsewhere (so a read outside shows)."""
    value = np.full(shape, np.nan, dtype=corner.dtype)
    value[tuple(slice(0, n) for n in corner.shape)] = corner
    return value


# outputs above this many values (the segmentation maps: 2.4 million values
# for ADE20K's 150 classes) are kept as a seeded sample of OUTPUT_SAMPLE of
# them plus each (image, channel)'s mean, so every pixel still counts
OUTPUT_LIMIT = 50000
OUTPUT_SAMPLE = 8192


def output_summary(value):
    """What the golden file keeps of an output: all of it, or a sample and channel means."""
    value = np.asarray(value)
    if value.size <= OUTPUT_LIMIT:
        return value
    picks = np.random.RandomState(SEED).choice(value.size, OUTPUT_SAMPLE, replace=False)
    flat = value.reshape(-1)[np.sort(picks)]
    means = value.reshape(value.shape[0] * value.shape[1], -1).astype(np.float64).mean(axis=1)
    return np.concatenate([flat.astype(np.float64), means])
