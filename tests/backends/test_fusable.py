"""``fusable``: which arrays the fused CuPy kernels take, checked on stand-in CuPy arrays."""

from types import SimpleNamespace

import numpy as np
import pytest

from rebind.backends.cupy_kernels import fusable, is_cupy_array


class FakeCupyArray:
    """What fusable reads of a CuPy array: its type's module, dtype, shape and flags."""

    def __init__(self, shape=(2, 3), dtype="float32", contiguous=True):
        self.shape, self.dtype = shape, np.dtype(dtype)
        self.flags = SimpleNamespace(c_contiguous=contiguous)


FakeCupyArray.__module__ = "cupy._core.fake"


def test_cupy_arrays_are_told_from_others_by_their_type():
    assert is_cupy_array(FakeCupyArray()) and is_cupy_array(FakeCupyArray())  # cached type
    assert not is_cupy_array(np.ones(2)) and not is_cupy_array(None)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cupy_floats_of_one_dtype_are_taken(dtype):
    a, b = FakeCupyArray(dtype=dtype), FakeCupyArray(dtype=dtype)
    assert fusable(a, b) is True
    assert fusable(None, a, None, b) is True  # absent states are skipped


def test_anything_else_runs_the_array_operations():
    a = FakeCupyArray()
    assert fusable() is False and fusable(None) is False
    assert fusable(np.ones(2, np.float32)) is False  # NumPy: the CPU
    assert fusable(a, np.ones((2, 3), np.float32)) is False
    assert fusable(FakeCupyArray(dtype="float16")) is False
    assert fusable(FakeCupyArray(dtype="int32")) is False
    assert fusable(a, FakeCupyArray(dtype="float64")) is False  # mixed dtypes


def test_shape_and_contiguity_are_checked_only_when_asked():
    a, other_shape = FakeCupyArray(), FakeCupyArray(shape=(3, 2))
    strided = FakeCupyArray(contiguous=False)
    assert fusable(a, other_shape) is True
    assert fusable(a, other_shape, same_shape=True) is False
    assert fusable(a, FakeCupyArray(), same_shape=True) is True
    assert fusable(a, strided) is True
    assert fusable(a, strided, contiguous=True) is False
    assert fusable(strided, a, contiguous=True) is False
    assert fusable(a, None, FakeCupyArray(), contiguous=True) is True
