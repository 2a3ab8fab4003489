"""ImageRecordIter's behaviour beyond the recorded batches: random augmentation, errors, epochs."""

import logging
import os

import numpy as np
import pytest

from rebind import recordio
from rebind.io.image_record import ImageRecordInt8Iter, ImageRecordIter, ImageRecordUInt8Iter
from rebind.recordio import RecordIOError

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "image_record")
PNG_REC = os.path.join(GOLDEN, "png.rec")
RANDOM = {
    "rand_crop": True,
    "rand_mirror": True,
    "max_rotate_angle": 20,
    "max_shear_ratio": 0.1,
    "max_random_scale": 1.2,
    "min_random_scale": 0.8,
    "max_aspect_ratio": 0.25,
    "pad": 2,
    "fill_value": 0,
    "brightness": 0.3,
    "contrast": 0.3,
    "saturation": 0.3,
    "pca_noise": 0.1,
    "random_h": 10,
    "random_s": 20,
    "random_l": 20,
    "inter_method": 10,
}


def _iter(**kwargs):
    base = {"path_imgrec": PNG_REC, "data_shape": (3, 16, 16), "batch_size": 4, "verbose": False}
    base.update(kwargs)
    return ImageRecordIter(**base)


def _epochs(it, count=2):
    out = []
    for _ in range(count):
        out.append([(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it])
        it.reset()
    it.close()
    return out


def _data(epochs):
    return np.concatenate([d for epoch in epochs for d, _, _ in epoch])


def test_random_augmentation_is_valid_seeded_and_reproducible():
    first = _data(_epochs(_iter(seed_aug=3, **RANDOM)))
    again = _data(_epochs(_iter(seed_aug=3, preprocess_threads=1, prefetch_buffer=1, **RANDOM)))
    other = _data(_epochs(_iter(seed_aug=4, **RANDOM)))
    plain = _data(_epochs(_iter()))
    assert first.shape == plain.shape and first.dtype == np.float32
    assert first.min() >= 0 and first.max() <= 255
    np.testing.assert_array_equal(first, again)  # independent of threads and prefetching
    assert not np.array_equal(first, other)
    assert not np.array_equal(first, plain)


def test_random_resized_crop_and_crop_sizes_give_the_data_shape():
    for extra in (
        {
            "random_resized_crop": True,
            "min_random_area": 0.3,
            "max_aspect_ratio": 1.3,
            "min_aspect_ratio": 0.7,
        },
        {"min_crop_size": 6, "max_crop_size": 9, "rand_crop": True},
        {"max_random_contrast": 0.2, "max_random_illumination": 10, "seed": 5},
    ):
        data = _data(_epochs(_iter(data_shape=(3, 8, 10), **extra), 1))
        assert data.shape[1:] == (3, 8, 10) and np.isfinite(data).all()


def test_rand_mirror_flips_some_images_exactly():
    plain = _data(_epochs(_iter(), 1))
    mirrored = _data(_epochs(_iter(rand_mirror=True, seed=1), 1))
    flipped = [np.array_equal(m, p[:, :, ::-1]) for m, p in zip(mirrored, plain, strict=True)]
    kept = [np.array_equal(m, p) for m, p in zip(mirrored, plain, strict=True)]
    assert all(f or k for f, k in zip(flipped, kept, strict=True)) and any(flipped) and any(kept)


def _labels(epochs):
    """The labels of each epoch's batches, without pad rows."""
    return [[lab[: lab.size - pad].tolist() for _, lab, pad in epoch] for epoch in epochs]


def test_shuffle_is_seeded_and_reshuffles_each_epoch():
    index = PNG_REC[:-3] + "idx"
    for extra in ({}, {"path_imgidx": index}):
        labels = _labels(_epochs(_iter(shuffle=True, seed=2, round_batch=False, **extra)))
        again = _labels(_epochs(_iter(shuffle=True, seed=2, round_batch=False, **extra)))
        ordered = _labels(_epochs(_iter(round_batch=False, **extra)))
        assert labels == again
        assert labels[0] != labels[1] and labels[0] != ordered[0]
        for epoch in labels:
            assert sorted(sum(epoch, [])) == sorted(sum(ordered[0], []))


def test_reset_mid_epoch_starts_from_the_first_record():
    it = _iter()
    first = next(it).label[0].asnumpy()
    next(it)
    it.reset()
    np.testing.assert_array_equal(next(it).label[0].asnumpy(), first)
    it.close()


def test_uint8_and_int8_iterators():
    plain = _data(_epochs(_iter(), 1))
    raw = _data(
        _epochs(
            ImageRecordUInt8Iter(
                path_imgrec=PNG_REC, data_shape=(3, 16, 16), batch_size=4, verbose=False
            ),
            1,
        )
    )
    assert raw.dtype == np.uint8
    np.testing.assert_array_equal(raw, plain)
    shifted = _data(
        _epochs(
            ImageRecordInt8Iter(
                path_imgrec=PNG_REC,
                data_shape=(3, 16, 16),
                batch_size=4,
                mean_r=128,
                mean_g=128,
                mean_b=128,
                verbose=False,
            ),
            1,
        )
    )
    assert shifted.dtype == np.int8
    np.testing.assert_array_equal(shifted, np.clip(plain - 128, -128, 127))


def test_unknown_keywords_warn(caplog):
    with caplog.at_level(logging.WARNING, logger="rebind.io"):
        _iter(hue=0.2, not_a_param=1).close()
    assert "hue" in caplog.text and "random_h" in caplog.text and "not_a_param" in caplog.text


def test_string_values_are_read_as_mxnet_reads_them():
    it = _iter(batch_size="4", data_shape="(3, 16, 16)", round_batch="0", resize="20")
    assert it.provide_data[0].shape == (4, 3, 16, 16)
    it.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dtype": "float16"}, "dtype"),
        ({"data_shape": (2, 16, 16)}, "channels"),
        ({"inter_method": 7}, "inter_method"),
        ({"part_index": 3, "num_parts": 2}, "part_index"),
        ({"aug_seq": "aug_other"}, "aug_default"),
        ({"batch_size": 40}, "bigger than the batch size"),
    ],
)
def test_bad_parameters_are_refused(kwargs, message):
    with pytest.raises((ValueError, NotImplementedError), match=message):
        it = _iter(**kwargs)
        _epochs(it, 2)


def _write_records(path, payloads):
    writer = recordio.MXRecordIO(str(path), "w")
    for i, payload in enumerate(payloads):
        writer.write(recordio.pack(recordio.IRHeader(0, float(i), i, 0), payload))
    writer.close()


def test_a_bad_image_is_reported_with_its_record_index(tmp_path):
    good = recordio.unpack(recordio.MXRecordIO(PNG_REC, "r").read())[1]
    path = tmp_path / "bad.rec"
    _write_records(path, [good, good, b"not an image at all", good])
    it = ImageRecordIter(path_imgrec=str(path), data_shape=(3, 8, 8), batch_size=2, verbose=False)
    next(it)
    with pytest.raises(ValueError, match=r"record 2 \(image index 2.*bad\.rec"):
        next(it)
    it.close()


def test_a_corrupt_record_names_the_file_and_offset(tmp_path):
    raw = bytearray(open(PNG_REC, "rb").read())
    second = raw.find(b"\x0a\x23\xd7\xce", 4)
    raw[second : second + 4] = b"XXXX"
    path = tmp_path / "corrupt.rec"
    path.write_bytes(bytes(raw))
    with pytest.raises(RecordIOError, match=rf"corrupt\.rec.*offset {second}"):
        ImageRecordIter(path_imgrec=str(path), data_shape=(3, 8, 8), batch_size=2)


def test_a_truncated_file_names_the_file(tmp_path):
    raw = open(PNG_REC, "rb").read()
    path = tmp_path / "short.rec"
    path.write_bytes(raw[: len(raw) - 50])
    with pytest.raises(RecordIOError, match=r"short\.rec.*truncated"):
        ImageRecordIter(path_imgrec=str(path), data_shape=(3, 8, 8), batch_size=2)


def test_fuzzed_files_fail_with_record_errors_only(tmp_path):
    raw = open(PNG_REC, "rb").read()
    rng = np.random.default_rng(0)
    path = tmp_path / "fuzz.rec"
    for trial in range(20):
        data = bytearray(raw)
        for spot in rng.integers(0, len(data), size=3):
            data[spot] = int(rng.integers(0, 256))
        path.write_bytes(bytes(data[: int(rng.integers(8, len(data) + 1))]))
        try:
            _epochs(
                ImageRecordIter(
                    path_imgrec=str(path), data_shape=(3, 8, 8), batch_size=2, verbose=False
                ),
                1,
            )
        except ValueError as exc:  # RecordIOError and FormatError are ValueErrors
            assert "fuzz.rec" in str(exc), f"trial {trial} (seed 0): {exc}"
