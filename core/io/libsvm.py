"""LibSVMIter: batches of CSR data (and dense or CSR labels) read from LibSVM text files.

The format, as MXNet 1.9.1 reads it: one example a line, ``label idx:value
idx:value ...`` with zero-based, ascending feature indices (a label may carry
a ``:weight``, which is ignored). ``data_libsvm`` is a file or a folder (all
its non-empty files, in name order). With ``label_libsvm`` labels come from a
second file of the same form, as CSR rows of ``label_shape``; without it the
label is the first field of each data line, a dense ``(batch_size,)`` array.
Reading and checking the text is ``libsvm_parse``'s business.

``num_parts``/``part_index`` split the bytes of the input as dmlc's line
splitter does: part ``k`` starts after the first line end at or after byte
``k * ceil(size / num_parts)`` (the first part at byte 0) and ends where part
``k + 1`` starts. Only ``round_batch=True`` exists (as in MXNet): the last
batch of an epoch wraps to the first examples, ``pad`` counting them, and the
next epoch goes on after them (MXNet's batch loader does not rewind then).

Where rebind differs from MXNet: a feature index at or beyond ``data_shape``
raises (MXNet keeps it in the batch, where it corrupts the array); an empty
part raises ValueError (MXNet raises StopIteration from the constructor); a
part with fewer examples than a batch works (MXNet 1.9.1 can crash on it);
the file is read whole at construction; ``prefetch_buffer`` and ``ctx`` are
accepted and unused.
"""

import math

import numpy as np

from ..base import MXNetError
from ..context import cpu
from ..ndarray import array
from ..ndarray.sparse_array import make_sparse
from .base import DataBatch, DataDesc, DataIter
from .libsvm_parse import OWNER, LibSVMFormatError, read_libsvm
from .params import as_bool, as_int, as_shape, warn_ignored

__all__ = ["LibSVMIter"]


class LibSVMIter(DataIter):
    """MXNet's ``mx.io.LibSVMIter``: CSR batches from LibSVM files (see the module docstring).

    Args:
        data_libsvm: the data file or folder.
        data_shape: the shape of one example, ``(num_features,)``.
        label_libsvm: the label file or folder, or 'NULL' (labels from data lines).
        label_shape: the shape of one label: ``(1,)`` without ``label_libsvm``,
            more than one element with it.
        batch_size: examples per batch.
        num_parts, part_index: read part ``part_index`` of ``num_parts``.
        round_batch: must be True (MXNet's sparse batch loader has no other mode).
        dtype: the values' dtype (None: float32).
        prefetch_buffer, ctx: accepted for compatibility; batches are made on
            demand on ``cpu(0)``.
    """

    def __init__(
        self,
        data_libsvm,
        data_shape,
        batch_size,
        label_libsvm="NULL",
        label_shape=(1,),
        num_parts=1,
        part_index=0,
        round_batch=True,
        prefetch_buffer=4,
        ctx="gpu",
        dtype=None,
        data_name="data",
        label_name="softmax_label",
        **ignored,
    ):
        warn_ignored(OWNER, ignored)
        batch_size = as_int(OWNER, "batch_size", batch_size)
        if batch_size < 1:
            raise ValueError(f"{OWNER}: batch_size must be >= 1, got {batch_size}")
        super().__init__(batch_size)
        self.data_shape = as_shape(OWNER, "data_shape", data_shape)
        self.label_shape = as_shape(OWNER, "label_shape", label_shape)
        num_parts = as_int(OWNER, "num_parts", num_parts)
        part_index = as_int(OWNER, "part_index", part_index)
        round_batch = as_bool(OWNER, "round_batch", round_batch)
        _check_settings(self, label_libsvm, num_parts, part_index, round_batch)
        self.dtype = np.dtype(dtype or np.float32)
        self.data_name, self.label_name = data_name, label_name
        self._data = _as_rows(
            read_libsvm(data_libsvm, num_parts, part_index), self.data_shape, data_libsvm
        )
        self._labels = None
        if label_libsvm not in (None, "NULL"):
            self._labels = _as_rows(
                read_libsvm(label_libsvm, num_parts, part_index), self.label_shape, label_libsvm
            )
            if self._labels[1].shape[0] < self.num_examples:
                raise ValueError(
                    f"{OWNER}: Data LibSVM's row is smaller than the number of rows in "
                    f"label_libsvm ({self._labels[1].shape[0]} label rows for "
                    f"{self.num_examples} data rows)"
                )
        if self.num_examples == 0:
            raise ValueError(
                f"{OWNER}: part {part_index} of {num_parts} of {data_libsvm!r} holds no example"
            )
        self._cursor, self._overflow, self._current = 0, 0, None

    # -- description ----------------------------------------------------------
    @property
    def num_examples(self):
        """The number of examples in this iterator's part."""
        return self._data[1].shape[0] - 1

    @property
    def provide_data(self):
        shape = (self.batch_size,) + self.data_shape
        return [DataDesc(self.data_name, shape, self.dtype.type)]

    @property
    def provide_label(self):
        if self._labels is None:
            return [DataDesc(self.label_name, (self.batch_size,), self.dtype.type)]
        shape = (self.batch_size,) + self.label_shape
        return [DataDesc(self.label_name, shape, self.dtype.type)]

    # -- position ---------------------------------------------------------------
    def reset(self):
        """Start a new epoch: from the first example, or after those the last batch wrapped to."""
        if self._overflow == 0:
            self._cursor = 0
        self._overflow = 0
        self._current = None

    def iter_next(self):
        count = self.num_examples
        if self._overflow or self._cursor >= count:
            return False
        rows = np.arange(self._cursor, self._cursor + self.batch_size)
        pad = 0
        if rows[-1] >= count:
            pad = int(rows[-1] - count + 1)
            if pad > count:
                raise MXNetError(
                    f"{OWNER}: number of input must be bigger than batch size ({count} "
                    f"examples, {self.batch_size - (count - self._cursor)} more needed to "
                    "fill the last batch)"
                )
            rows = rows % count
            self._overflow = pad
        self._cursor = int(rows[-1]) + 1
        self._current = (rows, pad)
        return True

    def next(self):
        if not self.iter_next():
            raise StopIteration
        return DataBatch(
            data=[self.getdata()],
            label=[self.getlabel()],
            pad=self.getpad(),
            index=self.getindex(),
        )

    # -- the current batch ------------------------------------------------------
    def _rows(self):
        if self._current is None:
            raise RuntimeError(f"{OWNER}: no current batch; call next() first")
        return self._current[0]

    def getdata(self):
        """The current batch's data: one CSRNDArray of shape ``(batch_size,) + data_shape``."""
        return _csr_batch(self._data, self._rows(), self.data_shape, self.dtype)

    def getlabel(self):
        """The current batch's label: dense ``(batch_size,)``, or CSR rows of ``label_shape``."""
        rows = self._rows()
        if self._labels is None:
            return array(self._data[0][rows], ctx=cpu(0), dtype=self.dtype)
        return _csr_batch(self._labels, rows, self.label_shape, self.dtype)

    def getpad(self):
        self._rows()
        return self._current[1]

    def getindex(self):
        return self._rows().copy()


def _check_settings(it, label_libsvm, num_parts, part_index, round_batch):
    if len(it.data_shape) != 1:
        raise ValueError(
            f"{OWNER}: dimension of data_shape is expected to be 1, got {it.data_shape}"
        )
    if num_parts < 1:
        raise ValueError(f"{OWNER}: number of parts should be positive, got {num_parts}")
    if not 0 <= part_index < num_parts:
        raise ValueError(
            f"{OWNER}: part_index must be in [0, {num_parts}) (part index should be "
            f"non-negative), got {part_index}"
        )
    label_size = math.prod(it.label_shape)
    if label_libsvm not in (None, "NULL") and label_size <= 1:
        raise ValueError(
            f"{OWNER}: label_shape is not expected to be (1,) when label_libsvm is set; give "
            "the shape of one label row, e.g. label_shape=(num_labels,)"
        )
    if label_libsvm in (None, "NULL") and label_size != 1:
        raise ValueError(
            f"{OWNER}: label_shape is expected to be (1,) when label_libsvm is NULL, got "
            f"{it.label_shape}; pass label_libsvm= for multi-dimensional labels"
        )
    if not round_batch:
        raise NotImplementedError(
            f"{OWNER}: sparse batch loader doesn't support round_batch == false yet "
            "(MXNet's LibSVMIter neither): leave round_batch=True"
        )


def _as_rows(parsed, shape, path):
    """The parsed file checked against ``shape``: ``(labels, indptr, indices, values)``."""
    labels, values, indices, indptr = parsed
    width = shape[0]
    if indices.size and int(indices.max()) >= width:
        k = int(np.flatnonzero(indices >= width)[0])
        line = int(np.searchsorted(indptr, k, side="right"))
        raise LibSVMFormatError(
            f"{OWNER}: {path}, example {line}: feature index {int(indices[k])} is out of range "
            f"for shape {shape} (indices are zero-based and below {width})"
        )
    return labels, indptr, indices, values


def _csr_batch(parsed, rows, shape, dtype):
    """The CSRNDArray of examples ``rows`` of a parsed file."""
    _, indptr, indices, values = parsed
    starts, ends = indptr[rows], indptr[rows + 1]
    counts = ends - starts
    batch_indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=batch_indptr[1:])
    # each kept element's position in the file: its row's start plus its rank in the row
    take = np.repeat(starts - batch_indptr[:-1], counts) + np.arange(batch_indptr[-1])
    ctx = cpu(0)
    backend = ctx.backend
    parts = (
        backend.asarray(values[take], dtype, ctx.device_id),
        (
            backend.asarray(batch_indptr, np.int64, ctx.device_id),
            backend.asarray(indices[take], np.int64, ctx.device_id),
        ),
    )
    return make_sparse("csr", parts[0], parts[1], (len(rows),) + tuple(shape), ctx)
