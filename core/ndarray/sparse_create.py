"""Making sparse arrays: ``csr_matrix``, ``row_sparse_array``, ``zeros``, ``empty``,
``array``, ``cast_storage`` and ``retain``, with MXNet 1.9.1's input forms,
defaults and refusals.

Parts given as NDArrays, NumPy arrays or lists are copied onto the target
context (values in the requested dtype, indices as int64, MXNet's aux type);
as in MXNet, index order is not checked here (``check_format`` does that),
except that SciPy matrices are canonicalised (sorted, duplicates summed).
"""

import numbers

import numpy as np

from ..base import MXNetError
from ..context import Context, current_context
from .creation import DEFAULT_DTYPE
from .creation import array as _dense_array
from .creation import zeros as _dense_zeros
from .ndarray import NDArray
from .sparse_array import (
    BaseSparseNDArray,
    CSRNDArray,
    RowSparseNDArray,
    import_scipy_sparse,
    make_sparse,
    moved,
)
from .sparse_convert import AUX_DTYPE, FROM_DENSE, empty_parts

__all__ = ["array", "cast_storage", "csr_matrix", "empty", "retain", "row_sparse_array", "zeros"]

_STYPES = ("csr", "row_sparse")


def _ctx(ctx):
    return current_context() if ctx is None else Context(ctx)


def _is_scipy_sparse(obj):
    """Whether ``obj`` is a SciPy sparse matrix or array (without importing SciPy)."""
    return type(obj).__module__.startswith("scipy.sparse")


def _default_dtype(source, dtype):
    """MXNet's rule: the source's dtype for NDArrays, NumPy and SciPy arrays, else float32."""
    if dtype is not None:
        return np.dtype(dtype)
    if isinstance(source, (NDArray, np.ndarray)) or _is_scipy_sparse(source):
        return np.dtype(source.dtype)
    return np.dtype(DEFAULT_DTYPE)


def _check_shape(given, expected):
    """MXNet's ``_check_shape``: both known and different is an error."""
    if given and expected and tuple(given) != tuple(expected):
        raise ValueError(f"Shape mismatch detected. {tuple(given)} v.s. {tuple(expected)}")


def _part(source, dtype, ctx):
    """A backend array of ``dtype`` on ``ctx`` from an NDArray, NumPy array or list."""
    if isinstance(source, NDArray):
        return moved(source._data, source.context, ctx, dtype)
    if not ctx.backend.owns(source):
        try:
            source = np.asarray(source, dtype=dtype)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"values must be array like object, got {type(source)}") from exc
    return ctx.backend.asarray(source, np.dtype(dtype), ctx.device_id)


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


# -- csr ------------------------------------------------------------------------------------
def csr_matrix(arg1, shape=None, ctx=None, dtype=None):
    """A CSRNDArray from (data, indices, indptr), (data, (row, col)), a dense or sparse 2-d
    array, or a shape ``(M, N)`` (all zeros), as MXNet's ``mx.nd.sparse.csr_matrix``."""
    if isinstance(arg1, tuple):
        if len(arg1) == 2 and isinstance(arg1[1], tuple) and len(arg1[1]) == 2:
            return _csr_from_coo(arg1[0], *arg1[1], shape, ctx, dtype)
        if len(arg1) == 2:
            _check_shape(arg1, shape)
            return empty("csr", arg1, ctx=ctx, dtype=dtype)
        if len(arg1) == 3:
            return _csr_from_parts(*arg1, shape=shape, ctx=ctx, dtype=dtype)
        raise ValueError(f"Unexpected length of input tuple: {len(arg1)}")
    if isinstance(arg1, CSRNDArray) or _is_scipy_sparse(arg1):
        _check_shape(arg1.shape, shape)
        return array(arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, RowSparseNDArray):
        raise ValueError("Unexpected input type: RowSparseNDArray")
    return _from_dense(arg1, "csr", shape, ctx, dtype)


def _from_dense(source, stype, shape, ctx, dtype):
    dtype = _default_dtype(source, dtype)
    dense = _dense_array(source, ctx=ctx, dtype=dtype)
    _check_shape(dense.shape, shape)
    return cast_storage(dense, stype)


def _csr_from_coo(data, row, col, shape, ctx, dtype):
    sparse = import_scipy_sparse("csr_matrix((data, (row, col)))")
    host = [a.asnumpy() if isinstance(a, NDArray) else a for a in (data, row, col)]
    coo = sparse.coo_matrix((host[0], (host[1], host[2])), shape=shape)
    _check_shape(coo.shape, shape)
    return array(coo.tocsr(), ctx=ctx, dtype=dtype)


def _csr_from_parts(data, indices, indptr, shape=None, ctx=None, dtype=None):
    """A CSRNDArray holding copies of the three parts (MXNet's _csr_matrix_from_definition)."""
    ctx, dtype = _ctx(ctx), _default_dtype(data, dtype)
    values, indptr, indices = (
        _part(data, dtype, ctx),
        _part(indptr, AUX_DTYPE, ctx),
        _part(indices, AUX_DTYPE, ctx),
    )
    if shape is None:
        if indices.shape[0] == 0:
            raise ValueError("invalid shape: cannot infer the columns of a csr without indices")
        shape = (indptr.shape[0] - 1, int(indices.max()) + 1)
    shape = tuple(int(d) for d in shape)
    if values.ndim != 1 or indptr.ndim != 1 or indices.ndim != 1 or not indptr.shape[0]:
        raise ValueError(
            f"invalid shape: data, indices and indptr must be 1-d and indptr non-empty, got "
            f"{values.shape}, {indices.shape}, {indptr.shape}"
        )
    if len(shape) != 2:
        raise ValueError(f"invalid shape {shape}: a csr array is 2-d")
    return CSRNDArray(values, (indptr, indices), shape, ctx)


# -- row_sparse ------------------------------------------------------------------------------
def row_sparse_array(arg1, shape=None, ctx=None, dtype=None):
    """A RowSparseNDArray from (data, indices), a dense or row_sparse array, or a shape
    (all zeros), as MXNet's ``mx.nd.sparse.row_sparse_array``."""
    if isinstance(arg1, tuple):
        if len(arg1) < 2:
            raise ValueError(f"Unexpected length of input tuple: {len(arg1)}")
        if len(arg1) > 2 or (_is_int(arg1[0]) and _is_int(arg1[1])):
            _check_shape(arg1, shape)
            return empty("row_sparse", arg1, ctx=ctx, dtype=dtype)
        return _rsp_from_parts(arg1[0], arg1[1], shape=shape, ctx=ctx, dtype=dtype)
    if isinstance(arg1, RowSparseNDArray):
        _check_shape(arg1.shape, shape)
        return array(arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, CSRNDArray):
        raise ValueError("Unexpected input type: CSRNDArray")
    return _from_dense(arg1, "row_sparse", shape, ctx, dtype)


def _rsp_from_parts(data, indices, shape=None, ctx=None, dtype=None):
    """A RowSparseNDArray holding copies of the parts (MXNet's definition form)."""
    ctx, dtype = _ctx(ctx), _default_dtype(data, dtype)
    values, indices = _part(data, dtype, ctx), _part(indices, AUX_DTYPE, ctx)
    if shape is None:
        if indices.shape[0] == 0:
            raise ValueError("invalid shape: cannot infer the rows of a row_sparse without indices")
        shape = (int(indices[-1]) + 1,) + tuple(values.shape[1:])
    shape = tuple(int(d) for d in shape)
    if values.ndim != len(shape) or indices.ndim != 1 or int(np.prod(shape[1:])) == 0:
        raise ValueError(
            f"invalid shape {shape} for stored rows of shape {values.shape} and indices of "
            f"shape {indices.shape}"
        )
    return RowSparseNDArray(values, (indices,), shape, ctx)


# -- zeros, empty, array ---------------------------------------------------------------------
def zeros(stype, shape, ctx=None, dtype=None, **kwargs):
    """An all-zero array of storage ``stype`` ('default', 'csr', 'row_sparse')."""
    if stype in (None, "default"):
        return _dense_zeros(shape, ctx=ctx, dtype=dtype, **kwargs)
    if stype not in _STYPES:
        raise ValueError(f"unknown storage type {stype!r}; use 'default', 'csr' or 'row_sparse'")
    if kwargs:
        raise TypeError(f"zeros: unexpected arguments {sorted(kwargs)}")
    ctx = _ctx(ctx)
    shape = (int(shape),) if _is_int(shape) else tuple(int(d) for d in shape)
    if stype == "csr" and len(shape) != 2:
        raise ValueError(f"a csr array is 2-d, got shape {shape}")
    dtype = np.dtype(DEFAULT_DTYPE if dtype is None else dtype)
    with ctx.backend.device(ctx.device_id):
        values, aux = empty_parts(ctx.backend.xp, stype, shape, dtype)
    return make_sparse(stype, values, aux, shape, ctx)


def empty(stype, shape, ctx=None, dtype=None):
    """A sparse array of ``shape`` with nothing stored (all zeros), as MXNet's sparse empty."""
    if stype not in _STYPES:
        raise ValueError(
            f"unknown stype : {stype}; mx.nd.sparse.empty makes 'csr' or 'row_sparse' arrays "
            "(mx.nd.empty makes dense ones)"
        )
    return zeros(stype, shape, ctx=ctx, dtype=dtype)


def array(source_array, ctx=None, dtype=None):
    """A sparse copy of a CSRNDArray, RowSparseNDArray or SciPy csr matrix."""
    ctx = _ctx(ctx)
    if isinstance(source_array, BaseSparseNDArray):
        dtype = _default_dtype(source_array, dtype)
        values, aux = source_array._parts_on(ctx, dtype)
        return make_sparse(source_array.stype, values, aux, source_array.shape, ctx)
    if _is_scipy_sparse(source_array):
        if source_array.format != "csr":
            raise ValueError(
                f"Unexpected source_array type: scipy {source_array.format} matrix; "
                "convert it with .tocsr()"
            )
        csr = source_array.sorted_indices()
        csr.sum_duplicates()
        dtype = _default_dtype(source_array, dtype)
        return _csr_from_parts(csr.data, csr.indices, csr.indptr, csr.shape, ctx, dtype)
    if isinstance(source_array, (np.ndarray, np.generic, NDArray)):
        raise ValueError(
            "Please use mx.nd.array to create an NDArray with source_array of type "
            f"{type(source_array)} (or .tostype() to make it sparse)"
        )
    raise ValueError(f"Unexpected source_array type: {type(source_array)}")


# -- storage casts and retain ----------------------------------------------------------------
def cast_storage(data, stype, out=None, name=None):
    """``data`` copied into storage ``stype`` ('default', 'csr' or 'row_sparse').

    With ``out``, the result is copied into that array, which is returned.
    """
    if out is not None:
        return _cast(data, stype).copyto(out)
    return _cast(data, stype)


def _cast(data, stype):
    if not isinstance(data, NDArray):
        raise TypeError(f"cast_storage takes an NDArray, got {type(data).__name__}")
    if stype not in ("default", *_STYPES):
        raise ValueError(f"cast_storage: unknown stype {stype!r}; use default, csr or row_sparse")
    source = data.stype
    if {source, stype} == {"csr", "row_sparse"}:
        raise ValueError(f"cast_storage from {source} to {stype} is not supported")
    if source == stype:
        return data.copy()
    ctx = data.context
    if stype == "default":
        return NDArray(data.dense_data(), ctx)
    dense = data._data
    if stype == "csr" and dense.ndim != 2:
        raise ValueError(
            f"cast_storage to csr needs a 2-d array, got shape {tuple(dense.shape)}; "
            "reshape it to 2-d first"
        )
    with ctx.backend.device(ctx.device_id):
        values, aux = FROM_DENSE[stype](ctx.backend.xp, dense)
    return make_sparse(stype, values, aux, data.shape, ctx)


def retain(data=None, indices=None, out=None, name=None, **kwargs):
    """The rows of row_sparse ``data`` whose index is in ``indices`` (MXNet's sparse retain)."""
    if kwargs:
        raise MXNetError(
            f"_sparse_retain: unexpected arguments {sorted(kwargs)}; it takes data and indices"
        )
    if out is not None:
        return retain(data, indices).copyto(out)
    if indices is None:
        raise MXNetError("_sparse_retain: indices are required (the row ids to keep)")
    if not isinstance(data, RowSparseNDArray):
        raise MXNetError(
            f"_sparse_retain needs a row_sparse array, got storage type {data.stype!r}; "
            "convert it with .tostype('row_sparse')"
        )
    ctx, xp = data.context, data.context.backend.xp
    wanted = _part(indices, AUX_DTYPE, ctx).reshape(-1)
    stored = data._aux[0]
    with ctx.backend.device(ctx.device_id):
        keep = xp.isin(stored, wanted)
        values, kept = data._values[keep], stored[keep]
    return RowSparseNDArray(values, (kept,), data.shape, ctx)
