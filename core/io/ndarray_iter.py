"""NDArrayIter: batches cut from arrays held in memory, with MXNet 1.9's last-batch rules.

The iterator walks a cursor over the examples in steps of ``batch_size``.
What happens at the end of the data is ``last_batch_handle``'s business:

- ``'pad'``: the last batch is filled up with examples from the start of the
  data (wrapping as often as needed) and reports how many through ``pad``.
- ``'discard'``: an incomplete last batch is dropped.
- ``'roll_over'``: an incomplete last batch is kept back and becomes the head
  of the first batch of the next epoch. That batch reports the number of
  carried examples as its ``pad`` (MXNet does so although they are real data).
"""

import numpy as np

from ..context import current_context
from ..errors import FormatError, ShapeError
from ..ndarray import NDArray, array, concatenate
from .base import DataBatch, DataDesc, DataIter

__all__ = ["NDArrayIter"]

LAST_BATCH_HANDLES = ("pad", "discard", "roll_over")


def _as_ndarray(name, value, keep_host=False):
    if isinstance(value, NDArray):
        return value
    if keep_host and isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return value
    try:
        # mx.nd.array's rule: float32 on the current context, whatever the source dtype
        return array(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"NDArrayIter: input {name!r} must be an NDArray, a numpy.ndarray or array-like, "
            f"got {type(value).__name__}"
        ) from exc


def named_inputs(inputs, allow_empty, default_name, keep_host=False):
    """``[(name, NDArray), ...]`` from an array, a list of arrays or a dict, sorted by name.

    One array is named ``default_name``; the i-th array of a list of several is
    ``_<i>_<default_name>``. The pairs are sorted by name as MXNet sorts them,
    so more than ten list inputs come out as ``_0_, _10_, _11_, _1_, ...``.
    With ``keep_host``, NumPy arrays stay as they are (the caller copies them).
    """
    if inputs is None:
        if not allow_empty:
            raise ValueError("NDArrayIter: data must be given (an array, a list or a dict)")
        inputs = []
    if not isinstance(inputs, (list, tuple, dict)):
        inputs = [inputs]
    if isinstance(inputs, (list, tuple)):
        if not inputs and not allow_empty:
            raise ValueError("NDArrayIter: data is an empty list; give at least one array")
        if len(inputs) == 1:
            inputs = {default_name: inputs[0]}
        else:
            inputs = {f"_{i}_{default_name}": value for i, value in enumerate(inputs)}
    return sorted((name, _as_ndarray(name, value, keep_host)) for name, value in inputs.items())


def _take_rows(source, rows):
    """The rows ``rows`` (host integer array) of ``source``, as a new NDArray."""
    ctx = source.context
    index = ctx.backend.asarray(rows, np.int64, ctx.device_id)
    if getattr(source, "stype", "default") == "csr":
        return _csr_rows(source, index)
    return NDArray(source.data[index], ctx)


def _csr_rows(source, index):
    """The rows ``index`` (backend int64 array) of a CSRNDArray, as a new CSRNDArray."""
    from ..ndarray.sparse_array import make_sparse

    ctx, xp = source.context, source.context.backend.xp
    indptr, indices = source._aux
    starts, counts = indptr[index], indptr[index + 1] - indptr[index]
    new_indptr = xp.zeros(index.shape[0] + 1, dtype=np.int64)
    xp.cumsum(counts, out=new_indptr[1:])
    total = int(new_indptr[-1])
    # position of each kept element in the source: its row's start plus its rank in the row
    take = xp.repeat(starts - new_indptr[:-1], counts) + xp.arange(total, dtype=np.int64)
    parts = (source._values[take], (new_indptr, indices[take]))
    return make_sparse("csr", *parts, (int(index.shape[0]), source.shape[1]), ctx)


def _check_csr_handling(inputs, last_batch_handle):
    """MXNet cuts CSR inputs into whole batches only: 'discard' is the one handle allowed."""
    if last_batch_handle == "discard":
        return
    sparse = [name for name, value in inputs if getattr(value, "stype", "default") == "csr"]
    if sparse:
        raise NotImplementedError(
            f"`NDArrayIter` only supports ``CSRNDArray`` with `last_batch_handle` set to "
            f"`discard` (inputs {sparse} are CSR, last_batch_handle={last_batch_handle!r}); "
            "pass last_batch_handle='discard'"
        )


class NDArrayIter(DataIter):
    """Iterate over NDArrays or NumPy arrays (one, a list, or a dict of them) in batches.

    Args:
        data: the inputs; a dict names them, a list names them ``_0_data``,
            ``_1_data``, ..., one array is called ``data_name``.
        label: the labels, named the same way after ``label_name``; optional.
        batch_size: examples per batch.
        shuffle: reorder the examples at construction and at every reset
            exactly as MXNet does: ``np.random.shuffle`` (NumPy's global
            generator, so ``np.random.seed`` reproduces MXNet's batches) of the
            kept index array ``idx``, whose rows of the current (already
            reordered) data become the new order. As in MXNet, shuffled
            inputs are stored as float32 whatever their dtype was.
        last_batch_handle: 'pad', 'discard' or 'roll_over' (see the module).
        data_name, label_name: the names of single inputs.
        layout: the layout the DataDescs report ('NCHW' as in MXNet); its
            batch axis ('N') must be the first (others raise NotImplementedError).
        num_parts, part_index: keep only part ``part_index`` of ``num_parts``
            equal, contiguous parts of the examples (rebind; MXNet's NDArrayIter
            has no such arguments, its MNISTIter and CSVIter do). For
            distributed training pass ``num_parts=kv.num_workers,
            part_index=kv.rank``. The last ``len(data) % num_parts`` examples
            are left out, so every part has as many batches per epoch, which
            synchronous workers need.

    NDArrays stay on their context; anything else becomes a float32 NDArray on
    the current context (``mx.nd.array``'s rule).
    """

    def __init__(
        self,
        data,
        label=None,
        batch_size=1,
        shuffle=False,
        last_batch_handle="pad",
        data_name="data",
        label_name="softmax_label",
        layout="NCHW",
        num_parts=1,
        part_index=0,
    ):
        super().__init__(batch_size)
        if DataDesc.get_batch_axis(layout) != 0:
            raise NotImplementedError(
                f"NDArrayIter: layout {layout!r} puts the batch axis at "
                f"{DataDesc.get_batch_axis(layout)}; rebind cuts batches along axis 0 only "
                "(MXNet counts the examples on axis 0 whatever the layout, and fails for "
                "1-D labels); move the batch axis first, e.g. layout='NC'"
            )
        self.layout = layout
        if last_batch_handle not in LAST_BATCH_HANDLES:
            raise ValueError(
                f"NDArrayIter: last_batch_handle must be one of {LAST_BATCH_HANDLES}, "
                f"got {last_batch_handle!r}"
            )
        if int(batch_size) < 1:
            raise ValueError(f"NDArrayIter: batch_size must be >= 1, got {batch_size}")
        self.batch_size = int(batch_size)
        # shuffling copies every input at once (reset below): a NumPy input is read
        # from there, not first copied into an NDArray the shuffle then drops, which
        # would hold the data set three times at once (yours, that copy, the shuffled)
        self.data = named_inputs(data, False, data_name, keep_host=shuffle)
        self.label = named_inputs(label, True, label_name, keep_host=shuffle)
        _check_csr_handling(self.data + self.label, last_batch_handle)
        self.num_data = _common_length(self.data + self.label)
        if (num_parts, part_index) != (1, 0):
            rows = _part_rows(self.num_data, num_parts, part_index)
            self.data = [(name, value[rows]) for name, value in self.data]
            self.label = [(name, value[rows]) for name, value in self.label]
            self.num_data = rows.stop - rows.start
        self.idx = np.arange(self.num_data)
        # the original position of each example as the data is ordered now
        self.rows = np.arange(self.num_data)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.cursor = -self.batch_size
        # the incomplete last batch ('roll_over'): (data list, label list)
        self._carry = None
        self.reset()

    @property
    def data_list(self):
        """Every input array, data first, then labels."""
        return [array for _, array in self.data] + [array for _, array in self.label]

    @property
    def num_source(self):
        return len(self.data) + len(self.label)

    @property
    def provide_data(self):
        return self._describe(self.data)

    @property
    def provide_label(self):
        return self._describe(self.label)

    def _describe(self, inputs):
        return [
            DataDesc(name, (self.batch_size,) + tuple(value.shape[1:]), value.dtype, self.layout)
            for name, value in inputs
        ]

    # -- position -------------------------------------------------------------
    def reset(self):
        """Start a new epoch; under 'roll_over' an incomplete last batch is carried into it."""
        if self.shuffle:
            self._shuffle_data()
        unfinished = self.num_data - self.batch_size < self.cursor < self.num_data
        if self.last_batch_handle == "roll_over" and unfinished:
            # the carried examples fill the first -cursor slots of the next batch
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def hard_reset(self):
        """Start a new epoch from the first example, dropping any rolled-over examples."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._carry = None

    def iter_next(self):
        self.cursor += self.batch_size
        if self.cursor >= 0:
            self._carry = None  # the roll-over batch, if any, is behind us
        return self.cursor < self.num_data

    def next(self):
        if not self.iter_next():
            raise StopIteration
        data, label = self.getdata(), self.getlabel()
        if data[0].shape[0] != self.batch_size:
            # an incomplete batch ends the epoch; 'roll_over' picks it up after reset()
            self._carry = (data, label)
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    # -- the current batch ------------------------------------------------------
    def getdata(self):
        return self._batch(self.data, 0)

    def getlabel(self):
        return self._batch(self.label, 1)

    def getpad(self):
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self._in_rollover_batch():
            return -self.cursor
        return 0

    def _in_rollover_batch(self):
        return self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0

    def _batch(self, inputs, part):
        if self.cursor >= self.num_data:
            raise RuntimeError(
                "NDArrayIter: the epoch is over; call reset() before reading batches"
            )
        if self._in_rollover_batch():
            if self._carry is None:
                raise RuntimeError(
                    "NDArrayIter: no rolled-over examples to start this epoch with; "
                    "call hard_reset() to start from the first example"
                )
            head = self._carry[part]
            tail = [value[: self.cursor + self.batch_size] for _, value in inputs]
            return [concatenate([h, t]) for h, t in zip(head, tail, strict=True)]
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            rows = (self.cursor + np.arange(self.batch_size)) % self.num_data
            return [_take_rows(value, rows) for _, value in inputs]
        end = min(self.cursor + self.batch_size, self.num_data)
        return [value[self.cursor : end] for _, value in inputs]

    # -- the order, for resume points (rebind) ---------------------------------
    def order_state(self):
        """The example order as JSON-ready lists: ``rows`` (original positions) and ``idx``."""
        return {"rows": [int(i) for i in self.rows], "idx": [int(i) for i in self.idx]}

    def restore_order_state(self, state):
        """Put the examples back in the order ``order_state`` gave (same data, any order now)."""
        rows = np.asarray(state["rows"], dtype=np.int64)
        if sorted(rows.tolist()) != list(range(self.num_data)):
            raise FormatError(
                f"NDArrayIter: the saved example order does not fit this data "
                f"({rows.size} examples saved, {self.num_data} here)"
            )
        position = np.empty_like(self.rows)
        position[self.rows] = np.arange(self.num_data)
        take = position[rows]
        self.data = [(name, _take_rows(value, take)) for name, value in self.data]
        self.label = [(name, _take_rows(value, take)) for name, value in self.label]
        self.rows = rows
        self.idx = np.asarray(state.get("idx", range(self.num_data)), dtype=self.idx.dtype)

    def _shuffle_data(self):
        # MXNet's draw, exactly: shuffle the kept index array in place with NumPy's
        # global generator, then take those rows of the data as it is now (already
        # reordered by the previous shuffles), so np.random.seed gives MXNet's order
        np.random.shuffle(self.idx)
        self.rows = self.rows[self.idx]
        self.data = [(name, _shuffled(value, self.idx)) for name, value in self.data]
        self.label = [(name, _shuffled(value, self.idx)) for name, value in self.label]


def _shuffled(source, order):
    # MXNet rebuilds shuffled inputs with mx.nd.array, which makes them float32
    if isinstance(source, np.ndarray):  # a NumPy input, not copied yet (see __init__)
        return _host_rows(source, order)
    return _take_rows(source, order).astype(np.float32, copy=False)


def _host_rows(source, order):
    """The rows ``order`` of the NumPy array ``source``, as a float32 NDArray (current context)."""
    rows = source.take(order, axis=0)
    ctx = current_context()
    if rows.dtype == np.float32 and ctx.backend.owns(rows):
        return NDArray(rows, ctx)  # already a new array of its own: no second copy
    return array(rows, ctx=ctx)


def _part_rows(count, num_parts, part_index):
    """The slice of rows of part ``part_index`` out of ``num_parts`` equal parts."""
    if int(num_parts) != num_parts or num_parts < 1:
        raise ValueError(f"NDArrayIter: num_parts must be an integer >= 1, got {num_parts!r}")
    if int(part_index) != part_index or not 0 <= part_index < num_parts:
        raise ValueError(
            f"NDArrayIter: part_index must be an integer in [0, {num_parts}), got {part_index!r}"
        )
    size = count // int(num_parts)
    if size == 0:
        raise ShapeError(
            f"NDArrayIter: {count} examples cannot be split into {num_parts} non-empty parts"
        )
    start = int(part_index) * size
    return slice(start, start + size)


def _common_length(inputs):
    lengths = {name: value.shape[0] if value.ndim else 0 for name, value in inputs}
    if len(set(lengths.values())) > 1:
        raise ShapeError(
            f"NDArrayIter: every input needs the same number of examples (first axis), "
            f"got {lengths}"
        )
    count = next(iter(lengths.values()))
    if count == 0:
        raise ShapeError(f"NDArrayIter: the inputs hold no examples: {lengths}")
    return count
