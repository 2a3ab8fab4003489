"""Reading LibSVM text files into CSR parts, as MXNet 1.9.1's LibSVMIter (dmlc's parser) reads them.

``read_libsvm`` returns host arrays: labels, values, column indices, row
pointers. A line is ``label[:weight] idx:value ...`` (zero-based indices).
``part_range`` is dmlc's byte partition of the input for ``num_parts``. The
common case is parsed with whole-text byte operations (``_fast_parse``); if
anything is off, a token-by-token parse finds the first malformed line and
names its file and line number.
"""

import os

import numpy as np

from ..base import MXNetError
from ..errors import FormatError

__all__ = ["LibSVMFormatError", "input_files", "part_range", "read_libsvm"]

OWNER = "LibSVMIter"


class LibSVMFormatError(FormatError, MXNetError):
    """A LibSVM file has a malformed line (the message names the file and the line)."""


def input_files(path):
    """The files ``path`` names: itself, or the non-empty files of a folder, by name."""
    path = os.fspath(path)
    if os.path.isdir(path):
        names = sorted(os.listdir(path))
        files = [os.path.join(path, n) for n in names if os.path.isfile(os.path.join(path, n))]
        files = [f for f in files if os.path.getsize(f) > 0]
    else:
        files = [path] if os.path.exists(path) and os.path.getsize(path) > 0 else []
    if not files:
        raise FileNotFoundError(
            f"{OWNER}: cannot find any files that matches the URI pattern {path!r} (a LibSVM "
            "file, or a folder of them, with at least one non-empty file)"
        )
    return files


def part_range(data, num_parts, part_index):
    """``(begin, end)`` bytes of part ``part_index`` of ``num_parts`` (dmlc's line split)."""
    total = len(data)
    step = (total + num_parts - 1) // num_parts

    def line_start(offset):
        if offset == 0 or offset >= total:
            return min(offset, total)
        end = data.find(b"\n", offset)
        if end < 0:
            return total
        end += 1
        while end < total and data[end : end + 1] in (b"\n", b"\r"):
            end += 1
        return end

    return line_start(min(step * part_index, total)), line_start(
        min(step * (part_index + 1), total)
    )


def _joined(files):
    """The files' bytes one after another (a missing final newline added) and their offsets."""
    chunks, starts, offset = [], [], 0
    for path in files:
        with open(path, "rb") as handle:
            chunk = handle.read()
        chunk = chunk if chunk.endswith(b"\n") else chunk + b"\n"
        chunks.append(chunk)
        starts.append(offset)
        offset += len(chunk)
    return b"".join(chunks), starts


class _Origin:
    """Names the file and line of a line of the part, for error messages."""

    def __init__(self, files, starts, data, begin, lines):
        self.files, self.starts, self.data, self.begin, self.lines = (
            files,
            starts,
            data,
            begin,
            lines,
        )

    def __call__(self, k):
        offset = self.begin + sum(len(line) + 1 for line in self.lines[:k])
        which = int(np.searchsorted(self.starts, offset, side="right")) - 1
        line = self.data.count(b"\n", self.starts[which], offset) + 1
        return f"{self.files[which]}, line {line}"


def read_libsvm(path, num_parts=1, part_index=0):
    """``(labels, values, indices, indptr)`` of a LibSVM file's part, as host arrays.

    ``labels`` float32 (one per line), ``values`` float32, ``indices`` and
    ``indptr`` int64. A malformed line raises ``LibSVMFormatError`` naming
    the file and the line number.
    """
    files = input_files(path)
    data, starts = _joined(files)
    begin, end = part_range(data, num_parts, part_index)
    lines = data[begin:end].split(b"\n")
    parsed = _fast_parse(lines)
    if parsed is None:  # something is malformed: the slow parse names the line
        parsed = _checked_parse(lines, _Origin(files, starts, data, begin, lines))
    labels, counts, indices, values = parsed
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return labels, values, indices, indptr


def _fast_parse(lines):
    """``(labels, counts, indices, values)`` of well-formed lines, else None (bytes at once)."""
    heads, rests, counts = [], [], []
    for line in lines:
        fields = line.split(None, 1)
        if not fields:
            continue
        heads.append(fields[0].split(b":")[0])
        rest = fields[1] if len(fields) > 1 else b""
        rests.append(rest)
        counts.append(rest.count(b":"))
    joined = b" ".join(rests)
    total = sum(counts)
    try:
        labels = np.array(heads, dtype=np.bytes_).astype(np.float32) if heads else _no(np.float32)
        tokens = joined.replace(b":", b" ").split()
        numbers = np.array(tokens, dtype=np.bytes_).astype(np.float64) if tokens else _no(float)
    except ValueError:
        return None
    if len(joined.split()) != total or numbers.size != 2 * total:
        return None
    pairs = numbers.reshape(total, 2)
    raw = pairs[:, 0]
    if ((raw < 0) | (raw != np.floor(raw))).any():
        return None
    return labels, counts, raw.astype(np.int64), pairs[:, 1].astype(np.float32)


def _no(dtype):
    return np.zeros(0, dtype=dtype)


def _checked_parse(lines, origin):
    """The parse of ``_fast_parse``, token by token, raising at the first malformed line."""
    labels, counts, features, where = [], [], [], []
    for k, line in enumerate(lines):
        fields = line.decode("utf-8", "replace").split()
        if not fields:
            continue
        labels.append(_label(fields[0], origin, k))
        counts.append(len(fields) - 1)
        features.extend(fields[1:])
        where.append(k)
    indices, values = _features(features, counts, [(origin, k) for k in where])
    return np.asarray(labels, dtype=np.float32), counts, indices, values


def _label(field, origin, k):
    try:
        return float(field.split(":")[0])
    except ValueError:
        _fail((origin, k), f"the label {field!r} is not a number")


def _features(features, counts, numbers):
    """Indices (int64) and values (float32) of the ``idx:value`` tokens, checked."""
    if not features:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    pairs = [token.split(":") for token in features]
    row_of = np.repeat(np.arange(len(counts)), counts)
    for k, pair in enumerate(pairs):
        if len(pair) != 2:
            _fail(numbers[row_of[k]], f"the feature {features[k]!r} is not idx:value")
    try:
        numbers_array = np.array(pairs, dtype=np.float64)
    except ValueError:
        bad = next(k for k, p in enumerate(pairs) if not _numeric(p))
        _fail(numbers[row_of[bad]], f"the feature {features[bad]!r} is not idx:value")
    raw_indices = numbers_array[:, 0]
    bad = np.flatnonzero((raw_indices < 0) | (raw_indices != np.floor(raw_indices)))
    if bad.size:
        k = int(bad[0])
        _fail(
            numbers[row_of[k]],
            f"the feature index in {features[k]!r} is not a non-negative integer "
            "(LibSVMIter reads zero-based indices)",
        )
    return raw_indices.astype(np.int64), numbers_array[:, 1].astype(np.float32)


def _numeric(pair):
    try:
        [float(p) for p in pair]
    except ValueError:
        return False
    return True


def _fail(place, what):
    origin, k = place
    raise LibSVMFormatError(f"{OWNER}: {origin(k)}: {what}")
