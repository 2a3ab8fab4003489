"""CSRNDArray and RowSparseNDArray: NDArrays stored as values plus index arrays.

A sparse array holds backend arrays (NumPy on the CPU, CuPy on a GPU) in three
slots: ``_values`` (MXNet's "data"), ``_aux`` (the aux arrays in MXNet's
order: csr ``(indptr, indices)``, row_sparse ``(indices,)``, int64) and
``_shape`` (the logical shape). Code written for dense arrays that reads
``x._data`` gets the dense form (MXNet's storage fallback), made only when it
fits in memory; writing through ``_data`` is refused, so nothing is lost in a
temporary. See /work/notes/sparse_api.md for the contract helpers build on.
"""

import numbers
import warnings

import numpy as np

from ..base import NotSupportedForSparseNDArray
from ..context import Context
from ..errors import FormatError, ShapeError
from .ndarray import NDArray
from .sparse_arith import install_sparse_operators
from .sparse_convert import AUX_DTYPE, FROM_DENSE, TO_DENSE, check_dense_fits

__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "make_sparse"]


def moved(data, src_ctx, ctx, dtype=None):
    """Backend array ``data`` (living on ``src_ctx``) on ``ctx`` as ``dtype``: a new array."""
    dtype = np.dtype(dtype or data.dtype)
    if src_ctx == ctx:
        with ctx.backend.device(ctx.device_id):
            return data.astype(dtype, copy=True)
    if ctx.backend.owns(data):
        return ctx.backend.asarray(data, dtype, ctx.device_id)
    host = src_ctx.backend.to_host(data)
    return ctx.backend.asarray(host, dtype, ctx.device_id)


class BaseSparseNDArray(NDArray):
    """An NDArray in a sparse storage format (csr or row_sparse)."""

    __slots__ = ("_values", "_aux", "_shape")
    STYPE = None  # 'csr' or 'row_sparse' in the subclasses
    AUX_NAMES = ()

    def __init__(self, values=None, aux=(), shape=None, ctx=None, handle=None):
        # no copy, no check: constructors and operators hand in parts they made
        if handle is not None:
            raise NotImplementedError("sparse arrays cannot be built from a C handle in rebind")
        self._values, self._aux = values, tuple(aux)
        self._shape = None if shape is None else tuple(int(d) for d in shape)
        self._ctx, self._version = ctx, 0

    def __reduce__(self):
        return type(self), (None,), self.__getstate__()

    # -- description -------------------------------------------------------------
    @property
    def stype(self):
        """The storage type: 'csr' or 'row_sparse'."""
        return self.STYPE

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._values.dtype.type

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def size(self):
        """Not defined for sparse arrays, as in MXNet."""
        raise NotImplementedError(f"size of a {type(self).__name__} (use .shape or .data.size)")

    @property
    def _data(self):
        """The dense backend array (storage fallback for code written for dense arrays)."""
        return self.dense_data()

    @property
    def _num_aux(self):
        return len(self.AUX_NAMES)

    @property
    def _aux_types(self):
        return [a.dtype.type for a in self._aux]

    def _aux_type(self, i):
        return self._aux[i].dtype.type

    def _aux_data(self, i):
        """A copy of aux array ``i`` as an NDArray."""
        return NDArray(self._aux[i].copy(), self._ctx)

    def __repr__(self):
        dims = "x".join(str(d) for d in self._shape)
        return f"\n<{type(self).__name__} {dims} @{self._ctx}>"

    # -- parts and conversions ---------------------------------------------------------
    @property
    def data(self):
        """A copy of the stored values, as an NDArray (MXNet gives a copy too)."""
        return NDArray(self._values.copy(), self._ctx)

    @data.setter
    def data(self, value):
        raise NotImplementedError("data of a sparse array is read-only; build a new array")

    @property
    def indices(self):
        """A copy of the indices (int64), as an NDArray."""
        return self._aux_data(len(self._aux) - 1)

    @indices.setter
    def indices(self, value):
        raise NotImplementedError("indices of a sparse array are read-only; build a new array")

    def dense_data(self):
        """The dense form as a new backend array on this context (refused if it cannot fit)."""
        check_dense_fits(self._shape, self._values.dtype, self._ctx, f"{self!r}".strip())
        backend = self._ctx.backend
        with backend.device(self._ctx.device_id):
            return TO_DENSE[self.STYPE](backend.xp, self._values, self._aux, self._shape)

    def asnumpy(self):
        """A dense NumPy copy of the values."""
        check_dense_fits(self._shape, self._values.dtype, Context("cpu"), repr(self).strip())
        host_values = self._ctx.backend.to_host(self._values)
        host_aux = [self._ctx.backend.to_host(a) for a in self._aux]
        return TO_DENSE[self.STYPE](np, host_values, host_aux, self._shape)

    def tostype(self, stype):
        """A copy in storage ``stype`` ('default', or this array's own)."""
        from .sparse_create import cast_storage

        return cast_storage(self, stype)

    def _parts_on(self, ctx, dtype=None):
        values = moved(self._values, self._ctx, ctx, dtype)
        return values, tuple(moved(a, self._ctx, ctx) for a in self._aux)

    def copy(self):
        """A copy on the same context."""
        return type(self)(*self._parts_on(self._ctx), self._shape, self._ctx)

    def astype(self, dtype, copy=True):
        """The array with its values converted to ``dtype`` (``self`` if copy=False and same)."""
        if not copy and np.dtype(dtype) == self._values.dtype:
            return self
        return type(self)(*self._parts_on(self._ctx, dtype), self._shape, self._ctx)

    def copyto(self, other):
        """Copy into a Context (a new array of this stype) or an NDArray of shape ``shape``."""
        if isinstance(other, (Context, str)):
            ctx = Context(other)
            return type(self)(*self._parts_on(ctx), self._shape, ctx)
        if not isinstance(other, NDArray):
            raise TypeError(f"copyto does not support type {type(other)}")
        if other is self:
            warnings.warn(
                "You are attempting to copy an array to itself", RuntimeWarning, stacklevel=2
            )
            return False
        if other.stype not in ("default", self.STYPE):
            raise TypeError(f"copyto does not support destination NDArray stype {other.stype}")
        if other.stype == "default":
            _check_same_shape(self, other)
            dense = NDArray(self.dense_data(), self._ctx)
            return dense.copyto(other)
        return other._store(self)

    def _store(self, source):
        """Fill ``self`` from ``source`` (any stype, shape ``self.shape``); returns ``self``."""
        _check_same_shape(source, self)
        if source.stype == self.STYPE:
            values, aux = source._parts_on(self._ctx, self._values.dtype)
        else:
            dense = moved(source._data, source.context, self._ctx, self._values.dtype)
            with self._ctx.backend.device(self._ctx.device_id):
                values, aux = FROM_DENSE[self.STYPE](self._ctx.backend.xp, dense)
        self._values, self._aux = values, tuple(aux)
        self._version += 1
        return self

    def wait_to_read(self):
        """Block until pending work on this array's device is done."""
        self._ctx.backend.synchronize(self._ctx.device_id)

    wait_to_write = wait_to_read

    def check_format(self, full_check=True):
        """Raise FormatError (an MXNetError) if the parts do not form a valid array."""
        from .sparse_format import check_parts

        host = [self._ctx.backend.to_host(a) for a in (self._values, *self._aux)]
        try:
            check_parts(self.STYPE, host[0], host[1:], self._shape, full_check)
        except ValueError as exc:
            raise FormatError(f"check_format of {repr(self).strip()}: {exc}") from None

    # -- refused dense-only methods (MXNet refuses them too) -------------------------
    def _at(self, idx):
        raise NotSupportedForSparseNDArray(self._at, "[idx]", idx)

    def _slice(self, start, stop):
        raise NotSupportedForSparseNDArray(self._slice, None, start, stop)

    def reshape(self, *shape, **kwargs):
        raise NotSupportedForSparseNDArray(self.reshape, None, shape)

    def _sync_copyfrom(self, source_array):
        raise NotImplementedError("_sync_copyfrom of a sparse array; assign with x[:] = value")

    # -- in-place arithmetic: compute, then store into self (MXNet's own way) ------
    def __iadd__(self, other):
        return self._store(self + other)

    def __isub__(self, other):
        return self._store(self - other)

    def __imul__(self, other):
        return self._store(self * other)

    def __itruediv__(self, other):
        return self._store(self / other)

    __idiv__ = __itruediv__

    def _assign_whole(self, key, value):
        """``self[:] = value`` shared by both formats; ``key`` must be ``[:]``."""
        name = type(self).__name__
        if not isinstance(key, slice):
            raise TypeError(f"{name} only supports [:] for assignment, got key {key!r}")
        if (key.start, key.stop, key.step) != (None, None, None):
            raise ValueError(f"Assignment with slice for {name} is not implemented yet.")
        if isinstance(value, NDArray):
            if value is not self:
                value.copyto(self)
            return
        if isinstance(value, (numbers.Number, np.generic)):
            self._fill(value)
            return
        if isinstance(value, np.ndarray):
            warnings.warn(
                f"Assigning non-NDArray object to {name} is not efficient",
                RuntimeWarning,
                stacklevel=3,
            )
            NDArray(
                self._ctx.backend.asarray(value, self._values.dtype, self._ctx.device_id), self._ctx
            ).copyto(self)
            return
        raise TypeError(f"type {type(value)} not supported")


class CSRNDArray(BaseSparseNDArray):
    """A 2-d array in compressed sparse row format: ``data``, ``indices``, ``indptr``."""

    __slots__ = ()
    STYPE = "csr"
    AUX_NAMES = ("indptr", "indices")

    @property
    def indptr(self):
        """A copy of the row pointers (int64), as an NDArray."""
        return self._aux_data(0)

    @indptr.setter
    def indptr(self, value):
        raise NotImplementedError("indptr of a sparse array is read-only; build a new array")

    def __getitem__(self, key):
        """Rows: ``x[i]`` (a 1-row CSRNDArray), ``x[a:b]``; ``x[:]`` is ``x`` itself."""
        rows = self._shape[0]
        if isinstance(key, numbers.Integral) and not isinstance(key, bool):
            if not -rows <= key < rows:
                raise IndexError(f"row {key} is out of range for a {repr(self).strip()}")
            return self._rows(int(key) % rows, int(key) % rows + 1)
        if isinstance(key, slice):
            if key.step is not None:
                raise ValueError("CSRNDArray only supports continuous slicing on axis 0")
            if key.start is None and key.stop is None:
                return self
            begin, end, _ = key.indices(rows)
            return self._rows(begin, max(begin, end))
        if isinstance(key, tuple):
            raise ValueError("Multi-dimension indexing is not supported")
        raise ValueError(f"Undefined behaviour for {key}")

    def _rows(self, begin, end):
        """Rows ``begin:end`` as a new CSRNDArray."""
        indptr, indices = self._aux
        lo, hi = (int(v) for v in self._ctx.backend.to_host(indptr[[begin, end]]))
        with self._ctx.backend.device(self._ctx.device_id):
            values, indices = self._values[lo:hi].copy(), indices[lo:hi].copy()
            indptr = indptr[begin : end + 1] - lo
        return CSRNDArray(values, (indptr, indices), (end - begin, self._shape[1]), self._ctx)

    def __setitem__(self, key, value):
        """``x[:] = value``: an NDArray (dense or csr) or a NumPy array; nothing else."""
        if isinstance(value, (numbers.Number, np.generic)) and isinstance(key, slice):
            raise ValueError("Assigning numeric types to CSRNDArray is not implemented yet.")
        if not isinstance(key, slice):
            raise ValueError(f"CSRNDArray only supports [:] for assignment, got key {key!r}")
        self._assign_whole(key, value)

    def asscipy(self):
        """A ``scipy.sparse.csr_matrix`` copy (needs SciPy: ``pip install rebind[sparse]``)."""
        sparse = import_scipy_sparse("CSRNDArray.asscipy")
        to_host = self._ctx.backend.to_host
        indptr, indices = (to_host(a) for a in self._aux)
        values = to_host(self._values)
        return sparse.csr_matrix((values, indices, indptr), shape=self._shape, dtype=values.dtype)


class RowSparseNDArray(BaseSparseNDArray):
    """Rows of an n-d array at given ``indices`` (ascending); every other row is zero."""

    __slots__ = ()
    STYPE = "row_sparse"
    AUX_NAMES = ("indices",)

    def __getitem__(self, key):
        """Only ``x[:]`` (``x`` itself), as in MXNet."""
        if isinstance(key, slice):
            if (key.start, key.stop, key.step) != (None, None, None):
                raise NotImplementedError("RowSparseNDArray only supports [:] for __getitem__")
            return self
        if isinstance(key, tuple):
            raise ValueError("Multi-dimension indexing is not supported")
        raise NotImplementedError(
            f"__getitem__ with key {key!r} is not implemented for RowSparseNDArray; "
            "use .retain(indices) or .tostype('default')"
        )

    def __setitem__(self, key, value):
        """``x[:] = value``: an NDArray, a NumPy array or a scalar (every row set)."""
        self._assign_whole(key, value)

    def _fill(self, value):
        """Every element ``value``, every row stored (zeros too, as MXNet's _set_value does)."""
        xp, ctx = self._ctx.backend.xp, self._ctx
        with ctx.backend.device(ctx.device_id):
            self._values = xp.full(self._shape, value, dtype=self._values.dtype)
            self._aux = (xp.arange(self._shape[0], dtype=AUX_DTYPE),)
        self._version += 1

    def retain(self, indices):
        """A RowSparseNDArray keeping only the stored rows listed in ``indices``."""
        from .sparse_create import retain

        return retain(self, indices)


install_sparse_operators(BaseSparseNDArray)


def make_sparse(stype, values, aux, shape, ctx):
    """A sparse array of ``stype`` around backend arrays already on ``ctx`` (no copy)."""
    cls = {"csr": CSRNDArray, "row_sparse": RowSparseNDArray}.get(stype)
    if cls is None:
        raise ValueError(f"unknown storage type {stype!r}; expected 'csr' or 'row_sparse'")
    return cls(values, aux, shape, ctx)


def import_scipy_sparse(what):
    """``scipy.sparse``, or an ImportError saying how to install it."""
    try:
        import scipy.sparse
    except ImportError as exc:
        raise ImportError(
            f"{what} needs SciPy; install it with `pip install rebind[sparse]` (or `pip "
            "install scipy`)"
        ) from exc
    return scipy.sparse


def _check_same_shape(source, target):
    if tuple(source.shape) != tuple(target.shape):
        raise ShapeError(
            f"copyto: source has shape {tuple(source.shape)}, target has shape "
            f"{tuple(target.shape)}; copy between arrays of one shape"
        )
