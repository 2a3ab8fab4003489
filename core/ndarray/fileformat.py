"""Read and write MXNet's NDArray list file (``mx.nd.save``, ``*.params``).

Owns only the byte format (reference/FORMATS.md, part (a)): lists of NumPy
arrays plus optional names to bytes and back, and atomic file save/load. It
knows nothing of NDArray or contexts; callers convert. Malformed input raises
``FormatError`` naming the source and the byte offset.
"""

import math
import struct

import numpy as np

from ..errors import FormatError
from ..fileutil import write_atomic
from .sparse_format import STORAGE_IDS, SparseRecord, densify, validate_record

__all__ = ["encode", "encode_record", "decode", "save_file", "load_file"]

LIST_MAGIC = 0x112
V1_MAGIC, V2_MAGIC, V3_MAGIC = 0xF993FAC8, 0xF993FAC9, 0xF993FACA
MAX_NDIM = 32
# Zero-size shapes are backed by no bytes, so bound them on their own: NumPy
# cannot describe a shape whose non-zero dims multiply past ~2**63.
MAX_ELEMENTS = 2**48

_FLAG_NAMES = {
    0: "float32",
    1: "float64",
    2: "float16",
    3: "uint8",
    4: "int32",
    5: "int8",
    6: "int64",
    7: "bool",
    8: "int16",
    9: "uint16",
    10: "uint32",
    11: "uint64",
    12: "bfloat16",
}
_BOOL, _BFLOAT16 = 7, 12
_INDEX_FLAGS = frozenset({3, 4, 5, 6, 8, 9, 10, 11})
_SPARSE = {1: ("row_sparse", 1), 2: ("csr", 2)}  # storage type: (name, aux count)
_DEVICE_TYPES = frozenset({1, 2, 3, 5})
# Keyed on kind and size so byte order and dtype metadata do not matter.
_KIND_SIZE_TO_FLAG = {
    (np.dtype(name).kind, np.dtype(name).itemsize): flag
    for flag, name in _FLAG_NAMES.items()
    if flag != _BFLOAT16
}


# ---------------------------------------------------------------- encoding


def encode(arrays, names=None):
    """Serialize arrays (and optional names) into MXNet's list format.

    Args:
        arrays: list of ``numpy.ndarray``, ``SparseRecord`` (a csr or
            row_sparse array, written as MXNet writes it) or ``None`` (a "none" array).
        names: ``None`` for a list save, else one ``str`` per array.

    All records are V3 (numpy-shape semantics) when any array is 0-d or
    zero-size, as MXNet writes such files and the only form it reads them
    back from; otherwise all are V2, as ``mx.nd.save`` writes them.
    """
    arrays, names = _checked_arguments(arrays, names)
    numpy_shape = any(isinstance(a, np.ndarray) and (a.ndim == 0 or a.size == 0) for a in arrays)
    parts = [struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays))]
    for index, array in enumerate(arrays):
        label = f"array {index}" + ("" if names is None else f" ({names[index]!r})")
        parts.append(_encode_record(array, numpy_shape, label))
    parts.append(_encode_names(names))
    return b"".join(parts)


def _checked_arguments(arrays, names):
    """Return (arrays, names) as lists, refusing anything that cannot pair up."""
    arrays = list(arrays)
    for index, array in enumerate(arrays):
        if array is not None and not isinstance(array, (np.ndarray, SparseRecord)):
            raise TypeError(
                f"array {index}: expected numpy.ndarray, SparseRecord or None, "
                f"got {type(array).__name__}"
            )
    if names is None:
        return arrays, None
    names = list(names)
    if len(names) != len(arrays):
        raise ValueError(f"got {len(names)} names for {len(arrays)} arrays")
    for index, name in enumerate(names):
        if not isinstance(name, str):
            raise TypeError(f"name {index} must be str, got {type(name).__name__}")
    return arrays, names


def encode_record(array, device=(1, 0)):
    """One V2 record as ``NDArray::Save`` writes it, ``device`` being (type id, device id).

    MXNet pickles an NDArray as this record, naming the array's own device.
    """
    return _encode_record(array, False, "array", device)


def _encode_record(array, numpy_shape, label, device=(1, 0)):
    """Encode one dense record: magic, storage, shape, device (cpu(0)), dtype, data."""
    magic = V3_MAGIC if numpy_shape else V2_MAGIC
    if isinstance(array, SparseRecord):
        if numpy_shape:  # MXNet, too, refuses sparse arrays in numpy-shape files
            raise FormatError(
                f"{label}: a {array.stype} array cannot be saved with 0-d or zero-size "
                "arrays in one file (numpy-shape records are dense only); save them apart"
            )
        return _encode_sparse(array, label, device)
    if array is None:
        # A "none" array has an unknown shape: ndim 0 in V2, ndim -1 in V3.
        return struct.pack("<Iii", magic, 0, -1 if numpy_shape else 0)
    flag = _flag_for(array.dtype, label)
    head = struct.pack(f"<Iii{array.ndim}q", magic, 0, array.ndim, *array.shape)
    little = array.dtype.newbyteorder("<")
    data = array.astype(little, copy=False).tobytes(order="C")
    return head + struct.pack("<iii", *device, flag) + data


def _shape_bytes(shape):
    return struct.pack(f"<i{len(shape)}q", len(shape), *shape)


def _little_bytes(array):
    return array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes(order="C")


def _encode_sparse(record, label, device):
    """One sparse V2 record, laid out as ``NDArray::Save`` writes it (FORMATS.md (a))."""
    parts = [struct.pack("<Ii", V2_MAGIC, STORAGE_IDS[record.stype])]
    parts += [_shape_bytes(record.values.shape), _shape_bytes(record.shape)]
    parts.append(struct.pack("<iii", *device, _flag_for(record.values.dtype, label)))
    for aux in record.aux:
        parts += [struct.pack("<i", _flag_for(aux.dtype, label)), _shape_bytes(aux.shape)]
    parts += [_little_bytes(record.values)] + [_little_bytes(aux) for aux in record.aux]
    return b"".join(parts)


def _flag_for(dtype, label):
    """Return the dtype flag of ``dtype`` or raise FormatError naming it."""
    if dtype.name == "bfloat16":
        raise FormatError(
            f"{label}: cannot save bfloat16 (NumPy has no such dtype); cast to float32 first"
        )
    flag = _KIND_SIZE_TO_FLAG.get((dtype.kind, dtype.itemsize))
    if flag is None:
        supported = ", ".join(_FLAG_NAMES[f] for f in _KIND_SIZE_TO_FLAG.values())
        raise FormatError(f"{label}: dtype {dtype} has no MXNet dtype flag; supported: {supported}")
    return flag


def _encode_names(names):
    """Encode the name count and each name as u64 length + UTF-8 bytes."""
    parts = [struct.pack("<Q", 0 if names is None else len(names))]
    for index, name in enumerate(names or ()):
        try:
            raw = name.encode("utf-8")
        except UnicodeEncodeError as error:
            raise FormatError(
                f"name {index} ({name!r}) is not encodable as UTF-8: {error.reason}"
            ) from None
        parts += [struct.pack("<Q", len(raw)), raw]
    return b"".join(parts)


# ---------------------------------------------------------------- decoding


class _ParseError(Exception):
    """A decode failure at a known offset; becomes FormatError at the top."""

    def __init__(self, offset, message):
        super().__init__(message)
        self.offset = offset


class _Reader:
    """A cursor over the file bytes that reports failures with their offset."""

    def __init__(self, buf, quirk, sparse=False):
        self.buf, self.pos, self.where, self.sparse = buf, 0, "", sparse
        self.quirk, self.quirk_used = quirk, False

    def fail(self, offset, problem):
        """Build a _ParseError for ``problem`` at ``offset``."""
        where = f" ({self.where})" if self.where else ""
        return _ParseError(offset, f"{problem} at offset {offset}{where}")

    def take(self, size, what):
        """Consume ``size`` bytes, checked against what remains; return start."""
        remain = len(self.buf) - self.pos
        if size > remain:
            where = f" for {self.where}" if self.where else ""
            raise _ParseError(
                self.pos,
                f"truncated at offset {self.pos}: expected "
                f"{size} bytes of {what}{where}, {remain} remain",
            )
        self.pos += size
        return self.pos - size

    def unpack(self, fmt, what):
        """Consume and unpack a little-endian struct format."""
        return struct.unpack_from(fmt, self.buf, self.take(struct.calcsize(fmt), what))


def decode(buf, source="<bytes>", sparse=False):
    """Parse list-file bytes into ``(arrays, names)``; names is None if unnamed.

    Accepts V1, V2, V3 and pre-V1 records; sparse records come back dense, or
    as ``SparseRecord`` with ``sparse=True``, and a "none" record as ``None``.
    Raises FormatError naming ``source`` and offset.
    """
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TypeError(f"decode needs bytes, got {type(buf).__name__}")
    data = bytes(buf)
    # MXNet writes a 0-d array made without numpy-shape semantics as a V2
    # record with ndim 0 *followed by* context, dtype and one element, yet its
    # reader takes ndim 0 as "none" and stops after the shape. So first parse
    # such records as 0-d arrays when the next bytes look like a context and a
    # dtype flag; if that whole parse fails, parse again with the "none"
    # reading, and report whichever error got further into the file.
    first = _Reader(data, quirk=True, sparse=sparse)
    try:
        return _parse(first)
    except _ParseError as error:
        if not first.quirk_used:
            raise FormatError(f"{source}: {error}") from None
        quirk_error = error
    try:
        return _parse(_Reader(data, quirk=False, sparse=sparse))
    except _ParseError as error:
        best = max((error, quirk_error), key=lambda e: e.offset)
        raise FormatError(f"{source}: {best}") from None


def decode_record(raw, source="<record>", sparse=False):
    """One record alone, as MXNet pickles an NDArray: ``(values or None, device or None)``.

    ``device`` is the ``(type id, device id)`` a V2/V3 record with a shape names
    (the caller decides where to put the array); None for other records.
    """
    head = struct.pack("<QQQ", LIST_MAGIC, 0, 1)
    (values,), _ = decode(head + bytes(raw) + struct.pack("<Q", 0), source, sparse)
    magic, stype = struct.unpack_from("<Ii", raw)
    if magic not in (V2_MAGIC, V3_MAGIC) or values is None:
        return values, None
    offset = 8
    if stype in _SPARSE:  # skip the storage shape
        offset += 4 + 8 * struct.unpack_from("<i", raw, offset)[0]
    (ndim,) = struct.unpack_from("<i", raw, offset)
    if ndim <= 0:
        return values, None
    return values, struct.unpack_from("<ii", raw, offset + 4 + 8 * ndim)


def _parse(reader):
    """Parse the whole buffer: header, records, names, then nothing else."""
    magic, _reserved, count = reader.unpack("<QQQ", "list header")
    if magic != LIST_MAGIC:
        raise reader.fail(
            0, f"not an NDArray list file: magic {magic:#x}, expected {LIST_MAGIC:#x}"
        )
    # Every record takes at least 4 bytes, so a larger count is corrupt.
    if count > (len(reader.buf) - reader.pos) // 4:
        raise reader.fail(16, f"array count {count} exceeds what {len(reader.buf)} bytes can hold")
    arrays = []
    for index in range(count):
        reader.where = f"array {index}"
        arrays.append(_read_record(reader))
    names = _read_names(reader, count)
    if reader.pos != len(reader.buf):
        reader.where = ""
        raise reader.fail(reader.pos, f"{len(reader.buf) - reader.pos} bytes of trailing garbage")
    return arrays, names


def _read_names(reader, count):
    """Read K and the K names; K must be 0 (no names) or the array count."""
    reader.where = "names section"
    (k,) = reader.unpack("<Q", "name count")
    if k not in (0, count):
        raise reader.fail(
            reader.pos - 8, f"name count {k} is neither 0 nor the array count {count}"
        )
    names = []
    for index in range(k):
        reader.where = f"name {index}"
        (length,) = reader.unpack("<Q", "name length")
        start = reader.take(length, "name bytes")
        try:
            names.append(reader.buf[start : reader.pos].decode("utf-8"))
        except UnicodeDecodeError as error:
            raise reader.fail(start + error.start, "invalid UTF-8 in name") from None
    return names or None


def _read_record(reader):
    """Read one array record of any version; None for a "none" array."""
    offset = reader.pos
    (magic,) = reader.unpack("<I", "record magic")
    if magic in (V2_MAGIC, V3_MAGIC):
        return _read_stored(reader, numpy_shape=magic == V3_MAGIC)
    if magic == V1_MAGIC:
        shape = _read_shape(reader, numpy_shape=False)
    elif magic <= MAX_NDIM:  # pre-V1: no magic; this u32 is ndim, dims are u32
        dims = reader.unpack(f"<{magic}I", f"{magic} u32 dims")
        shape = _checked_dims(reader, offset, dims, numpy_shape=False)
    else:
        raise reader.fail(offset, f"unknown record magic {magic:#010x}")
    return None if shape == () else _read_dense(reader, shape)


def _read_shape(reader, numpy_shape):
    """Read an i32 ndim and i64 dims; None means an unknown (none) V3 shape."""
    offset = reader.pos
    (ndim,) = reader.unpack("<i", "ndim")
    if numpy_shape and ndim == -1:
        return None
    if not 0 <= ndim <= MAX_NDIM:
        raise reader.fail(offset, f"ndim {ndim} out of range 0..{MAX_NDIM}")
    dims = reader.unpack(f"<{ndim}q", f"{ndim} dims")
    return _checked_dims(reader, offset, dims, numpy_shape)


def _checked_dims(reader, offset, dims, numpy_shape):
    """Validate dims: -1 is unknown in V3 (-> None), other negatives are bad."""
    if numpy_shape and -1 in dims:
        return None
    if any(d < 0 for d in dims) or math.prod(d for d in dims if d) > MAX_ELEMENTS:
        raise reader.fail(offset, f"invalid shape {dims}")
    return tuple(dims)


def _read_stored(reader, numpy_shape):
    """Read a V2/V3 record: storage type, [storage shape], shape, rest."""
    offset = reader.pos
    (stype,) = reader.unpack("<i", "storage type")
    # -1 ("undefined") is plausible only for a none array; checked below.
    if stype not in (-1, 0, 1, 2):
        raise reader.fail(offset, f"unknown storage type {stype}")
    storage = _read_shape(reader, numpy_shape) if stype in _SPARSE else ()
    shape = _read_shape(reader, numpy_shape)
    if shape is None or (shape == () and not numpy_shape and not _is_quirk(reader)):
        return None  # a "none" array: the record ends after its shape
    if stype == -1 or storage is None:
        raise reader.fail(offset, "undefined storage type or storage shape")
    if stype == 0:
        return _read_dense(reader, shape)
    return _read_sparse(reader, offset, stype, storage, shape)


def _is_quirk(reader):
    """Tell whether a V2 ndim-0 shape is followed by context and dtype flag."""
    if not reader.quirk or len(reader.buf) - reader.pos < 12:
        return False
    dev_type, dev_id, flag = struct.unpack_from("<iii", reader.buf, reader.pos)
    found = dev_type in _DEVICE_TYPES and 0 <= dev_id <= 1023 and flag in _FLAG_NAMES
    reader.quirk_used |= found
    return found


def _read_dense(reader, shape):
    """Read context (ignored: arrays always load on the host), dtype, data."""
    flag_offset = reader.pos + 8
    _dev_type, _dev_id, flag = reader.unpack("<iii", "context and dtype flag")
    return _read_values(reader, flag, flag_offset, shape)


def _read_values(reader, flag, flag_offset, shape):
    """Read prod(shape) elements of dtype ``flag`` into a fresh array."""
    if flag not in _FLAG_NAMES:
        raise reader.fail(flag_offset, f"unknown dtype flag {flag}")
    name, count = _FLAG_NAMES[flag], math.prod(shape)
    itemsize = 2 if flag == _BFLOAT16 else np.dtype(name).itemsize
    start = reader.take(count * itemsize, f"{name} data")
    out = np.empty(shape, np.float32 if flag == _BFLOAT16 else name)
    np.copyto(out, _raw_values(reader.buf, start, count, flag).reshape(shape))
    return out


def _raw_values(buf, start, count, flag):
    """View ``count`` little-endian elements of ``buf`` as native values."""
    if flag == _BFLOAT16:
        # bfloat16 is the high half of a float32, so widening is exact.
        halves = np.frombuffer(buf, "<u2", count, start)
        return (halves.astype(np.uint32) << 16).view(np.float32)
    if flag == _BOOL:
        # Read bytes, not bools: NumPy bools must be exactly 0 or 1.
        return np.frombuffer(buf, np.uint8, count, start) != 0
    little = np.dtype(_FLAG_NAMES[flag]).newbyteorder("<")
    return np.frombuffer(buf, little, count, start)


def _read_sparse(reader, offset, stype, storage, shape):
    """Read a row_sparse/csr record and return its dense equivalent."""
    flag_offset = reader.pos + 8
    _dev_type, _dev_id, flag = reader.unpack("<iii", "context and dtype flag")
    aux_specs = []
    for _ in range(_SPARSE[stype][1]):
        aux_offset = reader.pos
        (aux_flag,) = reader.unpack("<i", "aux dtype flag")
        if aux_flag not in _INDEX_FLAGS:
            raise reader.fail(aux_offset, f"aux dtype flag {aux_flag} is not integral")
        aux_specs.append((aux_flag, aux_offset, _read_shape(reader, False)))
    values = _read_values(reader, flag, flag_offset, storage)
    aux = [_read_values(reader, *spec) for spec in aux_specs]
    record = SparseRecord(_SPARSE[stype][0], values, tuple(aux), shape)
    try:
        validate_record(record)
        return record if reader.sparse else densify(record)
    except ValueError as error:
        raise reader.fail(offset, f"bad {_SPARSE[stype][0]} record: {error}") from None


# ---------------------------------------------------------------- files


def save_file(path, arrays, names=None):
    """Encode, then write atomically (see ``rebind.fileutil.write_atomic``)."""
    write_atomic(path, encode(arrays, names))  # encoding fails before the disk is touched


def load_file(path, sparse=False):
    """Read and decode a list file; returns ``(arrays, names)`` like decode."""
    with open(path, "rb") as handle:
        data = handle.read()
    return decode(data, source=str(path), sparse=sparse)
