"""``mx.nd``'s bridges to other array libraries (NumPy, DLPack), and NDArray's extra methods.

MXNet's ``to_dlpack_for_read``/``_for_write`` hand out a DLPack capsule;
rebind's arrays are NumPy or CuPy arrays, which speak DLPack themselves, so the
capsule is theirs. rebind has no dependency engine: read and write capsules
are the same, and ``wait_to_read`` only synchronises the device.
"""

import ctypes

import numpy as np

from ..context import cpu
from ..errors import ShapeError
from .creation import array
from .ndarray import NDArray

__all__ = [
    "from_numpy",
    "from_dlpack",
    "to_dlpack_for_read",
    "to_dlpack_for_write",
    "imdecode",
    "CachedOp",
    "install_extras",
]

AUTOGRAD_REASON = (
    "rebind has no mx.autograd: gradients come from bound symbols "
    "(Module.backward or Executor.backward), not from recorded NDArray code"
)
IMDECODE_REASON = (
    "mx.nd.imdecode is MXNet's deprecated decoder and fails on every input in MXNet 1.9.1; "
    "use mx.image.imdecode"
)
CACHEDOP_REASON = (
    "CachedOp runs a symbol imperatively for Gluon's hybridized blocks; rebind has no Gluon: "
    "bind the symbol instead (sym.bind(...).forward() or sym.eval(ctx, **arrays))"
)


def from_numpy(ndarray, zero_copy=True, array_cls=NDArray):
    """An NDArray on cpu(0) from a NumPy array, sharing its memory when ``zero_copy``.

    As in MXNet, the dtype is kept (float64 stays float64) and zero-copy
    needs a C-contiguous array. Where cpu(0)'s backend cannot hold a NumPy
    array as is, the values are copied.
    """
    if array_cls is not NDArray:
        raise TypeError(f"from_numpy makes NDArrays, not {array_cls!r}")
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy takes a numpy.ndarray, got {type(ndarray).__name__}")
    ctx = cpu(0)
    if not zero_copy:
        return array(ndarray, ctx=ctx, dtype=ndarray.dtype)
    if not ndarray.flags.c_contiguous:
        raise ValueError(
            "from_numpy(zero_copy=True) needs a C-contiguous array; pass "
            "numpy.ascontiguousarray(a) or zero_copy=False"
        )
    if ctx.backend.owns(ndarray):
        return NDArray(ndarray, ctx)
    return array(ndarray, ctx=ctx, dtype=ndarray.dtype)


def to_dlpack_for_read(data):
    """A DLPack capsule viewing ``data``'s memory, for another library to read.

    It is a classic (unversioned) capsule, the kind MXNet hands out; NumPy
    imports such a capsule as a read-only array.
    """
    return data.data.__dlpack__()


def to_dlpack_for_write(data):
    """A DLPack capsule viewing ``data``'s memory; writes through it change ``data``.

    Where the backend speaks DLPack 1.0 it is a versioned capsule, which
    carries the writable flag (NumPy then imports it writable); else a
    classic capsule.
    """
    try:
        return data.data.__dlpack__(max_version=(1, 0))
    except TypeError:  # a backend array without DLPack 1.0 support
        return data.data.__dlpack__()


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


# the offset of DLTensor.device: in DLManagedTensor, DLTensor comes first and
# starts with ``void *data``; in DLManagedTensorVersioned (DLPack 1.x) DLTensor
# follows a version (two uint32), two pointers and a uint64 of flags
_DEVICE_OFFSET = {
    b"dltensor": ctypes.sizeof(ctypes.c_void_p),
    b"dltensor_versioned": 8 + 3 * ctypes.sizeof(ctypes.c_void_p) + 8,
}


def _capsule_device(capsule):
    """(device_type, device_id) read from an unconsumed DLPack capsule."""
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    name = api.PyCapsule_GetName(capsule)
    if name not in _DEVICE_OFFSET:
        raise TypeError(
            f"from_dlpack takes a DLPack capsule or an object with __dlpack__; got a capsule "
            f"named {name!r} (a capsule named 'used_dltensor' was consumed already)"
        )
    pointer = api.PyCapsule_GetPointer(capsule, name)
    device = _DLDevice.from_address(pointer + _DEVICE_OFFSET[name])
    return device.device_type, device.device_id


class _Capsule:
    """Presents a bare DLPack capsule through the ``__dlpack__`` protocol."""

    def __init__(self, capsule):
        self._capsule = capsule
        self._device = _capsule_device(capsule)

    def __dlpack__(self, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def from_dlpack(dlpack):
    """An NDArray sharing the memory of a DLPack capsule or of an object with ``__dlpack__``.

    Host memory becomes a cpu(0) array; device memory becomes a gpu array
    through CuPy (when it is installed).
    """
    if isinstance(dlpack, NDArray):
        return NDArray(dlpack.data, dlpack.context)
    source = dlpack if hasattr(dlpack, "__dlpack__") else _Capsule(dlpack)
    device_type, device_id = source.__dlpack_device__()
    if device_type == 1:  # kDLCPU
        return NDArray(np.from_dlpack(source), cpu(0))
    return _from_device_dlpack(source, device_id)


def _from_device_dlpack(source, device_id):
    try:
        import cupy
    except ImportError:
        raise RuntimeError(
            "from_dlpack: the tensor lives on a GPU and CuPy is not installed "
            "(pip install rebind[cupy])"
        ) from None
    from ..context import gpu

    return NDArray(cupy.from_dlpack(source), gpu(device_id))


def imdecode(*args, **kwargs):
    """MXNet's image decoder; not in rebind yet (issue #17)."""
    raise NotImplementedError(IMDECODE_REASON)


class CachedOp:
    """MXNet's imperative runner of a symbol, used by Gluon; not in rebind (see the reason)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(CACHEDOP_REASON)


# -- NDArray methods that are not operators ------------------------------------------
def _as_nd_ndarray(self):
    """``self``: rebind has only the classic NDArray (no ``mx.np`` arrays)."""
    return self


def _tostype(self, stype):
    """A dense copy for ``stype='default'``; rebind stores every array densely."""
    if stype != "default":
        raise NotImplementedError(f"tostype({stype!r}): rebind stores every array densely")
    return self.copy()


def _detach(self):
    """An array sharing ``self``'s memory (there is no autograd graph to cut in rebind)."""
    return NDArray(self.data, self.context)


def _attach_grad(self, grad_req="write", stype=None):
    """MXNet's autograd hook; not in rebind."""
    raise NotImplementedError(AUTOGRAD_REASON)


def _backward(self, out_grad=None, retain_graph=False, train_mode=True):
    """MXNet's autograd backward; not in rebind."""
    raise NotImplementedError(AUTOGRAD_REASON)


def _grad(self):
    """The gradient attached by autograd: always None, as no gradient can be attached here."""
    return None


def _broadcast_like(self, other):
    """``self`` broadcast to ``other``'s shape (a copy)."""
    xp = self.context.backend.xp
    try:
        out = xp.broadcast_to(self.data, other.shape)
    except ValueError as exc:
        raise ShapeError(
            f"broadcast_like: shape {self.shape} does not broadcast to {other.shape}"
        ) from exc
    return NDArray(xp.ascontiguousarray(out), self.context)


def _slices(begin, end, step):
    step = step or (None,) * len(begin)
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step, strict=True))


def _slice_assign(self, rhs, begin, end, step):
    """Write ``rhs`` into ``self[begin:end:step]`` (per axis) in place; returns ``self``."""
    self[_slices(begin, end, step)] = rhs
    return self


def _slice_assign_scalar(self, value, begin, end, step):
    """Write the number ``value`` into ``self[begin:end:step]`` in place; returns ``self``."""
    self[_slices(begin, end, step)] = float(value)
    return self


def _split_v2(self, *args, **kwargs):
    """``mx.nd.split_v2(self, ...)``."""
    from .helpers import split_v2  # helpers build on the NDArray type this module extends

    return split_v2(self, *args, **kwargs)


_METHODS = {
    "as_nd_ndarray": _as_nd_ndarray,
    "split_v2": _split_v2,
    "tostype": _tostype,
    "detach": _detach,
    "attach_grad": _attach_grad,
    "backward": _backward,
    "broadcast_like": _broadcast_like,
    "slice_assign": _slice_assign,
    "slice_assign_scalar": _slice_assign_scalar,
    "to_dlpack_for_read": to_dlpack_for_read,
    "to_dlpack_for_write": to_dlpack_for_write,
}


def install_extras(cls):
    """Give NDArray the methods above (kept here so ndarray.py stays the core type)."""
    for name, function in _METHODS.items():
        if name not in cls.__dict__:
            setattr(cls, name, function)
    if "grad" not in cls.__dict__:
        cls.grad = property(_grad)
    if "writable" not in cls.__dict__:
        cls.writable = property(lambda self: True, doc="Always True: every array is writable.")
