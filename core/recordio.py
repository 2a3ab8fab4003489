"""mx.recordio: MXNet's RecordIO files (``.rec`` with an optional ``.idx``), in pure Python.

The format is dmlc-core's, byte for byte. A record is written as

    magic (uint32 0xced7230a) | lrec (uint32) | data | zero padding to 4 bytes

where ``lrec`` holds the data length in its lower 29 bits and a continue flag in
its upper 3 bits. A record whose data contains the magic word at a 4-byte aligned
position is split there into parts (flag 1 start, 2 middle, 3 end; 0 is a whole
record) and the magic words are dropped, so that a reader can always resync on
the magic number; reading joins the parts and puts the magic words back. All
integers are little-endian. The index file is text, one ``key\\toffset`` a line.

``pack``/``unpack`` add MXNet's image-record header (``IRHeader``, struct ``IfQQ``)
in front of the payload; a vector label is stored as ``flag`` float32 values
right after the header. ``pack_img``/``unpack_img`` need OpenCV (the ``image``
extra), imported only when called.

Damaged input never crashes or hangs: a truncated or corrupt record raises
``RecordIOError`` naming the file and the byte offset.
"""

import numbers
import os
import struct
from collections import namedtuple
from multiprocessing import current_process

import numpy as np

from .errors import FormatError

__all__ = [
    "MXRecordIO",
    "MXIndexedRecordIO",
    "IRHeader",
    "RecordIOError",
    "pack",
    "unpack",
    "pack_img",
    "unpack_img",
]

_MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", _MAGIC)
_LENGTH_BITS = 29
_MAX_LENGTH = (1 << _LENGTH_BITS) - 1
_WHOLE, _START, _MIDDLE, _END = 0, 1, 2, 3
_HEAD = struct.Struct("<II")


class RecordIOError(FormatError):
    """A RecordIO file (or a packed record) is truncated or corrupt."""


def _padding(length):
    return -length % 4


def _split_at_magic(data):
    """The parts dmlc-core writes: data cut at every 4-byte aligned magic word."""
    parts, start = [], 0
    found = data.find(_MAGIC_BYTES)
    while found != -1:
        if found % 4 == 0:
            parts.append(data[start:found])
            start = found + 4
            found = data.find(_MAGIC_BYTES, start)
        else:
            found = data.find(_MAGIC_BYTES, found + 1)
    parts.append(data[start:])
    return parts


def _encode_record(data):
    """The bytes of one record (all its parts and the final padding)."""
    parts = _split_at_magic(data)
    out = bytearray()
    for number, part in enumerate(parts):
        if len(parts) == 1:
            cflag = _WHOLE
        elif number == 0:
            cflag = _START
        else:
            cflag = _END if number == len(parts) - 1 else _MIDDLE
        out += _HEAD.pack(_MAGIC, (cflag << _LENGTH_BITS) | len(part))
        out += part
    out += b"\0" * _padding(len(data))
    return bytes(out)


def _header_problem(head, first, left):
    """Why a part header read from a file is wrong, or None; ``left``: bytes after it."""
    if len(head) < _HEAD.size:
        return f"the file ends inside a record header ({len(head)} of {_HEAD.size} bytes)"
    magic, lrec = _HEAD.unpack(head)
    if magic != _MAGIC:
        return f"expected the magic number 0x{_MAGIC:08x}, found 0x{magic:08x}"
    cflag, length = lrec >> _LENGTH_BITS, lrec & _MAX_LENGTH
    expected = (_WHOLE, _START) if first else (_MIDDLE, _END)
    if cflag not in expected:
        return f"continue flag {cflag} where one of {expected} must come"
    if length + _padding(length) > left:
        return f"the header announces {length} bytes but the file has only {left} left"
    return None


class MXRecordIO:
    """Reads (``flag='r'``) or writes (``flag='w'``) a RecordIO file sequentially.

    As in MXNet, opening for writing truncates the file, ``reset()`` goes back to
    the first record (truncating a writer), and an object copied into another
    process (fork) refuses to read or write on the shared file handle. Pickling a
    reader records its path and reopens it at the first record on unpickling.
    Differences from MXNet: pickling leaves the original open (MXNet closes it)
    and pickling a writer raises TypeError (MXNet would truncate the file when
    the copy reopens it).
    """

    def __init__(self, uri, flag):
        self.uri = os.fspath(uri)
        self.flag = flag
        self.pid = None
        self.is_open = False
        self.writable = flag == "w"
        self._file = None
        self._size = 0
        self.open()

    def open(self):
        """Opens the file: for writing it is emptied, for reading positioned at the start."""
        if self.flag not in ("r", "w"):
            raise ValueError(f"Invalid flag {self.flag}: MXRecordIO takes 'r' or 'w'")
        self.writable = self.flag == "w"
        self._file = open(self.uri, "wb" if self.writable else "rb")  # noqa: SIM115
        self._size = 0 if self.writable else os.fstat(self._file.fileno()).st_size
        self.pid = current_process().pid
        self.is_open = True

    def __del__(self):
        if getattr(self, "_file", None) is not None:
            self.close()

    def __getstate__(self):
        if self.writable:
            raise TypeError(
                f"cannot pickle a RecordIO writer of {self.uri!r}: the copy would truncate "
                "the file when it reopens it; pickle a reader (flag='r') instead"
            )
        state = {k: v for k, v in self.__dict__.items() if k not in ("_file", "_size")}
        state["pid"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._file, self._size = None, 0
        was_open, self.is_open = state["is_open"], False
        if was_open:
            self.open()

    def _check_pid(self, allow_reset=False):
        """Refuses (or, for seeks, reopens) a handle inherited from another process."""
        if self.pid == current_process().pid:
            return
        if allow_reset:
            self.reset()
        else:
            raise RuntimeError(
                f"Forbidden operation in multiple processes: {self.uri!r} was opened by "
                f"process {self.pid}; open the file again in this one"
            )

    def close(self):
        """Closes the file; a closed object can be reopened with ``open()``."""
        if not self.is_open:
            return
        self._file.close()
        self._file = None
        self.is_open = False
        self.pid = None

    def reset(self):
        """Goes back to the first record (for a writer: empties the file)."""
        self.close()
        self.open()

    def tell(self):
        """The byte offset of the next record to be written (or read)."""
        self._require_open()
        return self._file.tell()

    def write(self, buf):
        """Appends one record holding the bytes ``buf``."""
        if not self.writable:
            raise ValueError(f"{self.uri!r} was opened for reading (flag='r'); it cannot write")
        self._require_open()
        self._check_pid(allow_reset=False)
        if isinstance(buf, str):
            raise TypeError("MXRecordIO.write takes bytes, not str: encode the text first")
        data = bytes(memoryview(buf))
        if len(data) > _MAX_LENGTH:
            raise ValueError(f"RecordIO records must be shorter than 2**29 bytes, got {len(data)}")
        self._file.write(_encode_record(data))

    def read(self):
        """The next record's bytes, or None at the end of the file."""
        if self.writable:
            raise ValueError(f"{self.uri!r} was opened for writing (flag='w'); it cannot read")
        self._require_open()
        self._check_pid(allow_reset=False)
        start = self._file.tell()
        parts = []
        while True:
            cflag, part = self._read_part(start, first=not parts)
            if part is None:
                return None
            parts.append(part)
            if cflag in (_WHOLE, _END):
                return _MAGIC_BYTES.join(parts)

    def _read_part(self, record_start, first):
        """(cflag, data) of the next part; (None, None) at a clean end of file."""
        offset = self._file.tell()
        head = self._file.read(_HEAD.size)
        if not head and first:
            return None, None
        reason = _header_problem(head, first, left=self._size - offset - _HEAD.size)
        if reason:
            raise RecordIOError(
                f"RecordIO file {self.uri!r} is corrupt at byte {offset} (record starting at "
                f"byte {record_start}): {reason}; the file is truncated, damaged or not a "
                "RecordIO file"
            )
        lrec = _HEAD.unpack(head)[1]
        length = lrec & _MAX_LENGTH
        return lrec >> _LENGTH_BITS, self._file.read(length + _padding(length))[:length]

    def _require_open(self):
        if not self.is_open:
            raise ValueError(f"RecordIO file {self.uri!r} is closed; call open() first")


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with an index file (``key\\toffset`` lines) for random access.

    Args:
        idx_path: path of the index file.
        uri: path of the record file (must be seekable).
        flag: 'r' or 'w'.
        key_type: converts keys (MXNet's default ``int``; ``str`` for named records).
    """

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        """Opens both files; a reader loads the whole index."""
        super().open()
        self.idx = {}
        self.keys = []
        self.fidx = open(self.idx_path, self.flag)  # noqa: SIM115
        if not self.writable:
            for number, line in enumerate(self.fidx, start=1):
                if line.strip():
                    self._add_index_line(number, line)

    def _add_index_line(self, number, line):
        fields = line.strip().split("\t")
        try:
            key, offset = self.key_type(fields[0]), int(fields[1])
        except (ValueError, IndexError) as error:
            raise RecordIOError(
                f"index file {self.idx_path!r}, line {number}: expected 'key<TAB>offset', "
                f"found {line.rstrip()!r} ({error})"
            ) from None
        self.idx[key] = offset
        self.keys.append(key)

    def close(self):
        """Closes the record file and the index file."""
        if not self.is_open:
            return
        super().close()
        self.fidx.close()
        self.fidx = None

    def __getstate__(self):
        state = super().__getstate__()
        state["fidx"] = None
        return state

    def seek(self, idx):
        """Moves the read position to the record with key ``idx``."""
        if self.writable:
            raise ValueError(f"{self.uri!r} was opened for writing (flag='w'); it cannot seek")
        self._check_pid(allow_reset=True)  # reopens a closed or inherited reader, as MXNet
        try:
            offset = self.idx[idx]
        except KeyError:
            raise KeyError(
                f"key {idx!r} is not in the index {self.idx_path!r} ({len(self.keys)} keys"
                f"{', e.g. ' + repr(self.keys[0]) if self.keys else ''})"
            ) from None
        if not 0 <= offset <= self._size:
            raise RecordIOError(
                f"index file {self.idx_path!r} gives key {idx!r} the offset {offset}, outside "
                f"the {self._size} bytes of {self.uri!r}: the index does not match the file"
            )
        self._file.seek(offset)

    def read_idx(self, idx):
        """The bytes of the record with key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf):
        """Appends a record and indexes it under key ``idx``."""
        key = self.key_type(idx)
        offset = self.tell()
        self.write(buf)
        self.fidx.write(f"{key}\t{offset}\n")
        self.idx[key] = offset
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """The header of an image record: flag, label (float or vector), id, id2.

``pack`` sets ``flag`` itself (0 for a scalar label, else the label's length).
"""

_IR_FORMAT = struct.Struct("<IfQQ")
_IR_SIZE = _IR_FORMAT.size


def pack(header, s):
    """A record's bytes: the IRHeader (and a vector label as float32) followed by ``s``."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + bytes(memoryview(s))
    return _IR_FORMAT.pack(*header) + bytes(memoryview(s))


def unpack(s):
    """``(IRHeader, payload)`` of a packed record; a vector label comes back as float32."""
    if len(s) < _IR_SIZE:
        raise RecordIOError(
            f"a packed record starts with a {_IR_SIZE}-byte IRHeader, this one has {len(s)} bytes"
        )
    header = IRHeader(*_IR_FORMAT.unpack(s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise RecordIOError(
                f"the IRHeader announces {header.flag} float32 labels ({4 * header.flag} bytes) "
                f"but only {len(s)} bytes follow it"
            )
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[4 * header.flag :]
    return header, s


def _cv2():
    try:
        import cv2
    except ImportError:
        raise ImportError(
            "pack_img/unpack_img need OpenCV: pip install 'rebind[image]' "
            "(or opencv-python-headless)"
        ) from None
    return cv2


def unpack_img(s, iscolor=-1):
    """``(IRHeader, image)``: the payload decoded by ``cv2.imdecode(.., iscolor)`` (BGR).

    As in MXNet, the image is None when OpenCV cannot decode the payload.
    """
    cv2 = _cv2()
    header, payload = unpack(s)
    if not payload:
        return header, None
    return header, cv2.imdecode(np.frombuffer(payload, dtype=np.uint8), iscolor)


def pack_img(header, img, quality=95, img_fmt=".jpg"):
    """Encodes ``img`` (BGR as OpenCV) with ``cv2.imencode`` and packs it with ``header``.

    Args:
        quality: JPEG quality 1-100, or PNG compression level 0-9.
        img_fmt: '.jpg'/'.jpeg' or '.png' (other OpenCV formats use their defaults).
    """
    cv2 = _cv2()
    params = []
    if img_fmt.upper() in (".JPG", ".JPEG"):
        params = [cv2.IMWRITE_JPEG_QUALITY, quality]
    elif img_fmt.upper() == ".PNG":
        params = [cv2.IMWRITE_PNG_COMPRESSION, quality]
    ok, buf = cv2.imencode(img_fmt, img, params)
    if not ok:
        raise ValueError(f"OpenCV could not encode the image as {img_fmt}")
    return pack(header, buf.tobytes())
