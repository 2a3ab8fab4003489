"""ImageRecordIter replays MXNet 1.9.1's recorded batches (no random augmentation).

The records, configurations and batches were written by
tests/recording/record_image_record_iter.py with real MXNet. The images are
PNG (decoded identically everywhere) except in the ``jpeg*`` cases. Every
case compares exactly, but for bicubic resizing (``inter_method`` 2, and 9
when it enlarges): OpenCV 4.8 (MXNet's) and 5.0 (rebind's test environment)
round a few pixels differently, so those cases allow one unit. With
``round_batch=False`` MXNet reports ``pad=0`` for the short last batch and
leaves stale rows there; rebind reports the true pad and zero rows, so that
case compares the full batches only.
"""

import json
import os

import numpy as np
import pytest

import rebind as mx
from rebind.io import image_record

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "image_record")
SPEC = json.load(open(os.path.join(HERE, "cases.json"), encoding="utf-8"))
RECORDED = np.load(os.path.join(HERE, "batches.npz"))
ONE_UNIT = {"resize_cubic", "resize_auto"}


def _kwargs(case, tmp_path):
    kwargs = dict(SPEC["base"], **SPEC["cases"][case])
    kwargs.pop("_iter", None)
    for key in ("path_imgrec", "path_imgidx", "path_imglist"):
        if key in kwargs:
            kwargs[key] = os.path.join(HERE, kwargs[key])
    if "mean_img" in kwargs:
        kwargs["mean_img"] = str(tmp_path / "mean.nd")
    kwargs.setdefault("preprocess_threads", 2)
    return kwargs


def _run(case, tmp_path):
    make = getattr(image_record, SPEC["cases"][case].get("_iter", "ImageRecordIter"))
    it = make(verbose=False, **_kwargs(case, tmp_path))
    seen = {"data": [], "label": [], "pad": []}
    for _ in range(SPEC["epochs"]):
        for batch in it:
            seen["data"].append(batch.data[0].asnumpy())
            seen["label"].append(batch.label[0].asnumpy())
            seen["pad"].append(batch.pad)
        it.reset()
    it.close()
    return it, {key: np.stack(values) for key, values in seen.items()}


@pytest.mark.parametrize("case", sorted(SPEC["cases"]))
def test_batches_equal_mxnet(case, tmp_path):
    it, got = _run(case, tmp_path)
    data, label, pad = (RECORDED[f"{case}.{key}"] for key in ("data", "label", "pad"))
    assert got["data"].shape == data.shape
    assert got["data"].dtype == data.dtype
    rows = slice(None)
    if case == "no_round":
        rows = [i for i, p in enumerate(got["pad"]) if p == 0]
        assert got["pad"].tolist() == [0, 0, 1, 0, 0, 1]
    else:
        np.testing.assert_array_equal(got["pad"], pad)
    tolerance = 1 if case in ONE_UNIT else 0
    difference = np.abs(got["data"][rows].astype(np.float64) - data[rows])
    assert difference.max() <= tolerance, f"{case}: max difference {difference.max()}"
    np.testing.assert_array_equal(got["label"][rows], label[rows])
    shapes = json.loads(str(RECORDED[f"{case}.provide"]))
    assert [list(d.shape) for d in it.provide_data] == shapes[0]
    assert [list(d.shape) for d in it.provide_label] == shapes[1]
    assert [d.name for d in it.provide_data + it.provide_label] == shapes[2]


def test_computed_mean_image_equals_mxnet_and_is_reloaded(tmp_path):
    kwargs = _kwargs("mean_img", tmp_path)
    it = image_record.ImageRecordIter(verbose=False, **kwargs)
    it.close()
    saved = mx.nd.load(kwargs["mean_img"])
    np.testing.assert_allclose(
        saved["mean_img"].asnumpy(), RECORDED["mean_img.mean"], rtol=0, atol=1e-4
    )
    _, got = _run("mean_img", tmp_path)  # the file exists now: loaded, not recomputed
    np.testing.assert_array_equal(got["data"], RECORDED["mean_img.data"])
