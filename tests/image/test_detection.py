"""mx.image's detection API replays MXNet 1.9.1's recorded outputs.

tests/recording/record_detection_io.py wrote the images, the .lst/.rec/.idx (packed
by MXNet's own im2rec), the configurations and MXNet's batches. Random cases seed
Python's ``random``, which MXNet's detection augmenters and rebind's draw from in
the same order, so labels compare exactly there too. Pixels allow one unit: OpenCV
4.8 (MXNet's) and the test environment's round a few resized pixels differently.
"""

import json
import os
import random

import numpy as np
import pytest

import rebind as mx

pytest.importorskip("cv2")

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden", "detection_io")
SPEC = json.load(open(os.path.join(GOLDEN, "cases.json"), encoding="utf-8"))
RECORDED = np.load(os.path.join(GOLDEN, "outputs.npz"))


def _detiter(case, **extra):
    spec = SPEC["detiter"][case]
    kwargs = {k: (os.path.join(GOLDEN, v) if k.startswith("path_") else v) for k, v in spec.items()}
    kwargs.pop("_seed", None)
    for key in ("area_range", "aspect_ratio_range", "pad_val"):
        if key in kwargs:
            kwargs[key] = tuple(kwargs[key])
    kwargs.update(extra)
    return mx.image.ImageDetIter(3, (3, 16, 16), **kwargs)


@pytest.mark.parametrize("case", sorted(SPEC["detiter"]))
def test_image_det_iter_batches_equal_mxnet(case):
    it = _detiter(case)
    assert it.label_shape == tuple(RECORDED[f"detiter.{case}.label_shape"])
    if "_seed" in SPEC["detiter"][case]:
        random.seed(SPEC["detiter"][case]["_seed"])
    data, label, pad = [], [], []
    for _ in range(2):
        for batch in it:
            data.append(batch.data[0].asnumpy())
            label.append(batch.label[0].asnumpy())
            pad.append(batch.pad)
        it.reset()
    np.testing.assert_array_equal(np.array(pad), RECORDED[f"detiter.{case}.pad"])
    np.testing.assert_allclose(
        np.stack(label), RECORDED[f"detiter.{case}.label"], rtol=0, atol=1e-6
    )
    expected = RECORDED[f"detiter.{case}.data"]
    scale = 1 / 57.0 if SPEC["detiter"][case].get("std") else 1
    np.testing.assert_allclose(np.stack(data), expected, rtol=0, atol=1.001 * scale + 1e-4)


def test_random_augmentation_keeps_boxes_valid_and_classes():
    """Invariants over many seeds: boxes in [0, 1], ordered, classes from the data."""
    it = _detiter("random_crop_pad_mirror", rand_crop=1, rand_pad=1, area_range=(0.1, 3.0))
    for seed in range(8):
        random.seed(seed)
        for batch in it:
            label = batch.label[0].asnumpy().reshape(-1, 6)
            objects = label[label[:, 0] >= 0]
            assert len(objects), f"seed {seed}: a batch lost every object"
            assert set(objects[:, 0]) <= {0.0, 1.0, 2.0}, f"seed {seed}"
            assert (objects[:, 1:5] >= 0).all() and (objects[:, 1:5] <= 1).all(), f"seed {seed}"
            assert (objects[:, 3] > objects[:, 1]).all() and (objects[:, 4] > objects[:, 2]).all()
        it.reset()


@pytest.mark.parametrize("name", ["crop", "crop_fixed", "pad", "flip", "select"])
def test_det_augmenters_equal_mxnet(name):
    rs = np.random.RandomState(8)
    src = mx.nd.array(rs.randint(0, 256, size=(40, 50, 3)), dtype="uint8")
    label = np.array(
        [[0, 0.1, 0.2, 0.5, 0.6, 1], [2, 0.4, 0.3, 0.9, 0.95, 2], [1, 0.7, 0.1, 0.8, 0.2, 3]],
        np.float32,
    )
    augs = {
        "crop": lambda: mx.image.DetRandomCropAug(min_object_covered=0.3, area_range=(0.2, 0.9)),
        "crop_fixed": lambda: mx.image.DetRandomCropAug(aspect_ratio_range=1.0, area_range=0.5),
        "pad": lambda: mx.image.DetRandomPadAug(area_range=(1.5, 3.0), pad_val=(1, 2, 3)),
        "flip": lambda: mx.image.DetHorizontalFlipAug(0.5),
        "select": lambda: mx.image.DetRandomSelectAug(
            [mx.image.DetHorizontalFlipAug(1.0), mx.image.DetRandomCropAug()], 0.3
        ),
    }
    aug = augs[name]()
    random.seed(21)
    for trial in range(6):
        out, new = aug(src.copy(), label.copy())
        np.testing.assert_array_equal(out.asnumpy(), RECORDED[f"aug.{name}.{trial}.image"])
        np.testing.assert_allclose(new, RECORDED[f"aug.{name}.{trial}.label"], rtol=0, atol=1e-6)
    assert json.loads(json.dumps(aug.dumps())) == SPEC["dumps"][name]


@pytest.mark.parametrize("name", ["default", "all"])
def test_create_det_augmenter_lists_mxnets_steps(name):
    configs = {
        "default": {},
        "all": dict(
            resize=30,
            rand_crop=0.5,
            rand_pad=0.5,
            rand_gray=0.1,
            rand_mirror=True,
            mean=True,
            std=True,
            brightness=0.1,
            contrast=0.1,
            saturation=0.1,
            pca_noise=0.05,
            hue=0.1,
            inter_method=1,
            min_object_covered=[0.3, 0.5],
            area_range=(0.3, 2.0),
            max_attempts=10,
            pad_val=(1, 2, 3),
        ),
    }
    augs = mx.image.CreateDetAugmenter((3, 20, 24), **configs[name])
    got = json.loads(json.dumps([a.dumps() for a in augs]))
    assert [entry[0] for entry in got] == [entry[0] for entry in SPEC["dumps"][f"create.{name}"]]
    assert got == SPEC["dumps"][f"create.{name}"]


def test_reshape_and_sync_label_shape():
    one = [[2, 5, 0, 0.1, 0.1, 0.5, 0.5, "img0.png"]]
    small = _detiter("rec_pad", path_imgrec=None, imglist=one, path_root=GOLDEN)
    big = _detiter("rec_pad")
    assert small.label_shape == (1, 5) and big.label_shape == (4, 6)
    with pytest.raises(ValueError, match="object width mismatch"):
        big.sync_label_shape(small)
    other = _detiter("list")
    other.reshape(label_shape=(6, 6))
    assert big.sync_label_shape(other) is other and big.label_shape == (6, 6)
    assert big.provide_label[0][1] == (3, 6, 6)
    assert big.next().label[0].shape == (3, 6, 6)
    with pytest.raises(ValueError, match="reduce label count from 6 to 2"):
        big.reshape(label_shape=(2, 6))
    with pytest.raises(ValueError, match="object width inconsistent"):
        big.reshape(label_shape=(7, 5))
    big.reshape(data_shape=(3, 10, 12))
    assert big.provide_data[0][1] == (3, 3, 10, 12) and big.data_shape == (3, 10, 12)


def test_bad_labels_raise_like_mxnet():
    with pytest.raises(RuntimeError, match="Label shape is invalid"):
        mx.image.detection.parse_det_label(np.array([2, 5, 0, 0.1, 0.1, 0.2]))
    with pytest.raises(RuntimeError, match="inconsistent with annotation width 5"):
        mx.image.detection.parse_det_label(np.array([2, 5, 0, 0.1, 0.1, 0.2, 0.3, 1]))
    with pytest.raises(RuntimeError, match="no valid label"):
        mx.image.detection.parse_det_label(np.array([2, 5, 0, 0.5, 0.1, 0.2, 0.3]))
    with pytest.raises(TypeError, match="area_range"):
        mx.image.DetRandomCropAug(area_range=(0.5, 0.1))
    with pytest.raises(TypeError, match="Borrowing from invalid Augmenter"):
        mx.image.DetBorrowAug(mx.image.DetHorizontalFlipAug(0.5))


def test_scalar_pad_val_fills_every_channel():
    """MXNet fills (v, 0, 0) for a number; rebind fills v in every channel."""
    aug = mx.image.DetRandomPadAug(area_range=(2.0, 3.0), pad_val=100)
    random.seed(0)
    out, _ = aug(mx.nd.zeros((10, 10, 3), dtype="uint8"), np.array([[0, 0.1, 0.1, 0.5, 0.5]]))
    corners = out.asnumpy()[[0, 0, -1, -1], [0, -1, 0, -1]]
    assert out.shape[0] > 10 and (corners == 100).all()


def test_draw_next_draws_the_boxes():
    it = _detiter("rec_pad")
    images = list(it.draw_next(color=(255, 0, 0), id2labels={0: "a"}))
    assert len(images) == 7 and images[0].dtype == np.uint8 and images[0].shape == (16, 16, 3)
    plain = _detiter("rec_pad")
    label, encoded = plain.next_sample()
    box = plain._parse_label(label)[0]
    x1, y1 = int(box[1] * 16), int(box[2] * 16)
    assert tuple(images[0][y1 + 1, x1]) == (0, 0, 255)  # BGR red on the left edge


BOXES = np.array(
    [[0, 0.1, 0.2, 0.5, 0.6], [2, 0.4, 0.3, 0.9, 0.95], [1, 0.7, 0.1, 0.8, 0.2]], np.float32
)


@pytest.mark.parametrize("seed", range(20))
def test_random_crop_meets_its_constraints(seed):
    aug = mx.image.DetRandomCropAug(
        min_object_covered=0.5, aspect_ratio_range=(0.5, 2.0), area_range=(0.2, 0.8),
        min_eject_coverage=0.4,
    )  # fmt: skip
    random.seed(seed)
    crop = aug._random_crop_proposal(BOXES.copy(), 40, 50)
    if not crop:
        return
    x, y, w, h, label = crop
    assert 0.2 * 2000 <= w * h <= 0.8 * 2000, f"seed {seed}: area {w * h}"
    assert 0.5 - 1 / h <= w / h <= 2.0 + 1 / h, f"seed {seed}: aspect {w / h}"
    assert 0 <= x <= 50 - w and 0 <= y <= 40 - h
    pixels = BOXES[:, 1:] * [50, 40, 50, 40]
    iw = np.clip(np.minimum(pixels[:, 2], x + w) - np.maximum(pixels[:, 0], x), 0, None)
    ih = np.clip(np.minimum(pixels[:, 3], y + h) - np.maximum(pixels[:, 1], y), 0, None)
    coverage = iw * ih / ((pixels[:, 2] - pixels[:, 0]) * (pixels[:, 3] - pixels[:, 1]))
    touched = coverage[coverage > 1e-4]  # edges that merely touch are float noise
    assert touched.size and touched.min() > 0.5 - 1e-6, f"seed {seed}: coverage {coverage}"
    kept = BOXES[coverage > 0.4 + 1e-6, 0]
    assert list(label[:, 0]) == list(kept), f"seed {seed}"
    assert (label[:, 1:] >= 0).all() and (label[:, 1:] <= 1).all()


@pytest.mark.parametrize("seed", range(10))
def test_random_pad_moves_boxes_with_the_image(seed):
    aug = mx.image.DetRandomPadAug(aspect_ratio_range=(0.5, 2.0), area_range=(1.2, 4.0))
    random.seed(seed)
    pad = aug._random_pad_proposal(BOXES.copy(), 40, 50)
    assert pad, f"seed {seed}: no pad proposed"
    x, y, w, h, label = pad
    assert w >= 52 and h >= 42 and w * h <= 4.0 * 2000 * 1.1
    expected = (BOXES[:, 1:] * [50, 40, 50, 40] + [x, y, x, y]) / [w, h, w, h]
    np.testing.assert_allclose(label[:, 1:], expected, rtol=1e-6)
    np.testing.assert_array_equal(label[:, 0], BOXES[:, 0])
