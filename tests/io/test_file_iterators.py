"""CSVIter and MNISTIter on small files written by the tests."""

import gzip
import struct

import numpy as np
import pytest

import rebind as mx
from rebind.errors import FormatError


# -- CSVIter --------------------------------------------------------------------------
@pytest.fixture
def csv_files(tmp_path):
    """Ten data rows (row i = 4.5*i + [0, 1.5, 3]) and ten labels (100 + i)."""
    data = np.arange(30).reshape(10, 3) * 1.5
    paths = {"data": tmp_path / "data.csv", "label": tmp_path / "label.csv"}
    np.savetxt(paths["data"], data, delimiter=",", fmt="%g")
    np.savetxt(paths["label"], np.arange(10) + 100, delimiter=",", fmt="%g")
    return paths, data


def _first_column(it):
    return [(b.pad, b.data[0].asnumpy()[:, 0].tolist(), b.label[0].asnumpy().tolist()) for b in it]


def test_csv_round_batch_fills_from_the_start_and_resumes_after(csv_files):
    paths, data = csv_files
    it = mx.io.CSVIter(
        data_csv=str(paths["data"]), data_shape=(3,), label_csv=str(paths["label"]), batch_size=4
    )
    assert repr(it.provide_data) == "[DataDesc[data,(4, 3),<class 'numpy.float32'>,NCHW]]"
    assert [(d.name, d.shape) for d in it.provide_label] == [("softmax_label", (4,))]
    col = data[:, 0]
    epochs = []
    for _ in range(3):
        epochs.append(_first_column(it))
        it.reset()
    # MXNet 1.9.1: the padded batch borrows rows 0-1, so the next epoch starts at row 2
    assert epochs[0] == [
        (0, col[0:4].tolist(), [100.0, 101.0, 102.0, 103.0]),
        (0, col[4:8].tolist(), [104.0, 105.0, 106.0, 107.0]),
        (2, col[[8, 9, 0, 1]].tolist(), [108.0, 109.0, 100.0, 101.0]),
    ]
    assert epochs[1] == [
        (0, col[2:6].tolist(), [102.0, 103.0, 104.0, 105.0]),
        (0, col[6:10].tolist(), [106.0, 107.0, 108.0, 109.0]),
    ]
    assert epochs[2] == epochs[0]


def test_csv_without_round_batch_keeps_old_rows_in_the_pad(csv_files):
    paths, data = csv_files
    it = mx.io.CSVIter(data_csv=paths["data"], data_shape=(3,), batch_size=4, round_batch=False)
    for _ in range(2):
        batches = list(it)
        it.reset()
        assert [b.pad for b in batches] == [0, 0, 2]
        # MXNet reuses its batch buffer: the two pad slots still hold rows 6 and 7
        np.testing.assert_array_equal(batches[2].data[0].asnumpy(), data[[8, 9, 6, 7]])
        assert batches[2].index.tolist() == [8, 9, 6, 7]
        assert batches[0].label[0].asnumpy().tolist() == [0.0] * 4  # no label file: zeros


def test_csv_shapes_dtypes_and_names(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("1,2,3,4.5,5,6\n\n7,8,9,10,11,-12.5\n")
    labels = tmp_path / "pairs.csv"
    labels.write_text("1,2\n3,4\n")
    it = mx.io.CSVIter(
        data_csv=path,
        data_shape=(2, 3),
        label_csv=labels,
        label_shape=(2,),
        batch_size=2,
        dtype="int32",
        data_name="x",
        label_name="y",
    )
    assert [(d.name, d.shape, d.dtype) for d in it.provide_data] == [("x", (2, 2, 3), np.int32)]
    assert [(d.name, d.shape) for d in it.provide_label] == [("y", (2, 2))]
    batch = it.next()
    assert batch.data[0].asnumpy().tolist() == [[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, -12]]]
    assert batch.label[0].asnumpy().tolist() == [[1, 2], [3, 4]]
    assert batch.data[0].context == mx.cpu(0)
    # as MXNet's C++-backed iterators: getdata()/getlabel() give one NDArray, not a list
    assert isinstance(it.getdata(), mx.nd.NDArray) and isinstance(it.getlabel(), mx.nd.NDArray)
    np.testing.assert_array_equal(it.getdata().asnumpy(), batch.data[0].asnumpy())
    np.testing.assert_array_equal(it.getlabel().asnumpy(), batch.label[0].asnumpy())


@pytest.mark.parametrize(
    "text, message",
    [
        ("1,2,3\n4,x,6\n", r"bad\.csv, line 2: 'x' is not a number"),
        ("1,2,3\n4,5\n", r"bad\.csv, line 2: 2 values, but line 1 has 3"),
        ("1,2\n3,4\n", r"bad\.csv: rows have 2 values, but data_shape \(3,\) needs 3"),
        ("", r"bad\.csv: the file holds no rows"),
    ],
)
def test_csv_malformed_files_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(FormatError, match=message):
        mx.io.CSVIter(data_csv=path, data_shape=(3,), batch_size=2)


def test_csv_label_rows_must_match_data_rows(csv_files, tmp_path):
    paths, _ = csv_files
    short = tmp_path / "short.csv"
    short.write_text("1\n2\n")
    with pytest.raises(FormatError, match="short.csv has 2 rows but .*data.csv has 10"):
        mx.io.CSVIter(data_csv=paths["data"], data_shape=(3,), label_csv=short, batch_size=2)


# -- MNISTIter ------------------------------------------------------------------------
def _write_idx(path, magic, values):
    header = struct.pack(f">{1 + values.ndim}i", magic, *values.shape)
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as handle:
        handle.write(header + values.astype(np.uint8).tobytes())


@pytest.fixture
def mnist(tmp_path):
    """Ten 4x5 'images' (pixel values 0..255) with labels 0..9, plain and gzipped."""
    images = np.random.default_rng(3).integers(0, 256, size=(10, 4, 5)).astype(np.uint8)
    labels = np.arange(10, dtype=np.uint8)
    for suffix in ("", ".gz"):
        _write_idx(tmp_path / f"img{suffix}", 2051, images)
        _write_idx(tmp_path / f"lab{suffix}", 2049, labels)
    return tmp_path, images


def test_mnist_batches_scale_pixels_by_1_over_256(mnist):
    root, images = mnist
    it = mx.io.MNISTIter(
        image=root / "img", label=root / "lab", batch_size=3, shuffle=False, silent=True
    )
    assert [(d.name, d.shape) for d in it.provide_data] == [("data", (3, 1, 4, 5))]
    assert [(d.name, d.shape) for d in it.provide_label] == [("softmax_label", (3,))]
    batches = list(it)
    assert len(batches) == 3  # the incomplete fourth batch is dropped, as in MXNet
    data = batches[2].data[0].asnumpy()
    assert data.dtype == np.float32 and data.max() < 1
    np.testing.assert_array_equal(data[:, 0], images[6:9] / np.float32(256))
    assert batches[2].label[0].asnumpy().tolist() == [6, 7, 8]
    assert batches[2].pad == 0 and batches[2].index.tolist() == [6, 7, 8]
    it.reset()
    assert len(list(it)) == 3


def test_mnist_flat_gzip_and_sharding(mnist):
    root, images = mnist
    parts = []
    for part in range(3):
        it = mx.io.MNISTIter(
            image=str(root / "img.gz"),
            label=str(root / "lab.gz"),
            batch_size=2,
            shuffle=False,
            flat=True,
            silent=True,
            num_parts=3,
            part_index=part,
        )
        assert it.provide_data[0].shape == (2, 20)
        parts.append([b.label[0].asnumpy().tolist() for b in it])
    # parts [0, 3), [3, 6), [6, 10): MXNet's int(count / parts * index) split
    assert parts == [[[0, 1]], [[3, 4]], [[6, 7], [8, 9]]]
    it.reset()
    np.testing.assert_array_equal(it.next().data[0].asnumpy(), images[6:8].reshape(2, 20) / 256)


def test_mnist_shuffle_follows_the_seed_and_keeps_its_order_across_epochs(mnist):
    root, images = mnist

    def epochs(seed):
        it = mx.io.MNISTIter(
            image=root / "img", label=root / "lab", batch_size=5, seed=seed, silent=True
        )
        out = []
        for _ in range(2):
            out.append([b.label[0].asnumpy().astype(int).tolist() for b in it])
            it.reset()
        return out, it

    (first, second), it = epochs(4)
    assert first == second
    assert sorted(sum(first, [])) == list(range(10)) and sum(first, []) != list(range(10))
    assert epochs(4)[0] == [first, second]
    assert epochs(5)[0][0] != first
    batch = it.next()
    order = batch.index.astype(int)
    np.testing.assert_array_equal(batch.data[0].asnumpy()[:, 0], images[order] / 256)


@pytest.mark.parametrize(
    "image, label, message",
    [
        ("lab", "lab", r"lab: magic number 2049, expected 2051"),
        ("img", "img", r"img: magic number 2051, expected 2049"),
        ("cut", "lab", r"cut: truncated: the header announces \[10, 4, 5\]"),
        ("tiny", "lab", r"tiny: truncated: 3 bytes"),
        ("img", "few", r"holds 10 images but .*few holds 4 labels"),
        ("broken.gz", "lab", r"broken.gz: not a complete gzip file"),
    ],
)
def test_mnist_bad_files_are_named(mnist, image, label, message):
    root, _ = mnist
    raw = (root / "img").read_bytes()
    (root / "cut").write_bytes(raw[:-7])
    (root / "tiny").write_bytes(raw[:3])
    (root / "broken.gz").write_bytes(gzip.compress(raw)[:-20])
    _write_idx(root / "few", 2049, np.arange(4))
    with pytest.raises(FormatError, match=message):
        mx.io.MNISTIter(image=root / image, label=root / label, batch_size=2, silent=True)


def test_mnist_part_index_is_checked(mnist):
    root, _ = mnist
    with pytest.raises(ValueError, match="part_index=3, num_parts=3"):
        mx.io.MNISTIter(image=root / "img", label=root / "lab", num_parts=3, part_index=3)


def test_mnist_logs_what_it_loaded_unless_silent(mnist, caplog):
    root, _ = mnist
    with caplog.at_level("INFO", logger="rebind.io"):
        mx.io.MNISTIter(image=root / "img", label=root / "lab", batch_size=2, shuffle=False)
    assert "MNISTIter: load 10 images, shuffle=0, shape=(2, 1, 4, 5)" in caplog.text
