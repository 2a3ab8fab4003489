"""The CPU thread policy: how many threads rebind's compute uses."""

import os

__all__ = ["compute_threads"]


def compute_threads():
    """The number of threads CPU kernels may use now (at least 1)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)
