"""Random arrays drawn from each backend's own streams (``mx.nd.random``)."""

import numbers

import numpy as np

from ..context import current_context  # noqa: F401 - MXNet's mx.nd.random has it
from .creation import DEFAULT_DTYPE, resolve_context
from .ndarray import NDArray

__all__ = ["uniform", "normal", "randint", "shuffle"]


def _sample_shape(shape, out=None):
    if shape is None:
        # as in MXNet, an ``out=`` array without ``shape`` is filled entirely
        return (1,) if out is None else out.shape
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def _scalar_params(what, *params):
    for value in params:
        if isinstance(value, NDArray):
            raise NotImplementedError(
                f"{what} with NDArray parameters (one distribution per element) is not "
                "implemented in rebind; pass scalars"
            )


def _finish(values, ctx, out):
    result = NDArray(values, ctx)
    if out is not None:
        out[:] = result
        return out
    return result


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from U[low, high)."""
    _scalar_params("uniform", low, high)
    ctx = resolve_context(ctx if out is None else out.context)
    dtype = np.dtype(dtype or (DEFAULT_DTYPE if out is None else out.dtype))
    values = ctx.backend.uniform(low, high, _sample_shape(shape, out), dtype, ctx.device_id)
    return _finish(values, ctx, out)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale**2)."""
    _scalar_params("normal", loc, scale)
    ctx = resolve_context(ctx if out is None else out.context)
    dtype = np.dtype(dtype or (DEFAULT_DTYPE if out is None else out.dtype))
    values = ctx.backend.normal(loc, scale, _sample_shape(shape, out), dtype, ctx.device_id)
    return _finish(values, ctx, out)


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Integers drawn uniformly from [low, high); int32 unless ``dtype`` says otherwise."""
    _scalar_params("randint", low, high)
    if high <= low:
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    ctx = resolve_context(ctx if out is None else out.context)
    dtype = np.dtype(dtype or (np.int32 if out is None else out.dtype))
    values = ctx.backend.randint(low, high, _sample_shape(shape, out), dtype, ctx.device_id)
    return _finish(values, ctx, out)


def shuffle(data, **kwargs):
    """A copy of ``data`` with its first axis randomly permuted."""
    ctx = data.context
    order = ctx.backend.permutation(data.shape[0], ctx.device_id)
    return NDArray(data.data[order], ctx)
