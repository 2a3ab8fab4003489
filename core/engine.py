"""``mx.engine``: MXNet's operator-bulking controls, kept for scripts that set them.

MXNet runs operators through an asynchronous engine that can bulk several
into one scheduled unit. rebind has no engine: executors run their plan
straight through. ``set_bulk_size`` and ``bulk`` therefore only remember the
value (so code that saves and restores it behaves as before); they change
nothing about how rebind computes.
"""

import contextlib

__all__ = ["bulk", "set_bulk_size"]

_SETTINGS = {"bulk_size": 0}  # MXNet 1.9.1 reports 0 before anything set it


def set_bulk_size(size):
    """Remember ``size`` as the bulk size and return the previous one."""
    previous, _SETTINGS["bulk_size"] = _SETTINGS["bulk_size"], int(size)
    return previous


@contextlib.contextmanager
def bulk(size):
    """Within the block the bulk size is ``size``; the previous one comes back after."""
    previous = set_bulk_size(size)
    try:
        yield
    finally:
        set_bulk_size(previous)
