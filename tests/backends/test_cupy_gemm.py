"""The direct cuBLAS products (backends/cupy_gemm.py).

The column-major argument mapping is checked on the CPU against a GEMM
simulated on the operands' own memory; the products themselves on a GPU.
"""

import itertools

import numpy as np
import pytest

from rebind import registry
from rebind.backends import cupy_gemm
from rebind.backends.cupy_gemm import gemm_arguments

_N, _T = 0, 1
SHAPES = [(3, 4, 5), (1, 4, 5), (3, 1, 5), (3, 4, 1), (1, 1, 1), (7, 2, 3)]


def _memory(array):
    """The operand's memory in address order (what cuBLAS reads through its pointer)."""
    return array.ravel(order="C" if array.flags.c_contiguous else "F").copy()


def _column_major(memory, rows, cols, ld):
    item = memory.itemsize
    return np.lib.stride_tricks.as_strided(memory, (rows, cols), (item, ld * item))


def _simulated_gemm(op_x, op_y, rows, cols, inner, x_memory, ldx, y_memory, ldy, ldc):
    """cuBLAS's column-major C(rows x cols) = op(X)(rows x inner) . op(Y)(inner x cols)."""
    x = _column_major(x_memory, *((rows, inner) if op_x == _N else (inner, rows)), ldx)
    y = _column_major(y_memory, *((inner, cols) if op_y == _N else (cols, inner)), ldy)
    x = x if op_x == _N else x.T
    y = y if op_y == _N else y.T
    assert ldc >= rows
    return x @ y


def _layout(array, c_order):
    return np.ascontiguousarray(array) if c_order else np.asfortranarray(array)


@pytest.mark.parametrize("m, k, n", SHAPES)
@pytest.mark.parametrize("a_c, b_c", list(itertools.product([True, False], repeat=2)))
def test_the_column_major_call_computes_the_row_major_product(m, k, n, a_c, b_c):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a = _layout(rng.standard_normal((m, k)), a_c)
    b = _layout(rng.standard_normal((k, n)), b_c)
    if m > 1 and k > 1:
        assert a.flags.c_contiguous is a_c  # the layout asked for, not both
    op_b, op_a, n_, m_, k_, ldb, lda, ldc = gemm_arguments(a.shape, a_c, b.shape, b_c)
    c_column_major = _simulated_gemm(op_b, op_a, n_, m_, k_, _memory(b), ldb, _memory(a), lda, ldc)
    # the (n x m) column-major result is the row-major (m x n) product, memory for memory
    np.testing.assert_allclose(c_column_major.T, a @ b, rtol=1e-12)


def test_numpy_operands_go_to_numpy():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(cupy_gemm.matmul(np, a, b), a @ b)
    out = np.empty((2, 4))
    assert cupy_gemm.matmul(np, a, b, out=out) is out
    np.testing.assert_array_equal(out, a @ b)


def test_accumulating_adds_the_product_into_out():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    out = np.full((2, 4), 0.5)
    assert cupy_gemm.matmul(np, a, b, out=out, accumulate=True) is out
    np.testing.assert_array_equal(out, a @ b + 0.5)
    with pytest.raises(ValueError, match="give out"):
        cupy_gemm.matmul(np, a, b, accumulate=True)


def _cupy_or_skip():
    backend = registry.lookup("backends", "cupy")
    reason = backend.unavailable_reason()
    if reason is not None:
        pytest.skip(f"cupy backend unavailable: {reason}")
    return backend.xp


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_direct_products_equal_cupys_for_every_layout(dtype):
    cupy = _cupy_or_skip()
    rng = np.random.default_rng(0)
    for (m, k, n), a_c, b_c in itertools.product(SHAPES + [(64, 300, 128)], *[[True, False]] * 2):
        a = cupy.asarray(_layout(rng.standard_normal((m, k)).astype(dtype), a_c))
        b = cupy.asarray(_layout(rng.standard_normal((k, n)).astype(dtype), b_c))
        expected = cupy.matmul(a, b)
        got = cupy_gemm.matmul(cupy, a, b)
        assert got.flags.c_contiguous and got.dtype == a.dtype and got.shape == (m, n)
        tolerance = 1e-5 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(got.get(), expected.get(), rtol=tolerance, atol=tolerance)
        out = cupy.full((m, n), 7, dtype=dtype)
        assert cupy_gemm.matmul(cupy, a, b, out=out) is out
        np.testing.assert_allclose(out.get(), expected.get(), rtol=tolerance, atol=tolerance)
        # beta 1: added to what out holds
        assert cupy_gemm.matmul(cupy, a, b, out=out, accumulate=True) is out
        np.testing.assert_allclose(out.get(), 2 * expected.get(), rtol=tolerance, atol=tolerance)


@pytest.mark.gpu
def test_a_single_group_and_what_the_direct_path_leaves_to_cupy():
    cupy = _cupy_or_skip()
    rng = np.random.default_rng(1)
    w = cupy.asarray(rng.standard_normal((1, 5, 12)).astype(np.float32))
    cols = cupy.asarray(rng.standard_normal((12, 9)).astype(np.float32))
    grouped = cupy_gemm.matmul(cupy, w, cols.reshape(1, 12, 9))
    assert grouped.shape == (1, 5, 9)
    np.testing.assert_allclose(grouped.get(), (w @ cols[None]).get(), rtol=1e-5, atol=1e-5)
    out = cupy.empty((1, 12, 9), np.float32)
    assert cupy_gemm.matmul(cupy, w.transpose(0, 2, 1), grouped, out=out) is out
    np.testing.assert_allclose(
        out.get(), cupy.matmul(w.transpose(0, 2, 1), grouped).get(), rtol=1e-5, atol=1e-5
    )
    strided = cupy.asarray(rng.standard_normal((6, 8)).astype(np.float32))[:, ::2]
    square = cupy.asarray(rng.standard_normal((4, 4)).astype(np.float32))
    integers = cupy.arange(16, dtype=cupy.int32).reshape(4, 4)
    for a, b in ((strided, square), (integers, integers), (square.astype(np.float16),) * 2):
        np.testing.assert_allclose(
            cupy_gemm.matmul(cupy, a, b).get(), cupy.matmul(a, b).get(), rtol=1e-3
        )
