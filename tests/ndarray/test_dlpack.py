"""DLPack exchange (rebind.ndarray.dlpack) and the C-API path MXNet's test_dlpack.py takes.

The capsule is read here with ctypes as a C consumer (PyTorch's
``from_dlpack``) reads it: the DLManagedTensor layout comes from dlpack.h.
"""

import ctypes
import gc

import numpy as np
import pytest

import rebind as mx
from rebind.base import _LIB, MXNetError, NDArrayHandle, c_str, check_call


class DLTensor(ctypes.Structure):
    """dlpack.h's DLTensor (DLPack 0.x, the layout of a "dltensor" capsule)."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device_type", ctypes.c_int32),
        ("device_id", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("code", ctypes.c_uint8),
        ("bits", ctypes.c_uint8),
        ("lanes", ctypes.c_uint16),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


def capsule_tensor(capsule):
    """The DLTensor of a valid "dltensor" capsule, as a C consumer sees it."""
    assert ctypes.pythonapi.PyCapsule_IsValid(ctypes.py_object(capsule), c_str("dltensor"))
    pointer = ctypes.pythonapi.PyCapsule_GetPointer(ctypes.py_object(capsule), c_str("dltensor"))
    return DLTensor.from_address(pointer)


def consume_as_mxnet_did(capsule):
    """MXNet 1.9.1's from_dlpack, through the C API (test_dlpack.py's from_dlpack_old)."""
    handle = NDArrayHandle()
    capsule = ctypes.py_object(capsule)
    pointer = ctypes.c_void_p(ctypes.pythonapi.PyCapsule_GetPointer(capsule, c_str("dltensor")))
    check_call(_LIB.MXNDArrayFromDLPack(pointer, ctypes.byref(handle)))
    ctypes.pythonapi.PyCapsule_SetName(capsule, c_str("used_dltensor"))
    ctypes.pythonapi.PyCapsule_SetDestructor(capsule, None)
    return mx.nd.NDArray(handle=handle)


@pytest.mark.parametrize("make", [mx.nd.to_dlpack_for_read, mx.nd.to_dlpack_for_write])
def test_capsule_is_a_dltensor_over_the_arrays_memory(make):
    x = mx.nd.array(np.arange(6).reshape(2, 3), dtype="float32")
    capsule = make(x)  # the DLTensor lives as long as its capsule
    tensor = capsule_tensor(capsule)
    assert tensor.data + tensor.byte_offset == x.data.ctypes.data  # shared, not copied
    assert (tensor.device_type, tensor.device_id, tensor.ndim) == (1, 0, 2)
    assert (tensor.code, tensor.bits, tensor.lanes) == (2, 32, 1)  # kDLFloat, 32 bits
    assert [tensor.shape[i] for i in range(2)] == [2, 3]


def test_mxnet_c_api_consumer_shares_the_memory():
    x = mx.nd.ones((2, 3))
    z = consume_as_mxnet_did(mx.nd.to_dlpack_for_read(x))
    np.testing.assert_array_equal(z.asnumpy(), np.ones((2, 3)))
    assert z.context == mx.cpu(0) and z.dtype is np.float32
    z[0, 1] = 7  # MXNet's arrays over a capsule are writable
    assert x.asnumpy()[0, 1] == 7


def test_write_capsule_round_trip_writes_through_as_mxnet_documents():
    x = mx.nd.ones((2, 3))
    u = mx.nd.from_dlpack(x.to_dlpack_for_write())
    u += 1
    np.testing.assert_array_equal(x.asnumpy(), np.full((2, 3), 2.0))
    v = mx.nd.from_dlpack(mx.nd.to_dlpack_for_read(x))
    v[1, 2] = -1  # a read capsule shares the memory too (MXNet makes no copy either)
    assert x.asnumpy()[1, 2] == -1


def test_memory_outlives_the_producing_array():
    x = mx.nd.array([1.0, 2.0, 3.0])
    z = consume_as_mxnet_did(mx.nd.to_dlpack_for_read(x))
    y = mx.nd.from_dlpack(mx.nd.to_dlpack_for_write(x))
    del x
    gc.collect()
    np.testing.assert_array_equal(z.asnumpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(y.asnumpy(), [1.0, 2.0, 3.0])


def test_from_dlpack_takes_an_object_with_dlpack_and_shares_it():
    host = np.arange(4, dtype=np.float64)
    array = mx.nd.from_dlpack(host)
    assert array.dtype is np.float64 and np.shares_memory(array.data, host)
    array[0] = 9
    assert host[0] == 9
    readonly = np.arange(3, dtype=np.int32)
    readonly.flags.writeable = False
    made = mx.nd.from_dlpack(readonly)
    made[2] = 5  # MXNet writes through whatever memory it is handed
    assert readonly[2] == 5


class CapsuleHolder:
    """A producer as NumPy 2 consumes it: it hands out a capsule through __dlpack__."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def test_numpy_consumes_rebinds_capsule_without_a_copy():
    x = mx.nd.array(np.arange(6).reshape(3, 2), dtype="int64")
    seen = np.from_dlpack(CapsuleHolder(mx.nd.to_dlpack_for_read(x)))
    assert seen.dtype == np.int64 and np.shares_memory(seen, x.data)
    np.testing.assert_array_equal(np.from_dlpack(x), x.asnumpy())  # the NDArray itself too


def test_a_capsule_is_consumed_once():
    capsule = mx.nd.to_dlpack_for_read(mx.nd.ones((2,)))
    mx.nd.from_dlpack(capsule)
    with pytest.raises(TypeError, match="consumed already"):
        mx.nd.from_dlpack(capsule)


def test_c_api_refusals_name_what_is_missing():
    with pytest.raises(MXNetError, match="no array is kept under this handle"):
        mx.nd.NDArray(handle=NDArrayHandle(123456789))
    with pytest.raises(NotImplementedError, match="MXNDArrayCreate.*no C library"):
        _LIB.MXNDArrayCreate  # noqa: B018 - the attribute access is what raises
    with pytest.raises(ValueError, match="NULL"):
        _LIB.MXNDArrayFromDLPack(ctypes.c_void_p(), ctypes.byref(NDArrayHandle()))
    with pytest.raises(MXNetError, match="returned -1"):
        check_call(-1)
    check_call(0)
    assert c_str("dltensor").value == b"dltensor"


def test_a_handle_is_taken_once():
    handle = NDArrayHandle()
    capsule = ctypes.py_object(mx.nd.to_dlpack_for_read(mx.nd.ones((1,))))
    pointer = ctypes.pythonapi.PyCapsule_GetPointer(capsule, c_str("dltensor"))
    _LIB.MXNDArrayFromDLPackEx(ctypes.c_void_p(pointer), False, ctypes.pointer(handle))
    ctypes.pythonapi.PyCapsule_SetName(capsule, c_str("used_dltensor"))
    ctypes.pythonapi.PyCapsule_SetDestructor(capsule, None)
    assert mx.nd.NDArray(handle=handle).asnumpy().tolist() == [1.0]
    with pytest.raises(MXNetError, match="taken once"):
        mx.nd.NDArray(handle=handle)
