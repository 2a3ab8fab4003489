"""The next batch's host -> device copies, started while this batch's work runs.

``fit`` fetches batch k+1 once batch k's forward, backward and update are
queued. On a device that runs asynchronously (a GPU), that batch's values can
travel while the device is still busy with batch k: the backend's
``copy_ahead`` queues the copy on a stream of its own into a spare device
buffer, and batch k+1's forward only orders a device-to-device copy after it
(see ``backends/cupy_ahead.py``). Host backends have nothing to overlap, so
a group on the CPU never starts any (``AheadCopies.supported``).

Which copies apply is decided when the forward comes: a ticket is used only
for the same batch object, the same source array and the same bound target
(a re-shape binds new targets); any other is dropped and the source copied
as before. The values are those the batch held when fit fetched it: nothing
runs between ``next(data_iter)`` and that batch's forward in fit's loop, so an
iterator refilling one host buffer gets each batch's own values.

The labels go to the device for the network, and a metric on the GPU's
outputs needs them there too. Within ``labels_as_loaded()`` (fit's training
step, score's loop: a batch's metric update follows its forward, and nothing
changes the batch in between) a GPU group hands the metric the label arrays
its forward filled, where they hold the very values given (same array
object, dtype and shape), instead of copying the labels over once more.
"""

import numpy as np

from ..backend import Backend
from ..ndarray import NDArray
from ..thread_flags import ThreadFlag
from .slicing import copy_batch_part

__all__ = ["AheadCopies", "as_loaded", "labels_as_loaded", "loaded_labels_apply"]


_LABELS = ThreadFlag()


def labels_as_loaded():
    """Within it, metric updates may read the labels the last forward put on the device.

    For loops that update a metric right after the same batch's forward
    (see the module's description). A context manager; it nests, per thread.
    """
    return _LABELS.within()


def loaded_labels_apply():
    """Whether the calling thread is within ``labels_as_loaded``."""
    return _LABELS.active


def as_loaded(labels, loaded, targets, keep):
    """``labels`` for a metric, each that the last forward loaded swapped for its bound array.

    ``loaded``: the label arrays that forward copied into ``targets`` (None:
    none noted); ``keep``: their positions in ``labels``. Only within
    ``labels_as_loaded``, for the same array objects, where the bound array
    holds their values exactly (same dtype and shape).
    """
    if loaded is None or not _LABELS.active:
        return labels
    part = list(labels)
    for source, target, i in zip(loaded, targets, keep, strict=False):
        given = part[i] if i < len(part) else None
        if (
            given is source
            and isinstance(given, NDArray)
            and given.dtype == target.dtype
            and given.shape == target.shape
        ):
            part[i] = target
    return part


class AheadCopies:
    """The copies started for one batch, each ``(source, target, ticket)``."""

    __slots__ = ("batch", "entries")

    def __init__(self, batch, entries):
        self.batch, self.entries = batch, entries

    @staticmethod
    def supported(ctx):
        """Whether ``ctx``'s backend can copy ahead (overrides ``Backend.copy_ahead``)."""
        return type(ctx.backend).copy_ahead is not Backend.copy_ahead

    @classmethod
    def start(cls, batch, parts):
        """Start the copies of ``parts``: ``(sources, targets)`` pairs of lists (NDArrays)."""
        entries = []
        for sources, targets in parts:
            for source, target in zip(sources, targets, strict=False):
                host = _host_values(source)
                if host is None:
                    continue
                ctx = target.context
                ticket = ctx.backend.copy_ahead(target._data, host, ctx.device_id)
                if ticket is not None:
                    entries.append((source, target, ticket))
        return cls(batch, entries) if entries else None

    def load(self, sources, targets):
        """Fill ``targets`` from ``sources``: through the started copies where they apply."""
        for source, target in zip(sources, targets, strict=False):
            ticket = self._take(source, target)
            if ticket is None:
                copy_batch_part([source], [target])
            else:
                ticket.finish()

    def drop(self):
        """Forget the copies not used (their spare buffers become free)."""
        for _, _, ticket in self.entries:
            ticket.drop()
        self.entries = []

    def _take(self, source, target):
        for index, (started_from, started_for, ticket) in enumerate(self.entries):
            if started_for is target:
                del self.entries[index]
                if started_from is source:
                    return ticket
                ticket.drop()
                return None
        return None


def _host_values(source):
    """The host array behind ``source`` (an NDArray on a host context or a NumPy array)."""
    if isinstance(source, NDArray):
        return source._data if isinstance(source._data, np.ndarray) else None
    return source if isinstance(source, np.ndarray) else None
