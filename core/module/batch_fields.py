"""Reading what the training loops need from user objects, as leniently as MXNet does.

MXNet's ``fit``/``score``/``predict`` accept any batch with ``data`` and ``label``
and read its other fields only when present; callbacks may be one callable or a
list. A batch here is a ``DataBatch`` or any object with a ``data`` list (a
user's two-field ``SimpleBatch``), and the readers below give each optional
field's neutral value when the object lacks it. Every module reads batches and
iterators through these helpers, never through the attributes themselves.
"""

from types import SimpleNamespace

__all__ = [
    "batch_labels",
    "bucket_key_of",
    "call_all",
    "data_of",
    "index_of",
    "is_data_iterator",
    "iterate_batches",
    "iterator_descs",
    "label_of",
    "pad_of",
    "provide_data_of",
    "provide_label_of",
    "relay_batch",
    "reset_iterator",
]


def _as_list(callbacks):
    if callbacks is None:
        return []
    return list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]


def call_all(callbacks, *args):
    """Call one callback, or each of a list of them, with ``args``."""
    for callback in _as_list(callbacks):
        callback(*args)


def data_of(batch):
    """The batch's data arrays; a batch without ``data`` is an error that says so."""
    try:
        return batch.data
    except AttributeError:
        raise TypeError(
            f"a data batch needs a 'data' attribute (a list of NDArrays), but this "
            f"{type(batch).__name__} has none; yield mx.io.DataBatch(data=[...], label=[...])"
        ) from None


def label_of(batch):
    """The batch's label arrays, or None when it has no ``label`` (prediction)."""
    return getattr(batch, "label", None)


def batch_labels(batch):
    """``label_of`` for one batch, or the list of them for a list of per-device batches."""
    if isinstance(batch, list):
        return [label_of(part) for part in batch]
    return label_of(batch)


def pad_of(batch):
    """The batch's padding (examples to ignore at its end); 0 when it has none."""
    return getattr(batch, "pad", None) or 0


def index_of(batch):
    """The example indices of the batch, or None when it does not say."""
    return getattr(batch, "index", None)


def bucket_key_of(batch, missing=None):
    """The batch's ``bucket_key`` (None where it says None); ``missing`` without the field."""
    return getattr(batch, "bucket_key", missing)


def provide_data_of(batch):
    """The batch's own data descriptions, or None when it has none."""
    return getattr(batch, "provide_data", None)


def provide_label_of(batch):
    """The batch's own label descriptions, or None when it has none."""
    return getattr(batch, "provide_label", None)


def iterator_descs(data_iter):
    """``(provide_data, provide_label)`` of an iterator; a missing provide_label is None.

    ``provide_data`` is required (binding needs it); an iterator without
    labels (prediction) may leave ``provide_label`` out.
    """
    try:
        data_descs = data_iter.provide_data
    except AttributeError:
        raise TypeError(
            f"{type(data_iter).__name__} does not describe its batches: give it a "
            "provide_data attribute (a list of DataDesc or (name, shape) pairs)"
        ) from None
    return data_descs, getattr(data_iter, "provide_label", None)


def iterate_batches(data_iter):
    """Iterate a data iterator's batches, as MXNet's loops do.

    Objects with ``__iter__`` are iterated as Python iterables; an MXNet-style
    iterator that only implements ``next()`` is called until StopIteration.
    """
    if hasattr(data_iter, "__iter__"):
        return iter(data_iter)
    if callable(getattr(data_iter, "next", None)):
        return _calling_next(data_iter)
    raise TypeError(
        f"{type(data_iter).__name__} is not a data iterator: it needs __iter__/__next__ "
        "or next() (subclass mx.io.DataIter)"
    )


def _calling_next(data_iter):
    while True:
        try:
            batch = data_iter.next()
        except StopIteration:
            return
        yield batch


def is_data_iterator(value):
    """Whether ``value`` can be read batch by batch (``__iter__`` or ``next()``)."""
    return hasattr(value, "__iter__") or callable(getattr(value, "next", None))


def reset_iterator(data_iter):
    """Call the iterator's ``reset()``; one without it (a plain Python iterator) is left alone."""
    reset = getattr(data_iter, "reset", None)
    if callable(reset):
        reset()


_FIELDS = ("data", "label", "pad", "index", "bucket_key", "provide_data", "provide_label")


def relay_batch(batch):
    """A shallow, writable stand-in for ``batch`` with the batch fields it has."""
    fields = {name: getattr(batch, name) for name in _FIELDS if hasattr(batch, name)}
    if "data" not in fields:
        data_of(batch)  # raises, naming what is missing
    return SimpleNamespace(**fields)
