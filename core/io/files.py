"""Iterators over data files: CSVIter (comma-separated values) and MNISTIter (idx files).

Both read their whole file at construction (MXNet streams CSV files; rebind
keeps them in memory) and hand out float32 batches on ``cpu(0)``, as MXNet's
C++ iterators do. Malformed files raise ``FormatError`` naming the file and,
for CSV, the line.
"""

import gzip
import logging
import math
import struct
import warnings

import numpy as np

from ..context import cpu
from ..errors import FormatError
from ..ndarray import array
from .base import DataBatch, DataDesc, DataIter
from .cxx_random import std_shuffle_order
from .params import as_bool, as_int, as_shape, warn_ignored

__all__ = ["CSVIter", "MNISTIter", "MXDataIter"]

_log = logging.getLogger("rebind.io")


class MXDataIter(DataIter):
    """MXNet's base of its C++-backed iterators (CSVIter, MNISTIter): batches from host arrays.

    ``getdata``/``getlabel`` return one NDArray each, as MXNet's do.
    """

    def __init__(self, batch_size, data_name, label_name, dtype):
        if batch_size is None or int(batch_size) < 1:
            raise ValueError(f"{type(self).__name__}: batch_size must be >= 1, got {batch_size}")
        super().__init__(int(batch_size))
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = np.dtype(dtype or np.float32)
        self._current = None  # (data, label, pad, index) of the current batch

    def _describe(self, name, sample_shape):
        return [DataDesc(name, (self.batch_size,) + tuple(sample_shape), self.dtype.type)]

    def _set_current(self, data, label, pad, index):
        self._current = (data, label, pad, index)

    def _require_current(self):
        if self._current is None:
            raise RuntimeError(f"{type(self).__name__}: no current batch; call next() first")
        return self._current

    def getdata(self):
        """The current batch's data: one NDArray, as MXNet's C++-backed iterators return."""
        return array(self._require_current()[0], ctx=cpu(0), dtype=self.dtype)

    def getlabel(self):
        """The current batch's label: one NDArray, as MXNet's C++-backed iterators return."""
        return array(self._require_current()[1], ctx=cpu(0), dtype=self.dtype)

    def getpad(self):
        return self._require_current()[2]

    def getindex(self):
        return self._require_current()[3].copy()

    def next(self):
        if not self.iter_next():
            raise StopIteration
        return DataBatch(
            data=[self.getdata()],
            label=[self.getlabel()],
            pad=self.getpad(),
            index=self.getindex(),
        )


# -- CSV ------------------------------------------------------------------------------
def _find_bad_csv_line(path):
    """The FormatError for the first malformed line of ``path`` (None if all look fine)."""
    width, first_line = None, None
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            fields = line.rstrip("\r\n").split(",")
            for field in fields:
                try:
                    float(field)
                except ValueError:
                    return FormatError(f"{path}, line {number}: {field.strip()!r} is not a number")
            if width is None:
                width, first_line = len(fields), number
            elif len(fields) != width:
                return FormatError(
                    f"{path}, line {number}: {len(fields)} values, but line {first_line} "
                    f"has {width}; every row needs the same number of values"
                )
    return None


def read_csv(path, dtype):
    """The rows of a CSV file of numbers as a 2-D array (integers are truncated toward 0)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # an empty file: reported below
            values = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2, comments=None)
    except ValueError as exc:
        error = _find_bad_csv_line(path) or FormatError(f"{path}: not a CSV of numbers: {exc}")
        raise error from None
    if values.size == 0:
        raise FormatError(f"{path}: the file holds no rows")
    return values.astype(dtype)


def _rows_as(path, values, sample_shape, what):
    size = math.prod(sample_shape)
    if values.shape[1] != size:
        raise FormatError(
            f"{path}: rows have {values.shape[1]} values, but {what} {tuple(sample_shape)} "
            f"needs {size} per row"
        )
    return values.reshape((values.shape[0],) + tuple(sample_shape))


def _read_labels(label_csv, label_shape, dtype, count, data_csv):
    """The labels of a CSVIter: one row per data row, or zeros without a label file."""
    if label_csv is None or label_csv == "NULL":
        return np.zeros((count,) + label_shape, dtype)
    labels = _rows_as(label_csv, read_csv(label_csv, dtype), label_shape or (1,), "label_shape")
    if labels.shape[0] != count:
        raise FormatError(
            f"CSVIter: {label_csv} has {labels.shape[0]} rows but {data_csv} "
            f"has {count}; they need one label row per data row"
        )
    return labels.reshape((count,) + label_shape)


class CSVIter(MXDataIter):
    """Batches from a CSV file of data and, optionally, one of labels (one example per row).

    Args:
        data_csv: path of the data file; each row holds ``prod(data_shape)`` numbers.
        data_shape: the shape of one example.
        label_csv: path of the label file (None or 'NULL': every label is 0).
        label_shape: the shape of one label; a one-element shape gives labels of
            shape ``(batch_size,)``.
        batch_size: examples per batch.
        round_batch: fill the last batch from the start of the file (its ``pad``
            says how many) and start the next epoch after those examples, as
            MXNet does. Without it the last batch's ``pad`` slots keep whatever
            the previous batch left there.
        dtype: the dtype of data and labels (float32 unless given; integer
            dtypes truncate the values).
        data_name, label_name: the names in provide_data / provide_label.
        prefetch_buffer, ctx: accepted for MXNet compatibility; they have no
            effect, the whole file is read at construction.

    Values may be given as strings, as MXNet's parameter parser reads them
    (``batch_size='4'``, ``data_shape='(3,)'``, ``round_batch='0'``). Other
    keywords are ignored, as in MXNet, with a warning naming them.
    """

    def __init__(
        self,
        data_csv,
        data_shape,
        label_csv=None,
        label_shape=(1,),
        batch_size=None,
        round_batch=True,
        dtype=None,
        data_name="data",
        label_name="softmax_label",
        prefetch_buffer=4,
        ctx="gpu",
        **ignored,
    ):
        warn_ignored("CSVIter", ignored)
        super().__init__(_batch_size("CSVIter", batch_size), data_name, label_name, dtype)
        self.round_batch = as_bool("CSVIter", "round_batch", round_batch)
        data_shape = as_shape("CSVIter", "data_shape", data_shape)
        label_shape = as_shape("CSVIter", "label_shape", label_shape)
        self._data = _rows_as(data_csv, read_csv(data_csv, self.dtype), data_shape, "data_shape")
        count = self._data.shape[0]
        if math.prod(label_shape) == 1:
            label_shape = ()
        self._label = _read_labels(label_csv, label_shape, self.dtype, count, data_csv)
        self.provide_data = self._describe(data_name, data_shape)
        self.provide_label = self._describe(label_name, label_shape)
        # batches are assembled in these buffers, so pad slots keep old rows as in MXNet
        self._buffers = (
            np.zeros((self.batch_size,) + data_shape, self.dtype),
            np.zeros((self.batch_size,) + label_shape, self.dtype),
            np.zeros(self.batch_size, np.uint64),
        )
        self._resume_at = 0  # where the next epoch starts (after rows used as padding)
        self.reset()

    def reset(self):
        self._position = self._resume_at if self.round_batch else 0
        self._resume_at = 0
        self._epoch_done = False

    def iter_next(self):
        count = self._data.shape[0]
        if self._epoch_done or self._position >= count:
            self._epoch_done = True
            return False
        take = min(self.batch_size, count - self._position)
        rows = np.arange(self._position, self._position + take)
        self._position += take
        pad = self.batch_size - take
        if pad:
            self._epoch_done = True
            if self.round_batch:
                rows = np.concatenate([rows, np.arange(pad) % count])
                self._resume_at = pad % count
        data, label, index = self._buffers
        data[: rows.size] = self._data[rows]
        label[: rows.size] = self._label[rows]
        index[: rows.size] = rows
        self._set_current(data.copy(), label.copy(), pad, index.copy())
        return True


def _batch_size(owner, batch_size):
    return None if batch_size is None else as_int(owner, "batch_size", batch_size)


# -- MNIST ----------------------------------------------------------------------------
_MNIST_HINTS = {
    "data_shape": "the shape comes from flat: flat=True gives (batch, rows*cols)",
    "input_shape": "the shape comes from flat: flat=True gives (batch, rows*cols)",
    "label_shape": "labels are always (batch,)",
    "round_batch": "MNISTIter yields whole batches only",
}
_IMAGE_MAGIC, _LABEL_MAGIC = 2051, 2049


def _read_bytes(path):
    compressed = str(path).endswith(".gz")
    try:
        with (gzip.open if compressed else open)(path, "rb") as handle:
            return handle.read()
    except (gzip.BadGzipFile, EOFError) as exc:
        raise FormatError(f"{path}: not a complete gzip file: {exc}") from exc


def read_idx(path, magic, ndim):
    """The uint8 array of an idx file (big-endian header: magic, then ``ndim`` sizes)."""
    raw = _read_bytes(path)
    header = 4 * (1 + ndim)
    what = "image" if magic == _IMAGE_MAGIC else "label"
    if len(raw) < header:
        raise FormatError(
            f"{path}: truncated: {len(raw)} bytes, an MNIST {what} file's header needs {header}"
        )
    found, *dims = struct.unpack(f">{1 + ndim}i", raw[:header])
    if found != magic:
        raise FormatError(
            f"{path}: magic number {found}, expected {magic} for an MNIST {what} file "
            f"(2051 images, 2049 labels)"
        )
    need = math.prod(dims)
    if len(raw) - header < need:
        raise FormatError(
            f"{path}: truncated: the header announces {dims} ({need} bytes of values), "
            f"the file holds {len(raw) - header}"
        )
    return np.frombuffer(raw, np.uint8, count=need, offset=header).reshape(dims)


def shard_range(count, num_parts, part_index):
    """MXNet's split of ``count`` examples into ``num_parts``: [start, end) of one part."""
    if num_parts < 1 or not 0 <= part_index < num_parts:
        raise ValueError(
            f"MNISTIter: part_index must be in [0, num_parts) with num_parts >= 1, "
            f"got part_index={part_index}, num_parts={num_parts}"
        )
    return int(count / num_parts * part_index), int(count / num_parts * (part_index + 1))


def _read_mnist(image, label):
    images = read_idx(image, _IMAGE_MAGIC, 3)
    labels = read_idx(label, _LABEL_MAGIC, 1)
    if images.shape[0] != labels.shape[0]:
        raise FormatError(
            f"MNISTIter: {image} holds {images.shape[0]} images but {label} holds "
            f"{labels.shape[0]} labels"
        )
    return images, labels


class MNISTIter(MXDataIter):
    """Batches of MNIST digits from the idx files (gzip-compressed when named ``*.gz``).

    Pixels are scaled as MXNet scales them, by 1/256, to float32 in [0, 1).
    Data comes as ``(batch, 1, rows, cols)``, or ``(batch, rows*cols)`` with
    ``flat=True``; labels as ``(batch,)``. Only whole batches are produced.
    ``num_parts`` / ``part_index`` read one contiguous part of the files (for
    distributed training). ``shuffle`` permutes the examples (of the part)
    once, exactly as MXNet does for the same ``seed`` (``std::shuffle`` with
    ``std::mt19937(seed)``), so every epoch has that order. ``getindex()``
    gives each example's row in the file.

    As in MXNet, values may be strings (``shuffle='0'``, ``batch_size='100'``)
    and keywords MNISTIter does not declare are ignored, here with a warning
    naming them: ``data_shape=(784,)``, which some of MXNet's examples pass,
    does not flatten (``flat=True`` does), exactly as in MXNet. Beyond MXNet,
    ``dtype`` is honoured (MXNet 1.9.1 fails on any dtype but float32).
    """

    def __init__(
        self,
        image="./train-images-idx3-ubyte",
        label="./train-labels-idx1-ubyte",
        batch_size=128,
        shuffle=True,
        flat=False,
        seed=0,
        silent=False,
        num_parts=1,
        part_index=0,
        data_name="data",
        label_name="softmax_label",
        dtype=None,
        prefetch_buffer=4,
        ctx="gpu",
        **ignored,
    ):
        warn_ignored("MNISTIter", ignored, _MNIST_HINTS)
        super().__init__(_batch_size("MNISTIter", batch_size), data_name, label_name, dtype)
        shuffle, flat, silent = (
            as_bool("MNISTIter", name, value)
            for name, value in (("shuffle", shuffle), ("flat", flat), ("silent", silent))
        )
        seed, num_parts, part_index = (
            as_int("MNISTIter", name, value)
            for name, value in zip(
                ("seed", "num_parts", "part_index"), (seed, num_parts, part_index), strict=True
            )
        )
        images, labels = _read_mnist(image, label)
        start, end = shard_range(images.shape[0], num_parts, part_index)
        order = np.arange(start, end)
        if shuffle:
            order = order[std_shuffle_order(order.size, seed)]
        self._images = images[order]  # uint8 until a batch is cut: a quarter of the memory
        self._labels = labels[order].astype(np.float32)
        self._order = order.astype(np.uint64)
        self.flat = bool(flat)
        sample = images.shape[1:]
        self._sample_shape = (math.prod(sample),) if self.flat else (1,) + sample
        self.provide_data = self._describe(data_name, self._sample_shape)
        self.provide_label = self._describe(label_name, ())
        if not silent:
            shape = (self.batch_size,) + self._sample_shape
            _log.info("MNISTIter: load %d images, shuffle=%d, shape=%s", order.size, shuffle, shape)
        self._position = 0

    def reset(self):
        self._position = 0

    def iter_next(self):
        end = self._position + self.batch_size
        if end > self._images.shape[0]:
            return False
        pixels = self._images[self._position : end].astype(np.float32) / np.float32(256)
        self._set_current(
            pixels.reshape((self.batch_size,) + self._sample_shape),
            self._labels[self._position : end],
            0,
            self._order[self._position : end],
        )
        self._position = end
        return True
