"""Write updater states as MXNet 1.9.1 pickles them (``Updater.get_states()``).

MXNet's updater returns ``pickle.dumps(states)``: protocol 4 (Python 3's
default up to 3.13) over ``{index: state}``, a state being an NDArray, None,
or tuples of them. An NDArray reduces to ``NDArray(None)`` followed by
``__setstate__({'handle': bytearray(record)})``, where the record is the
array as ``NDArray::Save`` writes it, naming the array's own device.

MXNet's classes cannot be imported here, so this module writes the opcodes
itself, with the memo numbering, batching and framing of CPython's C pickler,
so that the bytes equal MXNet's for the same states. ``mxnet_pickle`` reads
such streams back without running code.
"""

import io
import numbers
import struct

from ..ndarray import NDArray, fileformat
from ..ndarray.serialization import _host as host_record

__all__ = ["PROTOCOL", "dumps"]

PROTOCOL = 4
# CPython's framing: a frame is closed once it holds 64 KiB; payloads that
# large are written outside any frame; frames under 4 bytes get no header
_FRAME_TARGET = 64 * 1024
_FRAME_MIN = 4
_BATCH = 1000  # items per SETITEMS/APPENDS
_NDARRAY_GLOBAL = ("mxnet.ndarray.ndarray", "NDArray")
# MXNet pickles a sparse array under its own class (NDArray.__reduce__ names type(self))
_SPARSE_GLOBALS = {
    "row_sparse": ("mxnet.ndarray.sparse", "RowSparseNDArray"),
    "csr": ("mxnet.ndarray.sparse", "CSRNDArray"),
}
_BYTEARRAY_GLOBAL = ("builtins", "bytearray")


def dumps(states):
    """The pickle MXNet's ``Updater.get_states(dump_optimizer=False)`` writes for ``states``."""
    writer = _Writer()
    writer.out.write(b"\x80" + bytes([PROTOCOL]))
    writer.save(states, "states")
    writer.write(b".")
    writer.commit(force=True)
    return writer.out.getvalue()


class _Writer:
    """One pickling pass: the committed output, the open frame and the memo."""

    def __init__(self):
        self.out = io.BytesIO()
        self.frame = io.BytesIO()
        self.memo = {}  # id(object) or a constant's key -> memo index
        self.alive = []  # objects whose ids are memo keys must outlive the pass

    # -- framing and memo ------------------------------------------------------

    def write(self, data):
        self.frame.write(data)

    def commit(self, force=False):
        data = self.frame.getvalue()
        if data and (force or len(data) >= _FRAME_TARGET):
            if len(data) >= _FRAME_MIN:
                self.out.write(b"\x95" + struct.pack("<Q", len(data)))
            self.out.write(data)
            self.frame = io.BytesIO()

    def write_large(self, header, payload):
        self.commit(force=True)
        self.out.write(header)
        self.out.write(payload)

    def memoize(self, key, keep=None):
        self.memo[key] = len(self.memo)
        if keep is not None:
            self.alive.append(keep)
        self.write(b"\x94")

    def recall(self, key):
        """Write a memo fetch for ``key`` and say so, or say it is not memoized."""
        index = self.memo.get(key)
        if index is None:
            return False
        self.write(b"h" + bytes([index]) if index < 256 else b"j" + struct.pack("<I", index))
        return True

    # -- values ----------------------------------------------------------------

    def save(self, value, where):
        """Write ``value``; ``where`` names it in errors."""
        self.commit()
        if value is None:
            self.write(b"N")
        elif value is True or value is False:
            self.write(b"\x88" if value else b"\x89")
        elif isinstance(value, numbers.Integral):
            self.save_int(int(value))
        elif isinstance(value, numbers.Real):
            self.write(b"G" + struct.pack(">d", float(value)))
        elif self.recall(id(value)):
            return
        elif isinstance(value, str):
            self.save_str(value, id(value), value)
        elif isinstance(value, NDArray):
            self.save_ndarray(value, where)
        elif isinstance(value, tuple):
            self.save_tuple(value, where)
        elif isinstance(value, list):
            self.save_list(value, where)
        elif isinstance(value, dict):
            self.save_dict(value, where)
        else:
            raise TypeError(
                f"cannot save {where} as MXNet states: a {type(value).__name__} is not an "
                "NDArray, number, string, None, tuple, list or dict"
            )

    def save_int(self, number):
        if 0 <= number <= 0xFF:
            self.write(b"K" + bytes([number]))
        elif 0 <= number <= 0xFFFF:
            self.write(b"M" + struct.pack("<H", number))
        elif -0x80000000 <= number <= 0x7FFFFFFF:
            self.write(b"J" + struct.pack("<i", number))
        else:
            encoded = _encode_long(number)
            size = len(encoded)
            head = b"\x8a" + bytes([size]) if size < 256 else b"\x8b" + struct.pack("<i", size)
            self.write(head + encoded)

    def save_str(self, text, key, keep):
        encoded = text.encode("utf-8", "surrogatepass")
        size = len(encoded)
        if size < 256:
            self.write(b"\x8c" + bytes([size]) + encoded)
        elif size > 0xFFFFFFFF:
            self.write_large(b"\x8d" + struct.pack("<Q", size), encoded)
        elif size >= _FRAME_TARGET:
            self.write_large(b"X" + struct.pack("<I", size), encoded)
        else:
            self.write(b"X" + struct.pack("<I", size) + encoded)
        self.memoize(key, keep)

    def save_bytes(self, data):
        """A fresh bytes object, as ``bytearray.__reduce_ex__`` makes one per call."""
        size = len(data)
        if size <= 0xFF:
            self.write(b"C" + bytes([size]) + data)
        elif size > 0xFFFFFFFF:
            self.write_large(b"\x8e" + struct.pack("<Q", size), data)
        elif size >= _FRAME_TARGET:
            self.write_large(b"B" + struct.pack("<I", size), data)
        else:
            self.write(b"B" + struct.pack("<I", size) + data)
        self.memoize(("fresh", len(self.memo)))

    def save_global(self, module_and_name):
        """A class as protocol 4 names it, memoized once per pass."""
        self.commit()
        if self.recall(module_and_name):
            return
        for text in module_and_name:
            self.commit()
            self.save_str(text, ("text", text), None)
        self.write(b"\x93")
        self.memoize(module_and_name)

    def save_ndarray(self, array, where):
        """``NDArray.__reduce__``: ``NDArray(None)``, then ``{'handle': bytearray(record)}``."""
        ctx = array.context
        # a row_sparse (or csr) state is written as its sparse record, as MXNet pickles it
        record = fileformat.encode_record(host_record(array), (ctx.device_typeid, ctx.device_id))
        self.save_global(_SPARSE_GLOBALS.get(array.stype, _NDARRAY_GLOBAL))
        self.commit()
        if not self.recall("(None,)"):  # the constant argument tuple of __reduce__
            self.write(b"N\x85")
            self.memoize("(None,)")
        self.write(b"R")
        self.memoize(id(array), array)
        self.commit()
        self.write(b"}")
        self.memoize(("fresh", len(self.memo)))
        self.commit()
        if not self.recall("'handle'"):  # the constant key of __getstate__
            self.save_str("handle", "'handle'", None)
        self.commit()
        self.save_global(_BYTEARRAY_GLOBAL)
        self.commit()
        self.save_bytes(record)
        self.write(b"\x85")
        self.memoize(("fresh", len(self.memo)))
        self.write(b"R")
        self.memoize(("fresh", len(self.memo)))
        self.write(b"sb")  # SETITEM into the state dict, BUILD the NDArray

    def save_tuple(self, items, where):
        if not items:
            self.write(b")")
            return
        if len(items) > 3:
            self.write(b"(")
        for i, item in enumerate(items):
            self.save(item, f"{where}[{i}]")
        self.write({1: b"\x85", 2: b"\x86", 3: b"\x87"}.get(len(items), b"t"))
        self.memoize(id(items), items)

    def save_list(self, items, where):
        self.write(b"]")
        self.memoize(id(items), items)
        if len(items) == 1:
            self.save(items[0], f"{where}[0]")
            self.write(b"a")
            return
        for start in range(0, len(items), _BATCH):
            self.write(b"(")
            for i in range(start, min(start + _BATCH, len(items))):
                self.save(items[i], f"{where}[{i}]")
            self.write(b"e")

    def save_dict(self, mapping, where):
        self.write(b"}")
        self.memoize(id(mapping), mapping)
        pairs = list(mapping.items())
        if len(pairs) == 1:
            self.save_pair(*pairs[0], where)
            self.write(b"s")
            return
        # the C pickler closes a batch of exactly _BATCH pairs with one more, empty batch
        for start in range(0, len(pairs) + 1 if pairs else 0, _BATCH):
            self.write(b"(")
            for key, value in pairs[start : start + _BATCH]:
                self.save_pair(key, value, where)
            self.write(b"u")

    def save_pair(self, key, value, where):
        if not isinstance(key, (str, numbers.Integral)) or isinstance(key, bool):
            raise TypeError(f"cannot save {where}: key {key!r} is not a string or an integer")
        self.save(key, where)
        self.save(value, f"{where}[{key!r}]")


def _encode_long(number):
    """Two's complement little-endian bytes, as ``pickle.encode_long`` gives them."""
    size = (number.bit_length() >> 3) + 1
    encoded = number.to_bytes(size, "little", signed=True)
    if number < 0 and size > 1 and encoded[-1] == 0xFF and encoded[-2] & 0x80:
        encoded = encoded[:-1]
    return encoded
