"""The data-iterator contract of ``mx.io``: DataDesc, DataBatch, DataIter, ResizeIter.

A ``DataIter`` hands out ``DataBatch`` objects one at a time and describes what
they hold through ``provide_data`` / ``provide_label``, lists of ``DataDesc``.
Modules bind their inputs from those descriptions, so they must match the
batches. The concrete iterators live beside this file: ``ndarray_iter``
(in-memory arrays), ``files`` (CSV and MNIST files) and ``prefetch``
(a background thread in front of other iterators).
"""

from collections import namedtuple

import numpy as np

__all__ = [
    "DataDesc",
    "DataBatch",
    "DataIter",
    "HeldBatchIter",
    "ResizeIter",
    "as_desc",
    "batch_size_of",
    "next_batch",
]


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """The name, shape, dtype and layout of one input of a network.

    As in MXNet it is a ``(name, shape)`` tuple, so ``DataDesc('data', (2, 3))
    == ('data', (2, 3))`` and code written for plain pairs keeps working;
    ``dtype`` and ``layout`` ride along as attributes. Both are kept exactly
    as given (MXNet prints a NumPy type as ``<class 'numpy.float32'>`` and a
    string as it is).
    """

    def __new__(cls, name, shape, dtype=np.float32, layout="NCHW"):
        desc = super().__new__(cls, name, shape)
        desc.dtype = dtype
        desc.layout = layout
        return desc

    def __repr__(self):
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout):
        """The axis of ``layout`` that holds the batch: where 'N' is (0 when layout is None).

        A layout without 'N' gives -1, as in MXNet.
        """
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes, types):
        """DataDescs from ``[(name, shape), ...]`` and, optionally, ``[(name, dtype), ...]``.

        Without ``types`` every dtype is float32. With them, each name in
        ``shapes`` must have an entry in ``types``.
        """
        if types is None:
            return [DataDesc(name, shape) for name, shape in shapes]
        dtypes = dict(types)
        missing = [name for name, _ in shapes if name not in dtypes]
        if missing:
            raise KeyError(
                f"DataDesc.get_list: no dtype for {missing}; types names {sorted(dtypes)}"
            )
        return [DataDesc(name, shape, dtypes[name]) for name, shape in shapes]


class DataBatch:
    """One batch: lists of data and label arrays plus what a module needs to use them.

    Args:
        data: list of NDArrays, one per data input.
        label: list of NDArrays, one per label input (or None).
        pad: how many trailing examples are filler, to be ignored in results.
        index: the example indices of the batch, where the iterator knows them.
        bucket_key: the bucket this batch belongs to (BucketingModule).
        provide_data, provide_label: DataDescs of this batch when they differ
            from the iterator's (variable-shape batches).
    """

    def __init__(
        self,
        data,
        label=None,
        pad=None,
        index=None,
        bucket_key=None,
        provide_data=None,
        provide_label=None,
    ):
        _check_array_list("data", data)
        _check_array_list("label", label)
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [array.shape for array in self.data]
        label_shapes = [array.shape for array in self.label] if self.label else None
        return f"{type(self).__name__}: data shapes: {data_shapes} label shapes: {label_shapes}"

    __repr__ = __str__


def _check_array_list(what, arrays):
    if arrays is not None and not isinstance(arrays, (list, tuple)):
        raise TypeError(
            f"DataBatch: {what} must be a list of NDArrays (or None), "
            f"got {type(arrays).__name__}; wrap a single array as [array]"
        )


class DataIter:
    """Base class of data iterators: Python iteration over DataBatches, and ``reset``.

    A subclass either overrides ``next`` or implements ``iter_next`` (advance,
    True while a batch is there) with ``getdata`` / ``getlabel`` / ``getpad``
    / ``getindex`` (read the current batch); the default ``next`` puts those
    together. It also describes its batches through ``provide_data`` and
    ``provide_label`` (lists of DataDesc), as plain attributes or properties.
    """

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()

    def reset(self):
        """Go back to the first batch; iterators that cannot restart do nothing."""

    def next(self):
        """The next DataBatch; StopIteration at the end of the epoch."""
        if not self.iter_next():
            raise StopIteration
        return DataBatch(
            data=self.getdata(),
            label=self.getlabel(),
            pad=self.getpad(),
            index=self.getindex(),
        )

    def iter_next(self):
        """Move to the next batch; False when the epoch is over."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement iter_next() (with getdata()) or next()"
        )

    def getdata(self):
        """The data arrays of the current batch."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement getdata() to use the default next()"
        )

    def getlabel(self):
        """The label arrays of the current batch (None for an iterator without labels)."""
        return None

    def getindex(self):
        """The example indices of the current batch, or None where unknown."""
        return None

    def getpad(self):
        """How many examples at the end of the current batch are filler."""
        return 0

    # provide_data / provide_label: MXNet's base class does not define them and
    # subclasses often assign them in __init__, so these accept assignment and
    # behave as missing (AttributeError, hasattr() False) until set.
    @property
    def provide_data(self):
        """DataDescs of the data inputs (set by subclasses)."""
        return _described(self, "_provide_data", "provide_data")

    @provide_data.setter
    def provide_data(self, descs):
        self._provide_data = descs

    @property
    def provide_label(self):
        """DataDescs of the label inputs (set by subclasses)."""
        return _described(self, "_provide_label", "provide_label")

    @provide_label.setter
    def provide_label(self, descs):
        self._provide_label = descs


def _described(iterator, slot, what):
    try:
        return iterator.__dict__[slot]
    except KeyError:
        raise AttributeError(
            f"{type(iterator).__name__} does not describe its batches: set self.{what} "
            f"(a list of DataDesc) or define a {what} property"
        ) from None


class HeldBatchIter(DataIter):
    """A DataIter whose ``iter_next`` stores a whole batch in ``current_batch``.

    ``next`` returns that batch itself (so ``bucket_key`` and per-batch shapes
    survive) and the accessors read from it.
    """

    current_batch = None

    def next(self):
        if not self.iter_next():
            raise StopIteration
        return self.current_batch

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return getattr(self.current_batch, "index", None)

    def getpad(self):
        return getattr(self.current_batch, "pad", None) or 0


class ResizeIter(HeldBatchIter):
    """Make an iterator's epoch exactly ``size`` batches long.

    Shorter underlying epochs are continued after a reset of the wrapped
    iterator; longer ones are cut. With ``reset_internal=False`` a reset of
    this iterator leaves the wrapped one where it is, so consecutive epochs
    walk through the data without restarting it.
    """

    def __init__(self, data_iter, size, reset_internal=True):
        super().__init__(batch_size_of(data_iter))
        if size < 0:
            raise ValueError(f"ResizeIter: size must be >= 0, got {size}")
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = getattr(data_iter, "provide_label", None)
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        if self.cur == self.size:
            return False
        try:
            self.current_batch = next_batch(self.data_iter)
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = next_batch(self.data_iter)
        self.cur += 1
        return True


def next_batch(data_iter):
    """The iterator's next batch, whichever of ``__next__`` or ``next()`` it implements.

    MXNet's ``DataIter.__next__`` calls ``next()``, so user iterators may
    implement either (or only ``__iter__``/``__next__``); StopIteration ends
    the epoch.
    """
    if hasattr(type(data_iter), "__next__"):
        return next(data_iter)
    read = getattr(data_iter, "next", None)
    if not callable(read):
        raise TypeError(
            f"{type(data_iter).__name__} is not a data iterator: implement next() or "
            "__next__ (subclass mx.io.DataIter)"
        )
    return read()


def batch_size_of(data_iter):
    """The iterator's ``batch_size``; else the leading size of its first data input; else 0.

    User iterators that never call ``DataIter.__init__`` have no
    ``batch_size``, and their ``provide_data`` may hold ``(name, shape)`` pairs.
    """
    size = getattr(data_iter, "batch_size", None)
    if size is not None:
        return size
    descs = getattr(data_iter, "provide_data", None)
    if descs:
        shape = as_desc(descs[0]).shape
        if shape:
            return shape[0]
    return 0


def as_desc(desc):
    """A DataDesc from a DataDesc or a ``(name, shape)`` pair (float32, NCHW)."""
    if isinstance(desc, DataDesc):
        return desc
    name, shape = desc[0], desc[1]
    return DataDesc(name, tuple(shape))
