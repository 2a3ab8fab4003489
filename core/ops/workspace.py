"""Scratch arrays of the convolution kernels kept from one training step to the next (NumPy).

im2col's columns, col2im's padded sums and a padded input are large (the
columns of a ResNet-18 layer at batch 16 are 115 MB) and live for one step.
NumPy gets such arrays from fresh mappings, so the kernel faults in and
zeroes every page again at each step: copying into fresh columns took twice
the time of copying into reused ones (18 against 9 ms a layer). ``take``
hands out a kept array of the same shape and dtype when nothing refers to it
any more (its reference count says so: a view held anywhere keeps it busy),
else a new one, which it keeps while the kept arrays stay under
``KEEP_BYTES``. Contents are uninitialised, as ``numpy.empty``'s. Peak
memory does not grow: a training step held these arrays together anyway;
between steps they stay held instead of being returned.
"""

import sys
import threading

import numpy as np

__all__ = ["KEEP_BYTES", "MIN_BYTES", "take"]

# arrays below this size come from malloc's own free lists already
MIN_BYTES = 1 << 22
KEEP_BYTES = 2 << 30

_lock = threading.Lock()
_kept = {}  # (shape, dtype) -> [arrays]
_held = [0]  # bytes kept


def take(shape, dtype):
    """An uninitialised C-contiguous NumPy array of ``shape`` and ``dtype``."""
    shape, dtype = tuple(shape), np.dtype(dtype)
    nbytes = dtype.itemsize
    for size in shape:
        nbytes *= size
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype)
    key = (shape, dtype)
    count = getattr(sys, "getrefcount", None)
    with _lock:
        arrays = _kept.setdefault(key, [])
        for array in arrays:
            # the list's reference, this loop's and getrefcount's argument: free
            if count is not None and count(array) <= 3:
                return array
        array = np.empty(shape, dtype)
        if _held[0] + nbytes <= KEEP_BYTES:
            arrays.append(array)
            _held[0] += nbytes
        return array


def release():
    """Forget every kept array (their memory returns once nothing else holds them)."""
    with _lock:
        _kept.clear()
        _held[0] = 0
