"""Moving backend arrays between contexts (for ``group2ctx`` model parallelism)."""

from ..ndarray.ndarray import NDArray, _move

__all__ = ["move_data", "to_context"]


def move_data(data, source, target):
    """``data`` (an array on context ``source``) as an array on ``target``."""
    if source == target:
        return data
    return _move(NDArray(data, source), target)


def to_context(value, ctx):
    """An NDArray or array-like ``value`` as a backend array on ``ctx``."""
    if isinstance(value, NDArray):
        return _move(value, ctx)
    backend = ctx.backend
    if backend.owns(value):
        return value
    import numpy as np

    host = np.asarray(value)
    return backend.asarray(host, host.dtype, ctx.device_id)
