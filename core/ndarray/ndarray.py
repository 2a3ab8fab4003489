"""NDArray: one backend array plus the context it lives on.

Arithmetic is done by the array library itself (NumPy or CuPy operators), so
NDArray adds only MXNet's semantics on top: results keep the array's dtype
(a scalar is cast to it, integer division truncates, comparisons give 0/1 in
that dtype), arrays of different contexts or dtypes are never mixed silently,
and indexing never yields 0-d results (MXNet 1.x arrays have at least one
dimension; a 0-d array exists only when loaded from a numpy-shape file).
"""

import numbers
from builtins import slice as py_slice  # noqa: F401 - MXNet's module exports this name

import numpy as np

from ..base import _LIB
from ..context import Context
from ..errors import ContextMismatchError, DTypeMismatchError, ShapeError
from ..profiler import PROFILER

__all__ = ["NDArray"]


class NDArray:
    """An n-dimensional array on a context (``cpu(0)``, ``gpu(1)``, ...)."""

    # views.py adds __array_ufunc__ (NumPy's operators on an NDArray come back to us)
    # _version counts the writes made through NDArray's own methods (__setitem__,
    # copyto into it, in-place arithmetic): an engine that keeps a copy of an array's
    # values (the ONNX Runtime inference engine's weights) re-reads them when it moves
    __slots__ = ("_data", "_ctx", "_version", "__weakref__")

    def __init__(self, data=None, ctx=None, handle=None):
        if handle is not None:  # MXNet's form: an array a mx.base._LIB function made
            data, ctx = _LIB.take_handle(handle)
        self._data = data
        self._ctx = ctx
        self._version = 0

    # -- description ----------------------------------------------------------
    @property
    def shape(self):
        return tuple(self._data.shape)

    @property
    def dtype(self):
        """The element type, as a NumPy scalar type (``numpy.float32``), as MXNet gives it."""
        return self._data.dtype.type

    @property
    def size(self):
        return int(self._data.size)

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def context(self):
        return self._ctx

    ctx = context

    @property
    def stype(self):
        """Storage type: 'default' (dense); CSRNDArray and RowSparseNDArray say theirs."""
        return "default"

    @property
    def data(self):
        """The backend array itself (``numpy.ndarray`` or ``cupy.ndarray``), not a copy."""
        return self._data

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d NDArray")
        return self.shape[0]

    def __iter__(self):
        for index in range(len(self)):
            yield self[index]

    def __bool__(self):
        if self.size == 0:
            return False
        if self.size == 1:
            return bool(self.asscalar())
        raise ValueError(f"the truth value of an NDArray with {self.size} elements is ambiguous")

    def __hash__(self):
        return id(self)

    def __repr__(self):
        dims = "x".join(str(d) for d in self.shape)
        return f"\n{self.asnumpy()}\n<{type(self).__name__} {dims} @{self._ctx}>"

    # -- conversion and copies ------------------------------------------------
    def asnumpy(self):
        """A NumPy copy of the values (the device is synchronised first)."""
        host = self._ctx.backend.to_host(self._data)
        return host.copy() if host is self._data else host

    def asscalar(self):
        """The single value of a one-element array, as a NumPy scalar."""
        if self.size != 1:
            raise ValueError(f"asscalar() needs an array of one element, got shape {self.shape}")
        return self.asnumpy().reshape(-1)[0]

    def __array__(self, dtype=None, copy=None):
        host = self.asnumpy()
        return host if dtype is None else host.astype(dtype, copy=False)

    def __dlpack__(self, *args, **kwargs):
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def astype(self, dtype, copy=True):
        """The values converted to ``dtype``; ``copy=False`` may return ``self``."""
        dtype = np.dtype(dtype)
        if not copy and dtype == self._data.dtype:
            return self
        return NDArray(self._data.astype(dtype), self._ctx)

    def copy(self):
        """A copy on the same context."""
        return NDArray(self._data.copy(), self._ctx)

    def copyto(self, other):
        """Copy into ``other``: a Context (a new array there) or an NDArray (filled in place)."""
        if isinstance(other, NDArray):
            if other is self:
                return other
            if other.stype != "default":  # a sparse target converts what it receives
                return other._store(self)
            if other.shape != self.shape:
                raise ShapeError(
                    f"copyto: source has shape {self.shape}, target has shape {other.shape}"
                )
            other._version += 1
            if other._ctx == self._ctx or other._ctx.backend.owns(self._data):
                other._data[...] = _move(self, other._ctx)
            elif isinstance(other._data, np.ndarray):  # to the host: straight into its array
                self._ctx.backend.copy_to_host(self._data, other._data)
            else:  # from another backend: through the host, staged by the target's backend
                host = self._ctx.backend.to_host(self._data)
                other._ctx.backend.copy_from_host(other._data, host, other._ctx.device_id)
            return other
        if isinstance(other, (Context, str)):
            ctx = Context(other)
            data = _move(self, ctx)  # a new array, unless ctx is this array's own
            if data is self._data:
                data = ctx.backend.asarray(data, data.dtype, ctx.device_id)
            return NDArray(data, ctx)
        raise TypeError(f"copyto takes a Context or an NDArray, got {type(other).__name__}")

    def as_in_context(self, context):
        """``self`` when already on ``context``, else a copy there."""
        return self if Context(context) == self._ctx else self.copyto(context)

    as_in_ctx = as_in_context

    def wait_to_read(self):
        """Block until pending writes to this array are done."""
        self._ctx.backend.synchronize(self._ctx.device_id)

    wait_to_write = wait_to_read

    # -- shape ------------------------------------------------------------------
    def reshape(self, *shape, **kwargs):
        """A view with a new shape; MXNet's codes 0, -1, -2, -3, -4 are understood."""
        from .shape_spec import infer_reshape

        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = tuple(shape[0])
        shape = kwargs.pop("shape", shape)
        reverse = kwargs.pop("reverse", False)
        if kwargs:
            raise TypeError(f"reshape got unexpected arguments {sorted(kwargs)}")
        target = infer_reshape(self.shape, tuple(shape), reverse=reverse)
        return NDArray(self._data.reshape(target), self._ctx)

    @property
    def T(self):
        """The transposed array (a copy, axes reversed); ``self`` when ndim < 2, as MXNet."""
        if self.ndim < 2:
            return self
        return NDArray(self._data.T.copy(), self._ctx)

    # -- indexing ---------------------------------------------------------------
    def __getitem__(self, key):
        if isinstance(key, numbers.Integral) and self.ndim == 1:
            # keep a view of one element rather than a 0-d copy
            index = _check_index(int(key), self.shape[0])
            return NDArray(self._data[index : index + 1], self._ctx)
        out = self._data[self._native_key(key)]
        if out.ndim == 0:
            out = self._ctx.backend.xp.reshape(out, (1,))
        return NDArray(out, self._ctx)

    def __setitem__(self, key, value):
        if isinstance(value, NDArray):
            value = _move(value, self._ctx)
        elif not isinstance(value, numbers.Number):
            value, backend = _host_values(value), self._ctx.backend
            if not backend.owns(value):  # a device array: one staged host -> device copy
                value = backend.asarray(value, value.dtype, self._ctx.device_id)
        key = self._native_key(key)
        self._version += 1
        try:
            try:
                self._data[key] = value
            except ValueError:
                # MXNet drops a value's extra leading axes of length 1 first:
                # x[0] = numpy.array([v]) sets the single element of a 1-d x
                self._data[key] = _leading_ones_trimmed(value, self._data[key].ndim)
        except ValueError as exc:
            shape = getattr(value, "shape", ())
            raise ShapeError(
                f"cannot assign a value of shape {tuple(shape)} to index {key!r} "
                f"of an NDArray of shape {self.shape}: {exc}"
            ) from exc

    def _native_key(self, key):
        if isinstance(key, tuple):
            return tuple(self._native_key(part) for part in key)
        if isinstance(key, NDArray):
            data = _move(key, self._ctx)
            return data if data.dtype == bool else data.astype(np.int64)
        return key

    # -- arithmetic -------------------------------------------------------------
    def _operand(self, other, op_name):
        """``other`` as a backend array or scalar that may meet ``self._data``."""
        if isinstance(other, NDArray):
            if other._ctx != self._ctx:
                raise ContextMismatchError(
                    f"{op_name}: the operands live on {self._ctx} and {other._ctx}; "
                    f"move one with .as_in_context({self._ctx})"
                )
            if other._data.dtype != self._data.dtype:
                raise DTypeMismatchError(
                    f"{op_name}: the operands have dtypes {self._data.dtype} and "
                    f"{other._data.dtype}; convert one with .astype()"
                )
            return other._data
        if isinstance(other, (numbers.Number, np.generic)):
            return self._ctx.backend.xp.asarray(other).astype(self._data.dtype)
        if isinstance(other, (np.ndarray, list, tuple)):
            return self._ctx.backend.xp.asarray(np.asarray(other, dtype=self._data.dtype))
        raise TypeError(f"{op_name}: unsupported operand type {type(other).__name__}")

    def _binary(self, other, op_name, reflected=False):
        rhs = self._operand(other, op_name)
        lhs, rhs = (rhs, self._data) if reflected else (self._data, rhs)
        apply = _APPLY[op_name]
        if PROFILER.imperative:
            name = _profiled_name(op_name, other, reflected)
            apply = PROFILER.time_op_function(name, self._ctx, apply)
        return NDArray(apply(lhs, rhs, self._data.dtype), self._ctx)

    def _inplace(self, other, op_name):
        rhs = self._operand(other, op_name)
        apply = _APPLY[op_name]
        if PROFILER.imperative:
            apply = PROFILER.time_op_function(_profiled_name(op_name, other), self._ctx, apply)
        self._data[...] = apply(self._data, rhs, self._data.dtype)
        self._version += 1
        return self

    def __neg__(self):
        return NDArray(-self._data, self._ctx)

    def __pos__(self):
        return self

    def __abs__(self):
        return NDArray(abs(self._data), self._ctx)


def _divide(lhs, rhs, dtype):
    quotient = lhs / rhs
    if np.issubdtype(dtype, np.integer):
        # integer division truncates toward zero, as MXNet's integer kernels do;
        # np.trunc dispatches to CuPy for CuPy arrays
        quotient = np.trunc(quotient)
    return quotient.astype(dtype, copy=False)


def _compare(fn):
    return lambda lhs, rhs, dtype: fn(lhs, rhs).astype(dtype)


_APPLY = {
    "add": lambda a, b, dtype: (a + b).astype(dtype, copy=False),
    "subtract": lambda a, b, dtype: (a - b).astype(dtype, copy=False),
    "multiply": lambda a, b, dtype: (a * b).astype(dtype, copy=False),
    "divide": _divide,
    "modulo": lambda a, b, dtype: (a % b).astype(dtype, copy=False),
    "power": lambda a, b, dtype: (a**b).astype(dtype, copy=False),
    "equal": _compare(lambda a, b: a == b),
    "not_equal": _compare(lambda a, b: a != b),
    "greater": _compare(lambda a, b: a > b),
    "greater_equal": _compare(lambda a, b: a >= b),
    "less": _compare(lambda a, b: a < b),
    "less_equal": _compare(lambda a, b: a <= b),
}

# MXNet's operator names where they differ from the NumPy-style names above
_MXNET_SHORT = {
    "subtract": "sub",
    "multiply": "mul",
    "divide": "div",
    "modulo": "mod",
    "less": "lesser",
    "less_equal": "lesser_equal",
}
_MXNET_SCALAR = {"add": "plus", "subtract": "minus"}
_MXNET_REFLECTED = {"subtract": "rminus", "divide": "rdiv", "modulo": "rmod", "power": "rpower"}


def _profiled_name(op_name, other, reflected=False):
    """The operator MXNet runs (and its profiler names) for ``x <op> other``."""
    if isinstance(other, NDArray):
        return "broadcast_" + _MXNET_SHORT.get(op_name, op_name)
    short = _MXNET_SCALAR.get(op_name) or _MXNET_SHORT.get(op_name, op_name)
    if reflected:
        short = _MXNET_REFLECTED.get(op_name, short)
    return f"_{short}_scalar"


_DUNDERS = {
    "add": ("__add__", "__radd__", "__iadd__"),
    "subtract": ("__sub__", "__rsub__", "__isub__"),
    "multiply": ("__mul__", "__rmul__", "__imul__"),
    "divide": ("__truediv__", "__rtruediv__", "__itruediv__"),
    "modulo": ("__mod__", "__rmod__", "__imod__"),
    "power": ("__pow__", "__rpow__", None),
    "equal": ("__eq__", None, None),
    "not_equal": ("__ne__", None, None),
    "greater": ("__gt__", None, None),
    "greater_equal": ("__ge__", None, None),
    "less": ("__lt__", None, None),
    "less_equal": ("__le__", None, None),
}


def _install_operators():
    for op_name, (forward, reflected, inplace) in _DUNDERS.items():
        setattr(NDArray, forward, lambda self, other, _n=op_name: self._binary(other, _n))
        if reflected:
            setattr(
                NDArray, reflected, lambda self, other, _n=op_name: self._binary(other, _n, True)
            )
        if inplace:
            setattr(NDArray, inplace, lambda self, other, _n=op_name: self._inplace(other, _n))
    NDArray.__div__, NDArray.__rdiv__, NDArray.__idiv__ = (
        NDArray.__truediv__,
        NDArray.__rtruediv__,
        NDArray.__itruediv__,
    )


_install_operators()


def _check_index(index, length):
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of bounds for axis 0 with size {length}")
    return index % length


def _move(array, ctx):
    """``array``'s backend data, brought to ``ctx`` (through the host if backends differ)."""
    if array._ctx == ctx:
        return array._data
    target = ctx.backend
    if target.owns(array._data):
        return target.asarray(array._data, array._data.dtype, ctx.device_id)
    # through the host: the source backend's host view (no copy on the CPU), then one copy
    host = array._ctx.backend.to_host(array._data)
    return target.asarray(host, array._data.dtype, ctx.device_id)


def _leading_ones_trimmed(value, ndim):
    """``value`` without the leading length-1 axes that it has beyond ``ndim`` axes."""
    shape = tuple(getattr(value, "shape", ()))
    extra = 0
    while len(shape) - extra > ndim and shape[extra] == 1:
        extra += 1
    return value.reshape(shape[extra:]) if extra else value


def _host_values(value):
    """NumPy values from lists, NumPy arrays or another library's arrays."""
    if hasattr(value, "get") and not isinstance(value, (np.ndarray, dict)):
        return value.get()  # a CuPy array, copied to the host
    return np.asarray(value)
