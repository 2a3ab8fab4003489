"""A flag of the calling thread, set within ``with`` blocks, read by the code they call.

``fit``'s training step tells the executor that one backward follows each
forward (``executor.single_backward``) and the executor group that a metric
update follows the same batch's forward (``module.copy_ahead.labels_as_loaded``)
this way: per thread, so other threads' loops are not affected, and nesting,
so an inner block leaves the flag as the outer one set it.
"""

import threading

__all__ = ["ThreadFlag"]


class ThreadFlag(threading.local):
    """False, except in the calling thread within ``with flag.within():``."""

    active = False

    def within(self):
        """A context manager setting the flag for its block (a class: entered every batch)."""
        return _Within(self)


class _Within:
    __slots__ = ("_flag", "_previous")

    def __init__(self, flag):
        self._flag = flag

    def __enter__(self):
        self._previous, self._flag.active = self._flag.active, True

    def __exit__(self, *exc):
        self._flag.active = self._previous
        return False
