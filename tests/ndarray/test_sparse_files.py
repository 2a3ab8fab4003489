"""Sparse arrays against MXNet 1.9.1's own: files, pickles and storage casts.

The golden files were written by tests/recording/record_sparse_files.py on
MXNet 1.9.1: each case's ``.params`` is ``mx.nd.save`` of the arrays and its
``.npz`` what MXNet reported for them (stype, dense values, data, indices,
indptr).
"""

import json
import pickle

import numpy as np
import pytest

import rebind as mx
from rebind.ndarray.sparse import CSRNDArray, RowSparseNDArray
from tests.conftest import GOLDEN

SPARSE = GOLDEN / "sparse"
CASES = json.loads((SPARSE / "cases.json").read_text())
CASE_NAMES = ["csr_dict", "rsp_dict", "mixed_list"]
STYPES = {0: "default", 1: "row_sparse", 2: "csr"}


def _recorded(case):
    with np.load(SPARSE / f"{case}.npz") as npz:
        return {key: npz[key] for key in npz.files}


def _inputs():
    with np.load(SPARSE / "inputs.npz") as npz:
        return {key: npz[key] for key in npz.files}


def _assert_matches(array, recorded, name):
    """``array`` holds exactly what MXNet reported for ``name``."""
    stype = STYPES[int(recorded[name + ".stype"])]
    assert array.stype == stype, name
    dense = recorded[name + ".dense"]
    assert array.shape == dense.shape and array.dtype == dense.dtype.type, name
    np.testing.assert_array_equal(array.asnumpy(), dense, err_msg=name)
    if stype == "default":
        return
    for part in ("data", "indices") + (("indptr",) if stype == "csr" else ()):
        got, want = getattr(array, part).asnumpy(), recorded[f"{name}.{part}"]
        assert got.dtype == want.dtype, (name, part)
        np.testing.assert_array_equal(got, want, err_msg=f"{name}.{part}")


def _loaded_items(case):
    loaded = mx.nd.load(str(SPARSE / f"{case}.params"))
    if isinstance(loaded, list):
        return [(str(i), array) for i, array in enumerate(loaded)]
    return list(loaded.items())


@pytest.mark.parametrize("case", CASE_NAMES)
def test_mxnet_file_loads_as_recorded(case):
    items = _loaded_items(case)
    recorded = _recorded(case)
    assert [name for name, _ in items] == [entry["name"] for entry in CASES[case]]
    for name, array in items:
        assert array.context == mx.cpu(0)
        _assert_matches(array, recorded, name)


@pytest.mark.parametrize("case", CASE_NAMES)
def test_loaded_file_resaves_byte_for_byte(case, tmp_path):
    loaded = mx.nd.load(str(SPARSE / f"{case}.params"))
    mx.nd.save(str(tmp_path / "again.params"), loaded)
    assert (tmp_path / "again.params").read_bytes() == (SPARSE / f"{case}.params").read_bytes()


def _built(inputs, ctx):
    """The arrays of the csr_dict and rsp_dict cases, built as the recording built them."""
    nd = mx.nd
    dense = nd.array(inputs["csr_dense"], ctx=ctx)
    csr_dict = {
        "csr_f32": dense.tostype("csr"),
        "csr_f64": nd.array(inputs["csr_dense"], ctx=ctx, dtype="float64").tostype("csr"),
        "csr_i32": nd.array(inputs["int_dense"], ctx=ctx, dtype="int32").tostype("csr"),
        "csr_special": nd.array(inputs["special"], ctx=ctx).tostype("csr"),
        "csr_empty": nd.sparse.zeros("csr", (3, 4), ctx=ctx),
        "csr_coo": nd.sparse.csr_matrix(
            (inputs["coo_data"], (inputs["coo_row"], inputs["coo_col"])), shape=(3, 4), ctx=ctx
        ),
        "dense": dense,
    }
    rsp_dict = {
        "rsp_f64": nd.array(inputs["rsp_dense"], ctx=ctx, dtype="float64").tostype("row_sparse"),
        "rsp3_f16": nd.array(inputs["rsp3"], ctx=ctx, dtype="float16").tostype("row_sparse"),
        "rsp_special": nd.array(inputs["special"], ctx=ctx).tostype("row_sparse"),
        "rsp_empty": nd.sparse.zeros("row_sparse", (4, 2, 3), ctx=ctx),
        "rsp_parts": nd.sparse.row_sparse_array(
            (inputs["rsp_values"], inputs["rsp_indices"]), shape=(6, 2), ctx=ctx
        ),
    }
    mixed = [dense.tostype("row_sparse"), dense, dense.tostype("csr")]
    return {"csr_dict": csr_dict, "rsp_dict": rsp_dict, "mixed_list": mixed}


@pytest.mark.parametrize("case", CASE_NAMES)
def test_conversions_match_mxnet(case, ctx):
    built = _built(_inputs(), ctx)[case]
    items = built.items() if isinstance(built, dict) else enumerate(built)
    recorded = _recorded(case)
    for name, array in items:
        assert array.context == ctx
        _assert_matches(array, recorded, str(name))


@pytest.mark.parametrize("case", CASE_NAMES)
def test_saved_arrays_are_mxnets_bytes(case, ctx, tmp_path):
    """rebind writes the very bytes MXNet wrote for the same arrays (from any device)."""
    built = _built(_inputs(), ctx)[case]
    mx.nd.save(str(tmp_path / "mine.params"), built)
    assert (tmp_path / "mine.params").read_bytes() == (SPARSE / f"{case}.params").read_bytes()


@pytest.mark.parametrize(
    "name, cls", [("csr_f32", CSRNDArray), ("rsp_f64", RowSparseNDArray)], ids=["csr", "rsp"]
)
def test_pickled_state_is_mxnets_record(name, cls):
    case = "csr_dict" if cls is CSRNDArray else "rsp_dict"
    array = _built(_inputs(), mx.cpu(0))[case][name]
    handle = (SPARSE / f"pickle_{name}.bin").read_bytes()
    assert bytes(array.__getstate__()["handle"]) == handle
    again = pickle.loads(pickle.dumps(array))
    assert type(again) is cls
    _assert_matches(again, _recorded(case), name)


def test_sparse_records_refuse_numpy_shape_files(tmp_path):
    """MXNet writes sparse arrays only in V2 records; a file forced to V3 cannot hold one."""
    arrays = [mx.nd.sparse.zeros("csr", (2, 2)), mx.nd.zeros((0, 3))]
    with pytest.raises(ValueError, match="csr array cannot be saved with 0-d or zero-size"):
        mx.nd.save(str(tmp_path / "x.params"), arrays)


def test_codec_reads_and_writes_sparse_records():
    """``fileformat`` with ``sparse=True`` keeps records sparse; encoding gives the bytes back."""
    from rebind.ndarray import fileformat
    from rebind.ndarray.sparse_format import SparseRecord

    original = (SPARSE / "rsp_dict.params").read_bytes()
    arrays, names = fileformat.decode(original, sparse=True)
    assert all(isinstance(a, SparseRecord) for a in arrays)
    assert [a.stype for a in arrays] == ["row_sparse"] * 5
    assert fileformat.encode(arrays, names) == original
    dense, _ = fileformat.decode(original)  # the default still densifies, for older callers
    recorded = _recorded("rsp_dict")
    for array, name in zip(dense, names, strict=True):
        np.testing.assert_array_equal(array, recorded[name + ".dense"])


def test_corrupt_sparse_record_is_reported_in_sparse_mode():
    from rebind.errors import FormatError
    from rebind.ndarray import fileformat

    data = bytearray((SPARSE / "rsp_dict.params").read_bytes())
    # the first record (rsp_f64, 7 rows) ends with its last row index: make it 99
    end_of_first = _first_record_end(bytes(data))
    data[end_of_first - 8 : end_of_first] = (99).to_bytes(8, "little")
    with pytest.raises(FormatError, match="bad row_sparse record.*row index"):
        fileformat.decode(bytes(data), source="bad.params", sparse=True)


def _first_record_end(data):
    """Byte offset where the first record of a list file ends (parsed by hand)."""
    import struct

    offset = 24 + 8  # list header, then magic and storage type of the record
    (ndim,) = struct.unpack_from("<i", data, offset)
    values = int(np.prod(struct.unpack_from(f"<{ndim}q", data, offset + 4)))
    offset += 4 + 8 * ndim  # past the storage shape
    (ndim,) = struct.unpack_from("<i", data, offset)
    offset += 4 + 8 * ndim + 12  # past the shape, context and dtype flag
    (flag,) = struct.unpack_from("<i", data, offset - 4)
    (aux_ndim,) = struct.unpack_from("<i", data, offset + 4)
    (aux_len,) = struct.unpack_from(f"<{aux_ndim}q", data, offset + 8)
    offset += 4 + 4 + 8 * aux_ndim
    itemsize = {1: 8, 0: 4, 2: 2}[flag]
    return offset + values * itemsize + aux_len * 8
