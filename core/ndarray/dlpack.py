"""DLPack: NDArrays handed to other array libraries and taken from them, without copies.

MXNet's ``to_dlpack_for_read``/``_for_write`` return a PyCapsule named
``"dltensor"`` holding a ``DLManagedTensor``; ``from_dlpack`` consumes one. rebind's
arrays are NumPy or CuPy arrays, which produce and consume such capsules
themselves, so the capsule is theirs and the memory is always shared.

rebind runs every operation when it is called (no dependency engine), so the
read and the write capsule are the same capsule, made after the device has
finished its pending work. As in MXNet, the array ``from_dlpack`` makes is
writable, whatever the producer said.

MXNet scripts that consume a capsule themselves through the C API
(``_LIB.MXNDArrayFromDLPack(pointer, byref(handle))`` then
``NDArray(handle=handle)``) work too: those functions are registered on
``mx.base._LIB`` here.
"""

import ctypes

import numpy as np

from ..base import _LIB
from ..context import cpu
from .ndarray import NDArray

__all__ = ["from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write"]

_DLTENSOR = b"dltensor"  # lives as long as the module: capsules keep a pointer to it
# private prototypes: the shared ctypes.pythonapi functions keep the types MXNet gives them
_capsule_new = ctypes.PYFUNCTYPE(
    ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p
)(("PyCapsule_New", ctypes.pythonapi))
_capsule_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
    ("PyCapsule_GetName", ctypes.pythonapi)
)
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)


def to_dlpack_for_read(data):
    """A ``"dltensor"`` capsule viewing ``data``'s memory, for another library to read."""
    data.wait_to_read()
    return data.data.__dlpack__()


def to_dlpack_for_write(data):
    """A ``"dltensor"`` capsule viewing ``data``'s memory; writes through it change ``data``.

    It is the classic capsule MXNet hands out, which PyTorch-style consumers
    take; ``mx.nd.from_dlpack`` makes a writable array of it.
    """
    data.wait_to_write()
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
    name = _capsule_name(capsule)
    if name not in _DEVICE_OFFSET:
        raise TypeError(
            f"from_dlpack takes a DLPack capsule or an object with __dlpack__; got a capsule "
            f"named {name!r} (a capsule named 'used_dltensor' was consumed already)"
        )
    pointer = _capsule_pointer(capsule, name)
    device = _DLDevice.from_address(pointer + _DEVICE_OFFSET[name])
    return device.device_type, device.device_id


class _Capsule:
    """Presents a bare DLPack capsule through the ``__dlpack__`` protocol (NumPy 2 needs it)."""

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
    through CuPy (when it is installed). A capsule is consumed: it can be
    taken once.
    """
    if isinstance(dlpack, NDArray):
        return NDArray(dlpack.data, dlpack.context)
    source = dlpack if hasattr(dlpack, "__dlpack__") else _Capsule(dlpack)
    device_type, device_id = source.__dlpack_device__()
    if device_type == 1:  # kDLCPU
        return NDArray(writable(np.from_dlpack(source)), cpu(0))
    return _from_device_dlpack(source, device_id)


def _from_device_dlpack(source, device_id):
    try:
        import cupy
    except ImportError:
        raise RuntimeError(
            "from_dlpack: the tensor lives on a GPU and CuPy is not installed "
            "(pip install 'rebind[gpu]' or 'rebind[gpu-cuda13]')"
        ) from None
    from ..context import gpu

    return NDArray(cupy.from_dlpack(source), gpu(device_id))


def writable(host):
    """``host`` itself, or a writable view of a read-only NumPy array's memory.

    MXNet takes the raw pointer of what it is given and writes through it;
    NumPy marks what it imports from a classic capsule (and what ``from_numpy``
    handed over) read-only, and refuses to make a view of it writable.
    """
    return host if host.flags.writeable else np.asarray(_Memory(host))


class _Memory:
    """A read-only NumPy array's memory, offered writable through the array interface."""

    def __init__(self, owner):
        self.owner = owner  # keeps the memory alive as long as the view
        self.__array_interface__ = {**owner.__array_interface__, "data": (owner.ctypes.data, False)}


# -- the C API functions MXNet scripts call to consume a capsule themselves ---------
def _from_dlpack_pointer(dlpack, out):
    """``MXNDArrayFromDLPack``: a handle, in ``out``, to an array over a DLManagedTensor.

    ``dlpack`` points to the ``DLManagedTensor`` of a ``"dltensor"`` capsule
    the caller has taken over; the array becomes its owner and calls its
    deleter when it is freed.
    """
    pointer = dlpack.value if isinstance(dlpack, ctypes.c_void_p) else dlpack
    if not pointer:
        raise ValueError("MXNDArrayFromDLPack: the DLManagedTensor pointer is NULL")
    array = from_dlpack(_capsule_new(pointer, _DLTENSOR, None))
    _LIB.new_handle((array.data, array.context), out)
    return 0


def _from_dlpack_pointer_ex(dlpack, transient_handle, out):
    """``MXNDArrayFromDLPackEx``: as ``MXNDArrayFromDLPack``; ``transient_handle`` is unused."""
    return _from_dlpack_pointer(dlpack, out)


_LIB.register("MXNDArrayFromDLPack", _from_dlpack_pointer)
_LIB.register("MXNDArrayFromDLPackEx", _from_dlpack_pointer_ex)
