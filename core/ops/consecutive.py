"""Arrays lying end to end in one buffer, stacked without CuPy's concatenation.

The time steps of a fused LSTM layer (``rebind.executor.fused_layer``) are
consecutive blocks of one buffer: its outputs, its gate gradients. Stacking
35 of them again cost CuPy a concatenation of 35 arrays (about 125 us of host
time on an H200 host). ``stacked`` reads such a run as a view of its memory,
for callers that only read it; ``stack`` copies that view into a new array
(one copy, as ``xp.stack`` makes). Any other arrays are stacked by ``xp.stack``.
"""

import numpy as np

__all__ = ["stack", "stacked"]


def stacked(xp, arrays, axis=0):
    """``xp.stack(arrays, axis)``, read-only: a view where the arrays lie end to end.

    Where every array is a C-contiguous block of the same shape and dtype
    directly after the one before, in one allocation, the stack is that
    memory itself (moved to ``axis``). The result may share memory with
    ``arrays``: callers only read it.
    """
    view = _end_to_end(arrays)
    if view is None:
        return xp.stack(arrays, axis=axis)
    return view if axis == 0 else xp.moveaxis(view, 0, axis)


def _end_to_end(arrays):
    """The (count, *shape) array over ``arrays``' memory, or None where they are not one run."""
    first = arrays[0] if arrays else None
    if len(arrays) < 2 or not first.flags.c_contiguous or first.nbytes == 0:
        return None
    kind, shape, dtype, size = type(first), first.shape, first.dtype, first.nbytes
    on_host = kind is np.ndarray
    owner = first.base if on_host else first.data.mem
    start = _address(first, on_host)
    for t, array in enumerate(arrays):
        if (
            type(array) is not kind
            or array.shape != shape
            or array.dtype != dtype
            or not array.flags.c_contiguous
            or (array.base if on_host else array.data.mem) is not owner
            or _address(array, on_host) != start + t * size
        ):
            return None
    count = len(arrays)
    if on_host:
        if not isinstance(owner, np.ndarray) or not owner.flags.c_contiguous:
            return None
        lowest = _address(owner, True)
        if start < lowest or start + count * size > lowest + owner.nbytes:
            return None
        strides = (size, *first.strides)
        return np.lib.stride_tricks.as_strided(first, (count, *shape), strides, writeable=False)
    if start + count * size > owner.ptr + owner.size:
        return None
    return kind((count, *shape), dtype=dtype, memptr=first.data)


def _address(array, on_host):
    return array.__array_interface__["data"][0] if on_host else array.data.ptr


def stack(xp, arrays, axis=0):
    """``xp.stack(arrays, axis)``: a new array, copied in one pass from a run's view."""
    view = _end_to_end(arrays)
    if view is None:
        return xp.stack(arrays, axis=axis)
    return (view if axis == 0 else xp.moveaxis(view, 0, axis)).copy()
