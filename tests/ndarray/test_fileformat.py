"""Tests for rebind.ndarray.fileformat: MXNet's NDArray list file codec."""

import json
import os
import struct
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rebind.errors import FormatError
from rebind.ndarray import fileformat

GOLDEN = Path(__file__).parents[1] / "golden"
CASES = json.loads((GOLDEN / "manifest.json").read_text())["categories"]["ndarray_files"]["cases"]
SPARSE, LEGACY_0D = "sparse_csr_rowsparse", "legacy_0d_unloadable"
DTYPES = [
    "float32",
    "float64",
    "float16",
    "uint8",
    "int32",
    "int8",
    "int64",
    "bool",
    "int16",
    "uint16",
    "uint32",
    "uint64",
]
HEADER = struct.pack("<QQ", 0x112, 0)
FAST = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def golden_bytes(case_id):
    return (GOLDEN / "ndarray_files" / f"{case_id}.params").read_bytes()


def list_file(records, names=None):
    """Assemble a list file from raw record bytes and optional names."""
    body = HEADER + struct.pack("<Q", len(records)) + b"".join(records)
    names = names or []
    body += struct.pack("<Q", len(names))
    for name in names:
        body += struct.pack("<Q", len(name)) + name
    return body


def assert_same_array(actual, expected):
    """Bit-for-bit equality, dtype (byte order included) and shape."""
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    assert np.array_equal(actual, expected, equal_nan=actual.dtype.kind == "f")
    assert actual.tobytes() == expected.tobytes()


# ---------------------------------------------------------------- golden files


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_golden_file_loads_as_expected(case):
    arrays, names = fileformat.load_file(GOLDEN / case["file"])
    expected = np.load(GOLDEN / case["expected_file"])
    if case["names"]:
        assert names == case["names"]
        suffix = ".dense" if case["id"] == SPARSE else ""
        keys = [name + suffix for name in names]
    else:
        assert names is None
        keys = [str(i) for i in range(len(expected.files))]
    assert len(arrays) == len(keys)
    for array, key in zip(arrays, keys, strict=True):
        assert array.flags.writeable and array.flags.owndata
        assert_same_array(array, expected[key])


@pytest.mark.parametrize(
    "case", [c for c in CASES if c["id"] not in (SPARSE, LEGACY_0D)], ids=lambda c: c["id"]
)
def test_golden_file_reencodes_byte_for_byte(case):
    original = (GOLDEN / case["file"]).read_bytes()
    assert fileformat.encode(*fileformat.decode(original)) == original


def test_legacy_0d_reencodes_as_v3():
    """We write the V3 form MXNet can read, not the unloadable legacy quirk."""
    arrays, names = fileformat.decode(golden_bytes(LEGACY_0D))
    assert arrays[0].shape == () and arrays[0].dtype == np.float32
    encoded = fileformat.encode(arrays, names)
    assert struct.unpack_from("<I", encoded, 24)[0] == fileformat.V3_MAGIC
    again, again_names = fileformat.decode(encoded)
    assert again_names == ["s"]
    assert_same_array(again[0], arrays[0])


# ---------------------------------------------------------------- round trips


@st.composite
def array_lists(draw):
    count = draw(st.integers(0, 4))
    arrays = []
    for _ in range(count):
        dtype = np.dtype(draw(st.sampled_from(DTYPES)))
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
        array = draw(hnp.arrays(dtype, shape))
        layout = draw(st.sampled_from(["plain", "big-endian", "strided", "transposed"]))
        if layout == "big-endian":
            array = array.astype(dtype.newbyteorder(">"))
        elif layout == "strided":
            array = np.repeat(array, 2, axis=-1)[..., ::2] if array.ndim else array
        elif layout == "transposed":
            array = np.ascontiguousarray(array.T).T
        arrays.append(array)
    named = draw(st.booleans())
    names = (
        draw(st.lists(st.text(max_size=8), min_size=count, max_size=count, unique=True))
        if named
        else None
    )
    return arrays, names


@FAST
@given(array_lists())
def test_round_trip(case):
    arrays, names = case
    encoded = fileformat.encode(arrays, names)
    decoded, decoded_names = fileformat.decode(encoded)
    assert decoded_names == (names or None)
    assert len(decoded) == len(arrays)
    for before, after in zip(arrays, decoded, strict=True):
        assert after.dtype.isnative
        assert_same_array(after, before.astype(before.dtype.newbyteorder("=")))
    numpy_shape = any(a.ndim == 0 or a.size == 0 for a in arrays)
    magics = {struct.unpack_from("<I", encoded, 24)[0]} if arrays else set()
    assert magics <= {fileformat.V3_MAGIC if numpy_shape else fileformat.V2_MAGIC}


def test_none_record_decodes_and_reencodes():
    v2_none = list_file([struct.pack("<Iii", fileformat.V2_MAGIC, 0, 0)])
    assert fileformat.decode(v2_none) == ([None], None)
    assert fileformat.encode([None]) == v2_none
    mixed = fileformat.encode([None, np.array(2.5, np.float32)], ["a", "b"])
    arrays, names = fileformat.decode(mixed)
    assert arrays[0] is None and arrays[1] == np.float32(2.5) and names == ["a", "b"]


def test_v1_record_decodes():
    data = np.arange(6, dtype="<f8")
    record = struct.pack("<Ii2qiii", fileformat.V1_MAGIC, 2, 2, 3, 1, 0, 1) + data.tobytes()
    none = struct.pack("<Ii", fileformat.V1_MAGIC, 0)
    arrays, names = fileformat.decode(list_file([record, none], [b"w", b"n"]))
    assert names == ["w", "n"] and arrays[1] is None
    assert_same_array(arrays[0], data.reshape(2, 3))


def test_pre_v1_record_decodes():
    data = np.array([[1, -2], [3, 4], [5, 6]], dtype="<i4")
    record = struct.pack("<I2Iiii", 2, 3, 2, 1, 0, 4) + data.tobytes()
    none = struct.pack("<I", 0)
    arrays, names = fileformat.decode(list_file([none, record]))
    assert names is None and arrays[0] is None
    assert_same_array(arrays[1], data)


def test_bfloat16_decodes_exactly_to_float32():
    values = np.array([1.0, -2.5, 3.140625, np.inf, 0.0], dtype=np.float32)
    halves = (values.view(np.uint32) >> 16).astype("<u2")
    record = struct.pack("<Iiiqiii", fileformat.V2_MAGIC, 0, 1, 5, 1, 0, 12)
    arrays, _ = fileformat.decode(list_file([record + halves.tobytes()]))
    assert_same_array(arrays[0], values)


@pytest.mark.parametrize(
    "bad",
    [np.zeros(2, np.complex64), np.array(["a"]), np.array([object()]), np.zeros(2, np.longdouble)],
)
def test_encode_refuses_unsupported_dtypes(bad):
    with pytest.raises(FormatError, match=r"array 1 \('bad'\).*dtype"):
        fileformat.encode([np.zeros(1), bad], ["ok", "bad"])
    with pytest.raises(FormatError, match="array 0"):
        fileformat.encode([bad])


# ---------------------------------------------------------------- robustness


@pytest.mark.parametrize("case_id", [c["id"] for c in CASES])
def test_every_truncation_raises_format_error(case_id):
    original = golden_bytes(case_id)
    for end in range(len(original)):
        with pytest.raises(FormatError, match=r"^trunc\.params: .*offset \d+"):
            fileformat.decode(original[:end], source="trunc.params")


def decode_or_format_error(data):
    try:
        arrays, names = fileformat.decode(data, "fuzz")
    except FormatError as error:
        assert str(error).startswith("fuzz: ") and "offset" in str(error)
        return
    assert names is None or len(names) == len(arrays)


@FAST
@given(
    st.sampled_from([c["id"] for c in CASES]),
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_byte_flips_raise_only_format_error(case_id, flips):
    data = bytearray(golden_bytes(case_id))
    for position, value in flips:
        data[position % len(data)] = value
    decode_or_format_error(bytes(data))


@FAST
@given(st.binary(max_size=120), st.booleans())
def test_random_bytes_raise_only_format_error(tail, with_header):
    decode_or_format_error((HEADER if with_header else b"") + tail)


def test_huge_dimension_fails_fast_without_allocating():
    data = bytearray(golden_bytes("single_array"))
    started = time.perf_counter()
    for dim in (2**40, 2**60, 2**63 - 1):
        struct.pack_into("<q", data, 0x24, dim)
        with pytest.raises(FormatError, match="(truncated at|invalid shape.*) offset"):
            fileformat.decode(bytes(data))
    struct.pack_into("<qq", data, 0x24, 0, 2**62)  # zero-size, absurd other dim
    with pytest.raises(FormatError, match="invalid shape"):
        fileformat.decode(bytes(data))
    assert time.perf_counter() - started < 0.5


def patched(case_id, offset, fmt, value):
    data = bytearray(golden_bytes(case_id))
    struct.pack_into(fmt, data, offset, value)
    return bytes(data)


@pytest.mark.parametrize(
    "data, message",
    [
        (patched("single_array", 0, "<Q", 0x113), "not an NDArray list file.*offset 0"),
        (golden_bytes("single_array") + b"\0", "1 bytes of trailing garbage at offset 96"),
        (patched("bool_array", 0x46, "<Q", 2), "name count 2 is neither 0 nor"),
        (patched("bool_array", 0x56, "<B", 0xFF), "invalid UTF-8 in name at offset 86"),
        (patched("single_array", 0x3C, "<i", 13), "unknown dtype flag 13 at offset 60"),
        (patched("single_array", 0x18, "<I", 0xDEADBEEF), "unknown record magic"),
        (patched("single_array", 0x1C, "<i", 3), "unknown storage type 3 at offset 28"),
        (patched("single_array", 0x20, "<i", 33), "ndim 33 out of range"),
        (patched("single_array", 0x20, "<i", -5), "ndim -5 out of range"),
        (patched("single_array", 0x24, "<q", -2), "invalid shape"),
        (patched("single_array", 0x10, "<Q", 2**62), "array count"),
        (patched("sparse_csr_rowsparse", 0x114, "<q", 7), "bad row_sparse record.*row index"),
        (patched("sparse_csr_rowsparse", 0x88, "<q", 5), "bad csr record.*indptr"),
    ],
)
def test_malformed_input_is_reported(data, message):
    with pytest.raises(FormatError, match=f"^bad.params: .*{message}"):
        fileformat.decode(data, source="bad.params")


# ---------------------------------------------------------------- files


def test_save_and_load_file(tmp_path):
    target = tmp_path / "model-0001.params"
    fileformat.save_file(target, [np.ones((2, 2), np.float32)], ["arg:w"])
    arrays, names = fileformat.load_file(str(target))
    assert names == ["arg:w"] and arrays[0].sum() == 4
    assert os.listdir(tmp_path) == ["model-0001.params"]
    with pytest.raises(FileNotFoundError):
        fileformat.load_file(tmp_path / "missing.params")


def test_failed_encode_leaves_existing_file(tmp_path):
    target = tmp_path / "model.params"
    target.write_bytes(b"previous")
    with pytest.raises(FormatError):
        fileformat.save_file(target, [np.zeros(3, np.complex128)])
    assert target.read_bytes() == b"previous"
    assert os.listdir(tmp_path) == ["model.params"]


@pytest.mark.parametrize("crash_in", ["replace", "fsync"])
def test_crash_during_write_leaves_existing_file(tmp_path, monkeypatch, crash_in):
    target = tmp_path / "model.params"
    target.write_bytes(b"previous")

    def crash(*args):
        raise OSError("simulated crash")

    monkeypatch.setattr(os, crash_in, crash)
    with pytest.raises(OSError, match="simulated crash"):
        fileformat.save_file(target, [np.zeros(3, np.float32)])
    monkeypatch.undo()
    assert target.read_bytes() == b"previous"
    assert os.listdir(tmp_path) == ["model.params"]
