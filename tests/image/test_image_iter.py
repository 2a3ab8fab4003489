"""mx.image.ImageIter against the batches MXNet 1.9.1 yields for the same files.

The dataset (tests/image/image_inputs.py) has five PNG images of different sizes,
one grayscale; its list files and MXNet-written .rec/.idx are rebuilt from the recorded
bytes. The .rec cases need rebind.recordio and skip without it.
"""

import importlib.util
import random
import re

import numpy as np
import pytest

pytest.importorskip("cv2")

from rebind import image  # noqa: E402
from rebind.image.opencv import ImageDecodeError  # noqa: E402
from rebind.io import DataBatch  # noqa: E402

from . import golden  # noqa: E402
from .image_inputs import ITER_CASES, write_dataset  # noqa: E402

HAS_RECORDIO = importlib.util.find_spec("rebind.recordio") is not None


@pytest.fixture
def sources(tmp_path):
    imglist = write_dataset(str(tmp_path), golden.encoded_all())
    for ext in ("rec", "idx"):
        (tmp_path / f"data.{ext}").write_bytes(golden.arrays()[f"file.data.{ext}"].tobytes())
    root = str(tmp_path)
    return {
        "lst": {"path_imglist": str(tmp_path / "data.lst"), "path_root": root},
        "lst2": {"path_imglist": str(tmp_path / "data2.lst"), "path_root": root},
        "imglist": {"imglist": imglist, "path_root": root},
        "rec": {
            "path_imgrec": str(tmp_path / "data.rec"),
            "path_imgidx": str(tmp_path / "data.idx"),
        },
    }


def _make(sources, name, **extra):
    kwargs = dict(ITER_CASES[name], **extra)
    source = kwargs.pop("source")
    if source == "rec" and not HAS_RECORDIO:
        pytest.skip("rebind.recordio is not there yet")
    kwargs.update(sources[source])
    random.seed(0)
    return image.ImageIter(**kwargs)


@pytest.mark.parametrize("name", sorted(ITER_CASES))
def test_batches_match_mxnet(sources, name):
    it = _make(sources, name)
    expected = golden.meta()[f"iter.{name}"]
    assert [[d[0], list(d[1])] for d in it.provide_data] == expected["provide_data"]
    assert [[d[0], list(d[1])] for d in it.provide_label] == expected["provide_label"]
    arrays = golden.arrays()
    for epoch, pads in enumerate(expected["pads"]):
        batches = list(it)
        assert [b.pad for b in batches] == pads
        for b, batch in enumerate(batches):
            assert isinstance(batch, DataBatch)
            data, label = batch.data[0], batch.label[0]
            assert data.dtype == np.float32 and label.dtype == np.float32
            want = arrays[f"iter.{name}.{epoch}.{b}.data"]
            np.testing.assert_allclose(data.asnumpy(), want, rtol=1e-6, atol=1e-4)
            np.testing.assert_array_equal(label.asnumpy(), arrays[f"iter.{name}.{epoch}.{b}.label"])
        it.reset()


def test_random_augmentation_is_valid_and_seeded(sources):
    def epoch(seed):
        random.seed(seed)
        np.random.seed(seed)
        it = _make(sources, "pad", rand_crop=True, rand_mirror=True, brightness=0.2, shuffle=True)
        return [b.data[0].asnumpy() for b in it]

    first = epoch(1)
    assert len(first) == 3 and all(d.shape == (2, 3, 8, 8) for d in first)
    assert all(np.isfinite(d).all() for d in first)
    for a, b in zip(first, epoch(1), strict=True):
        np.testing.assert_array_equal(a, b)


def test_hard_reset_drops_rolled_over_examples(sources):
    it = _make(sources, "roll_over")
    assert len(list(it)) == 2
    it.hard_reset()
    assert [b.pad for b in it] == [0, 0]


def test_aug_list_replaces_create_augmenter(sources):
    it = _make(sources, "pad", aug_list=[image.ForceResizeAug((8, 8))])
    batch = next(iter(it))
    assert batch.data[0].shape == (2, 3, 8, 8) and batch.data[0].asnumpy().max() > 1


def test_broken_image_is_named(sources, tmp_path):
    (tmp_path / "img1_small.png").write_bytes(b"not an image")
    it = _make(sources, "pad")
    with pytest.raises(RuntimeError, match="img1_small.png"):
        list(it)


def test_broken_image_from_a_list_names_the_full_path(sources, tmp_path):
    (tmp_path / "img1_small.png").write_bytes(b"not an image")
    it = _make(sources, "pad")
    expected = f"Broken image filename: img1_small.png (file {tmp_path / 'img1_small.png'}), "
    with pytest.raises(ImageDecodeError, match=re.escape(expected)) as info:
        list(it)
    assert isinstance(info.value, RuntimeError)  # MXNet raises RuntimeError here


def _write_rec(tmp_path, payloads):
    """A .rec/.idx whose records hold ``payloads`` (labels 0, 1, ...); their byte offsets."""
    from rebind import recordio

    rec = recordio.MXIndexedRecordIO(tmp_path / "x.idx", tmp_path / "x.rec", "w")
    offsets = []
    for key, payload in enumerate(payloads):
        offsets.append(rec.tell())
        rec.write_idx(key, recordio.pack(recordio.IRHeader(0, float(key), key, 0), payload))
    rec.close()
    return str(tmp_path / "x.rec"), str(tmp_path / "x.idx"), offsets


@pytest.mark.skipif(not HAS_RECORDIO, reason="needs rebind.recordio")
@pytest.mark.parametrize("indexed", [False, True])
def test_broken_record_names_the_file_index_and_offset(tmp_path, indexed):
    png = golden.encoded_all()[sorted(golden.encoded_all())[0]]
    rec, idx, offsets = _write_rec(tmp_path, [png, b"not an image" * 5, png])
    kwargs = {"path_imgidx": idx} if indexed else {}
    it = image.ImageIter(3, (3, 8, 8), path_imgrec=rec, **kwargs)
    expected = f"Broken image index: 1 (record 1 at byte offset {offsets[1]} of {rec}), "
    with pytest.raises(ImageDecodeError, match=re.escape(expected)):
        it.next()


@pytest.mark.skipif(not HAS_RECORDIO, reason="needs rebind.recordio")
def test_record_too_short_for_its_header_names_the_file(tmp_path):
    from rebind import recordio

    writer = recordio.MXRecordIO(tmp_path / "short.rec", "w")
    writer.write(b"abc")
    writer.close()
    it = image.ImageIter(1, (3, 8, 8), path_imgrec=str(tmp_path / "short.rec"))
    place = f"ImageIter: record 0 at byte offset 0 of {tmp_path / 'short.rec'}: "
    with pytest.raises(recordio.RecordIOError, match=re.escape(place) + ".*24-byte IRHeader"):
        it.next()


def test_bad_arguments_are_refused(sources):
    with pytest.raises(ValueError, match="path_imgrec"):
        image.ImageIter(2, (3, 8, 8))
    with pytest.raises(ValueError, match="3 channels"):
        _make(sources, "pad", data_shape=(1, 8, 8))
    with pytest.raises(ValueError, match="last_batch_handle"):
        _make(sources, "pad", last_batch_handle="wrap")
    with pytest.raises(ValueError, match="label_width"):
        list(_make(sources, "label2", label_width=3))


def test_detection_names_live_in_det():
    from rebind.image import detection

    assert image.det is detection
    assert image.ImageDetIter is detection.ImageDetIter
    assert isinstance(image.CreateDetAugmenter((3, 8, 8))[0], detection.DetAugmenter)
