"""mx.io.ImageDetRecordIter replays MXNet 1.9.1's recorded batches (no random augmentation).

The .rec (packed by MXNet's im2rec --pack-label), configurations and batches come
from tests/recording/record_detection_io.py. Each label row is [channels, height,
width, label length, header..., objects..., pad values...]. Pixels allow one
unit for the resizes (OpenCV 4.8 there, the test environment's here), scaled by
the configuration's std and scale.
"""

import json
import os

import numpy as np
import pytest

import rebind as mx

pytest.importorskip("cv2")

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden", "detection_io")
SPEC = json.load(open(os.path.join(GOLDEN, "cases.json"), encoding="utf-8"))
RECORDED = np.load(os.path.join(GOLDEN, "outputs.npz"))


def _make(case, **extra):
    kwargs = dict(SPEC["detrec_base"], **SPEC["detrec"][case], **extra)
    kwargs = {
        k: (os.path.join(GOLDEN, v) if k.startswith("path_") else v) for k, v in kwargs.items()
    }
    return mx.io.ImageDetRecordIter(verbose=False, **kwargs)


def _epochs(it, count=2):
    data, label, pad = [], [], []
    for _ in range(count):
        for batch in it:
            data.append(batch.data[0].asnumpy())
            label.append(batch.label[0].asnumpy())
            pad.append(batch.pad)
        it.reset()
    return np.stack(data), np.stack(label), np.array(pad)


@pytest.mark.parametrize("case", sorted(SPEC["detrec"]))
def test_batches_equal_mxnet(case):
    it = _make(case)
    assert it.provide_label[0][1] == tuple(RECORDED[f"detrec.{case}.label_shape"])
    data, label, pad = _epochs(it)
    it.close()
    np.testing.assert_array_equal(pad, RECORDED[f"detrec.{case}.pad"])
    want_label, want_data = RECORDED[f"detrec.{case}.label"], RECORDED[f"detrec.{case}.data"]
    spec = SPEC["detrec"][case]
    if not spec.get("round_batch", True):
        # MXNet leaves stale rows after the last record; rebind zeros / label_pad_value
        real = np.arange(label.shape[1])[None, :] < (label.shape[1] - pad)[:, None]
        label, want_label, data, want_data = (
            label[real],
            want_label[real],
            data[real],
            want_data[real],
        )
    np.testing.assert_allclose(label, want_label, rtol=0, atol=1e-6)
    unit = spec.get("scale", 1) / min(
        spec.get("std_r", 1), spec.get("std_g", 1), spec.get("std_b", 1)
    )
    np.testing.assert_allclose(data, want_data, rtol=0, atol=1.001 * unit)


def test_random_augmentation_keeps_labels_valid():
    """Crops, pads and mirrors: boxes stay in [0, 1], classes stay those of the data."""
    it = _make(
        "plain", rand_crop_prob=1, min_crop_scales=(0.3, 0.5), max_crop_scales=(0.9, 1.0),
        min_crop_aspect_ratios=0.5, max_crop_aspect_ratios=2.0, min_crop_overlaps=(0.1, 0.3),
        num_crop_sampler=2, rand_pad_prob=0.5, max_pad_scale=2.0, rand_mirror_prob=0.5,
        random_hue_prob=0.5, max_random_hue=10, seed=3,
    )  # fmt: skip
    _, labels, _ = _epochs(it, 3)
    it.close()
    for row in labels.reshape(-1, labels.shape[-1]):
        length = int(row[3])
        header, width = int(row[4]), int(row[5])
        objects = row[4 + header : 4 + length].reshape(-1, width)
        assert len(objects) >= 1
        assert set(objects[:, 0]) <= {0.0, 1.0, 2.0}
        assert (objects[:, 1:5] >= 0).all() and (objects[:, 1:5] <= 1).all()
        assert (objects[:, 3] > objects[:, 1]).all() and (objects[:, 4] > objects[:, 2]).all()


def test_errors_name_the_problem():
    with pytest.raises(
        mx.base.MXNetError, match="label_pad_width: 5 smaller than estimated width: 27"
    ):
        _make("plain", label_pad_width=5)
    with pytest.raises(mx.base.MXNetError, match="label_width is set to 9"):
        _make("plain", label_width=9)
    with pytest.raises(ValueError, match="resize_mode must be"):
        _make("plain", resize_mode="stretch")
    with pytest.raises(NotImplementedError, match="det_aug_default"):
        _make("plain", aug_seq="aug_default")


def test_shuffle_permutes_the_examples_and_mean_img_is_made(tmp_path):
    plain, shuffled = (
        _make("plain", batch_size=7),
        _make("plain", batch_size=7, shuffle=True, seed=4),
    )
    rows = [np.stack(sorted(map(tuple, it.next().label[0].asnumpy()))) for it in (plain, shuffled)]
    np.testing.assert_array_equal(rows[0], rows[1])
    plain.close(), shuffled.close()
    path = tmp_path / "mean.nd"
    it = _make("plain", batch_size=7, mean_img=str(path))
    mean = mx.nd.load(str(path))["mean_img"].asnumpy()
    it_plain = _make("plain", batch_size=7)
    raw = it_plain.next().data[0].asnumpy()
    np.testing.assert_allclose(mean, raw.mean(axis=0), rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(it.next().data[0].asnumpy(), raw - mean, atol=1e-3)
    it.close(), it_plain.close()
