"""Creating NDArrays: from data, filled, ranges, and joining arrays."""

import numbers

import numpy as np

from ..context import Context, current_context
from ..errors import ContextMismatchError, ShapeError
from .ndarray import NDArray, _host_values, _move

__all__ = [
    "array",
    "empty",
    "zeros",
    "ones",
    "full",
    "arange",
    "zeros_like",
    "ones_like",
    "concatenate",
    "waitall",
]

DEFAULT_DTYPE = np.float32


def resolve_context(ctx):
    """``ctx`` as a Context; None means the current one."""
    return current_context() if ctx is None else Context(ctx)


def _shape(shape):
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def wrap(data, ctx):
    """An NDArray around a backend array that already lives on ``ctx``."""
    return NDArray(data, ctx)


def array(source_array, ctx=None, dtype=None):
    """A new array holding a copy of ``source_array`` (NDArray, NumPy array, list, scalar).

    As in MXNet, the dtype defaults to the source's for an NDArray and to
    float32 for everything else, NumPy arrays included.
    """
    if _is_sparse_source(source_array):
        from .sparse_create import array as sparse_array

        return sparse_array(source_array, ctx=ctx, dtype=dtype)
    ctx = resolve_context(ctx)
    backend = ctx.backend
    if isinstance(source_array, NDArray):
        dtype = source_array.dtype if dtype is None else dtype
        values = _move(source_array, ctx)
    else:
        values = source_array if backend.owns(source_array) else _host_values(source_array)
        dtype = DEFAULT_DTYPE if dtype is None else dtype
    return NDArray(backend.asarray(values, np.dtype(dtype), ctx.device_id), ctx)


def _is_sparse_source(source):
    """A sparse NDArray or a SciPy sparse matrix: ``array`` keeps it sparse, as MXNet does."""
    if isinstance(source, NDArray):
        return source.stype != "default"
    return type(source).__module__.startswith("scipy.sparse")


def _sparse_call(function, stype, shape, ctx, dtype, kwargs):
    """``mx.nd.sparse.<function>`` for a 'csr' or 'row_sparse' ``stype``."""
    from . import sparse_create

    if kwargs:
        raise TypeError(f"{function}: unexpected arguments {sorted(kwargs)}")
    return getattr(sparse_create, function)(stype, shape, ctx=ctx, dtype=dtype)


def empty(shape, ctx=None, dtype=None, **kwargs):
    """An uninitialised array (a sparse one, all zeros, with ``stype='csr'|'row_sparse'``)."""
    stype = kwargs.pop("stype", None)
    if stype not in (None, "default"):
        return _sparse_call("empty", stype, shape, ctx, dtype, kwargs)
    _dense_only(kwargs)
    ctx = resolve_context(ctx)
    return NDArray(
        ctx.backend.empty(_shape(shape), np.dtype(dtype or DEFAULT_DTYPE), ctx.device_id), ctx
    )


def zeros(shape, ctx=None, dtype=None, out=None, **kwargs):
    """An array of zeros, of storage ``stype`` ('default', 'csr' or 'row_sparse').

    With ``out``, as in MXNet, that array is filled and returned instead.
    """
    stype = kwargs.pop("stype", None)
    if stype not in (None, "default") and out is None:
        return _sparse_call("zeros", stype, shape, ctx, dtype, kwargs)
    _dense_only(kwargs)
    if out is not None:
        return _filled(out, shape, 0)
    ctx = resolve_context(ctx)
    return NDArray(
        ctx.backend.zeros(_shape(shape), np.dtype(dtype or DEFAULT_DTYPE), ctx.device_id), ctx
    )


def ones(shape, ctx=None, dtype=None, out=None, **kwargs):
    """An array of ones (or ``out``, filled and returned)."""
    if out is not None:
        _dense_only(kwargs)
        return _filled(out, shape, 1)
    return full(shape, 1, ctx=ctx, dtype=dtype, **kwargs)


def full(shape, val, ctx=None, dtype=None, out=None, **kwargs):
    """An array filled with ``val``; or ``out``, filled and returned (any shape, as MXNet)."""
    _dense_only(kwargs)
    if out is not None:
        out[:] = val
        return out
    ctx = resolve_context(ctx)
    dtype = np.dtype(dtype or DEFAULT_DTYPE)
    return NDArray(ctx.backend.full(_shape(shape), val, dtype, ctx.device_id), ctx)


def _filled(out, shape, val):
    """``out`` with every element set to ``val``, once its shape is checked to be ``shape``.

    MXNet's ``_zeros``/``_ones`` operators refuse an ``out`` of another shape.
    """
    if out.shape != _shape(shape):
        raise ShapeError(
            f"out has shape {out.shape} but the requested shape is {_shape(shape)}; "
            "pass an out array of that shape"
        )
    out[:] = val
    return out


def _dense_only(kwargs):
    stype = kwargs.pop("stype", None)
    if stype not in (None, "default"):
        raise NotImplementedError(
            f"stype={stype!r} here: only zeros, empty and mx.nd.sparse make sparse arrays"
        )
    if kwargs:
        raise TypeError(f"unexpected arguments {sorted(kwargs)}")


def zeros_like(other):
    """Zeros with the shape, dtype, context and storage type of ``other`` (MXNet's op keeps it)."""
    return zeros(other.shape, ctx=other.context, dtype=other.dtype, stype=other.stype)


def ones_like(other):
    """Ones with the shape, dtype and context of ``other``."""
    return ones(other.shape, ctx=other.context, dtype=other.dtype)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None, dtype=None):
    """Evenly spaced values in ``[start, stop)``, each repeated ``repeat`` times.

    Computed by the ``_arange`` operator, as in MXNet: ``start + i * step`` in
    the output dtype, so an integer range steps by ``int(step)`` from
    ``int(start)`` (``arange(1.3, 456.6, 1.3, dtype='int32')`` ends at 351).
    """
    if step == 0:
        raise ValueError("arange: step must not be zero")
    from .imperative import invoke  # operators run on NDArrays defined beside this module

    params = {"start": start, "stop": stop, "step": step, "repeat": repeat, "infer_range": False}
    return invoke("_arange", (), {**params, "dtype": dtype or DEFAULT_DTYPE, "ctx": ctx})


def _same_context(arrays, what):
    if not arrays:
        raise ValueError(f"{what} needs at least one array")
    first = arrays[0].context
    for other in arrays[1:]:
        if other.context != first:
            raise ContextMismatchError(f"{what}: arrays live on {first} and {other.context}")
    return first


def concatenate(arrays, axis=0, always_copy=True):
    """Join arrays along an existing axis."""
    arrays = list(arrays)
    ctx = _same_context(arrays, "concatenate")
    if len(arrays) == 1 and not always_copy:
        return arrays[0]
    xp = ctx.backend.xp
    try:
        return NDArray(xp.concatenate([a.data for a in arrays], axis=axis), ctx)
    except ValueError as exc:
        shapes = [a.shape for a in arrays]
        raise ShapeError(
            f"concatenate along axis {axis}: shapes {shapes} do not fit: {exc}"
        ) from exc


def waitall():
    """Wait for all queued work on every usable backend."""
    from ..registry import get_registry

    for _, backend in get_registry("backends").items():
        if backend.unavailable_reason() is None:
            backend.synchronize()
