"""A flag of the calling thread, set within ``with`` blocks, read by the code they call.

``fit``'s training step tells the executor that one backward follows each
forward (``executor.single_backward``) and the executor group that a metric
update follows the same batch's forward (``module.copy_ahead.labels_as_loaded``)
this way: per thread, so other threads' loops are not affected, and nesting,
so an inner block leaves the flag as the outer one set it. Work that the
calling thread hands to helper threads (the executors of several cpu
contexts, ``module/context_threads.py``) takes its flags along with
``raised()`` and ``raise_all``.
"""

import threading
import weakref

__all__ = ["ThreadFlag", "raise_all", "raised"]

_FLAGS = weakref.WeakSet()  # every ThreadFlag made, for raised()


class ThreadFlag(threading.local):
    """False, except in the calling thread within ``with flag.within():``."""

    active = False

    def __new__(cls, *args, **kwargs):
        # __new__, not __init__: threading.local calls __init__ again in every thread
        flag = super().__new__(cls, *args, **kwargs)
        _FLAGS.add(flag)
        return flag

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


def raised():
    """The flags set in the calling thread now (to set them in a helper thread)."""
    return tuple(flag for flag in list(_FLAGS) if flag.active)


class raise_all:  # noqa: N801  (a context manager used as a function, as ThreadFlag.within)
    """Set ``flags`` (from ``raised()`` in another thread) in the calling thread for a block."""

    __slots__ = ("_blocks",)

    def __init__(self, flags):
        self._blocks = [flag.within() for flag in flags]

    def __enter__(self):
        for block in self._blocks:
            block.__enter__()

    def __exit__(self, *exc):
        for block in reversed(self._blocks):
            block.__exit__(*exc)
        return False
