"""rebind.recordio reads MXNet 1.9.1's RecordIO files and writes the same bytes.

The golden files in tests/recordio/data/ were written by MXNet itself
(tests/recording/record_recordio.py); their inputs are in cases.py.
"""

import pickle

import numpy as np
import pytest

from rebind import recordio
from rebind.errors import FormatError
from tests.recordio import cases

DATA = cases.DATA


def read_all(record):
    out = []
    while (buf := record.read()) is not None:
        out.append(buf)
    return out


def source_image(relpath):
    cv2 = pytest.importorskip("cv2")  # the image extra
    return cv2.imread(str(cases.IMAGES / relpath), cv2.IMREAD_UNCHANGED)


def packed(kind, args):
    header = recordio.IRHeader(*args["header"])
    if kind == "pack":
        return recordio.pack(header, args["payload"])
    img = source_image(args["image"])
    return recordio.pack_img(header, img, quality=args["quality"], img_fmt=args["fmt"])


# --- reading MXNet's files ---------------------------------------------------------------


def test_reads_mxnet_plain_records():
    record = recordio.MXRecordIO(DATA / "plain.rec", "r")
    assert read_all(record) == cases.PLAIN_RECORDS
    assert record.read() is None
    record.reset()
    assert record.read() == cases.PLAIN_RECORDS[0]
    record.close()


def test_reads_mxnet_indexed_records_in_any_order():
    record = recordio.MXIndexedRecordIO(DATA / "indexed.idx", DATA / "indexed.rec", "r")
    assert record.keys == [key for key, _, _ in cases.INDEXED_RECORDS]
    for key, kind, args in reversed(cases.INDEXED_RECORDS):
        header, payload = recordio.unpack(record.read_idx(key))
        _, label, id_, id2 = args["header"]
        assert (header.id, header.id2) == (id_, id2)
        if np.isscalar(label):
            assert header.flag == 0 and header.label == label
        else:
            assert header.flag == len(label)
            np.testing.assert_array_equal(header.label, np.asarray(label, np.float32))
            assert header.label.dtype == np.float32
        if kind == "pack":
            assert payload == args["payload"]


@pytest.mark.parametrize("key", [5, 6, 9])
def test_unpack_img_decodes_mxnet_images(key):
    pytest.importorskip("cv2")
    record = recordio.MXIndexedRecordIO(DATA / "indexed.idx", DATA / "indexed.rec", "r")
    args = dict((k, a) for k, _, a in cases.INDEXED_RECORDS)[key]
    _, img = recordio.unpack_img(record.read_idx(key))
    expected = source_image(args["image"])
    assert img.shape == expected.shape and img.dtype == np.uint8
    error = np.abs(img.astype(int) - expected).mean()
    assert error == 0 if args["fmt"] == ".png" else error < 8


def test_reads_mxnet_string_keys():
    record = recordio.MXIndexedRecordIO(DATA / "named.idx", DATA / "named.rec", "r", key_type=str)
    assert record.keys == [key for key, _ in cases.NAMED_RECORDS]
    for key, buf in cases.NAMED_RECORDS:
        assert record.read_idx(key) == buf


# --- writing the bytes MXNet writes ------------------------------------------------------


def test_writes_mxnet_plain_bytes(tmp_path):
    record = recordio.MXRecordIO(tmp_path / "plain.rec", "w")
    for buf in cases.PLAIN_RECORDS:
        record.write(buf)
    record.close()
    assert (tmp_path / "plain.rec").read_bytes() == (DATA / "plain.rec").read_bytes()


def test_writes_mxnet_indexed_bytes(tmp_path):
    record = recordio.MXIndexedRecordIO(tmp_path / "i.idx", tmp_path / "i.rec", "w")
    assert record.tell() == 0
    for key, kind, args in cases.INDEXED_RECORDS:
        record.write_idx(key, packed(kind, args))
    record.close()
    assert (tmp_path / "i.rec").read_bytes() == (DATA / "indexed.rec").read_bytes()
    assert (tmp_path / "i.idx").read_text() == (DATA / "indexed.idx").read_text()


def test_writes_mxnet_string_keys(tmp_path):
    record = recordio.MXIndexedRecordIO(tmp_path / "n.idx", tmp_path / "n.rec", "w", str)
    for key, buf in cases.NAMED_RECORDS:
        record.write_idx(key, buf)
    record.close()
    assert (tmp_path / "n.rec").read_bytes() == (DATA / "named.rec").read_bytes()
    assert (tmp_path / "n.idx").read_text() == (DATA / "named.idx").read_text()


def test_multi_part_layout_is_dmlc_format(tmp_path):
    record = recordio.MXRecordIO(tmp_path / "m.rec", "w")
    record.write(b"abcd" + cases.MAGIC + b"ef")
    record.close()
    start = (1 << 29) | 4
    end = (3 << 29) | 2
    expected = (
        cases.MAGIC + start.to_bytes(4, "little") + b"abcd"
        + cases.MAGIC + end.to_bytes(4, "little") + b"ef" + b"\0\0"
    )  # fmt: skip
    assert (tmp_path / "m.rec").read_bytes() == expected


# --- pack / unpack -----------------------------------------------------------------------


def test_pack_sets_flag_and_layout():
    buf = recordio.pack(recordio.IRHeader(9, [1.5, 2.0], 3, 4), b"xy")
    assert buf[:4] == (2).to_bytes(4, "little")
    assert np.frombuffer(buf[24:32], np.float32).tolist() == [1.5, 2.0]
    assert buf[32:] == b"xy"
    header, payload = recordio.unpack(recordio.pack((7, 2, 5, 0), b"z"))
    assert header == recordio.IRHeader(0, 2.0, 5, 0) and payload == b"z"


def test_unpack_rejects_short_records():
    with pytest.raises(recordio.RecordIOError, match="24-byte IRHeader"):
        recordio.unpack(b"short")
    with pytest.raises(recordio.RecordIOError, match="3 float32 labels"):
        recordio.unpack(recordio.pack((0, [1, 2, 3], 0, 0), b"")[:30])


# --- errors and lifecycle ----------------------------------------------------------------


def test_record_io_error_is_a_format_error():
    assert issubclass(recordio.RecordIOError, FormatError)
    assert issubclass(recordio.RecordIOError, ValueError)


def test_bad_key_names_the_key():
    record = recordio.MXIndexedRecordIO(DATA / "indexed.idx", DATA / "indexed.rec", "r")
    with pytest.raises(KeyError, match="key 42 is not in the index"):
        record.read_idx(42)


def test_bad_index_line_names_file_and_line(tmp_path):
    (tmp_path / "x.rec").write_bytes((DATA / "plain.rec").read_bytes())
    (tmp_path / "x.idx").write_text("0\t0\nnot-a-number\t8\n")
    with pytest.raises(recordio.RecordIOError, match=r"x\.idx.*line 2"):
        recordio.MXIndexedRecordIO(tmp_path / "x.idx", tmp_path / "x.rec", "r")


def test_index_offset_outside_the_file(tmp_path):
    (tmp_path / "x.rec").write_bytes((DATA / "plain.rec").read_bytes())
    (tmp_path / "x.idx").write_text("0\t999999\n")
    record = recordio.MXIndexedRecordIO(tmp_path / "x.idx", tmp_path / "x.rec", "r")
    with pytest.raises(recordio.RecordIOError, match="offset 999999"):
        record.read_idx(0)


def test_misuse_raises(tmp_path):
    with pytest.raises(ValueError, match="Invalid flag"):
        recordio.MXRecordIO(tmp_path / "x.rec", "a")
    writer = recordio.MXRecordIO(tmp_path / "x.rec", "w")
    with pytest.raises(TypeError, match="bytes, not str"):
        writer.write("text")
    with pytest.raises(ValueError, match="cannot read"):
        writer.read()
    writer.close()
    reader = recordio.MXRecordIO(tmp_path / "x.rec", "r")
    with pytest.raises(ValueError, match="cannot write"):
        reader.write(b"x")
    reader.close()
    with pytest.raises(ValueError, match="closed"):
        reader.read()


def test_other_process_is_refused_or_reopened():
    reader = recordio.MXRecordIO(DATA / "plain.rec", "r")
    reader.pid = -1  # as if this object had been inherited through fork
    with pytest.raises(RuntimeError, match="multiple processes"):
        reader.read()
    indexed = recordio.MXIndexedRecordIO(DATA / "named.idx", DATA / "named.rec", "r", str)
    indexed.pid = -1
    assert indexed.read_idx("beta") == b"second" * 5


# --- pickling ----------------------------------------------------------------------------


def test_pickled_reader_reopens_at_the_start():
    reader = recordio.MXRecordIO(DATA / "plain.rec", "r")
    reader.read()
    copy = pickle.loads(pickle.dumps(reader))
    assert read_all(copy) == cases.PLAIN_RECORDS
    assert reader.read() == cases.PLAIN_RECORDS[1]  # the original stays usable


def test_pickled_indexed_reader_reads_by_key():
    reader = recordio.MXIndexedRecordIO(DATA / "named.idx", DATA / "named.rec", "r", str)
    copy = pickle.loads(pickle.dumps(reader))
    assert copy.keys == reader.keys and copy.read_idx("gamma") == cases.MAGIC


def test_pickled_closed_reader_stays_closed():
    reader = recordio.MXRecordIO(DATA / "plain.rec", "r")
    reader.close()
    copy = pickle.loads(pickle.dumps(reader))
    assert not copy.is_open
    copy.open()
    assert copy.read() == cases.PLAIN_RECORDS[0]


def test_pickling_a_writer_is_refused(tmp_path):
    writer = recordio.MXRecordIO(tmp_path / "w.rec", "w")
    writer.write(b"kept")
    with pytest.raises(TypeError, match="truncate"):
        pickle.dumps(writer)
    writer.close()
    assert recordio.MXRecordIO(tmp_path / "w.rec", "r").read() == b"kept"
