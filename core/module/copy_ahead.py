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
"""

import numpy as np

from ..backend import Backend
from ..ndarray import NDArray
from .slicing import copy_batch_part

__all__ = ["AheadCopies"]


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
