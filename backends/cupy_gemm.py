"""Matrix products of a training step straight through cuBLAS, without CuPy's matmul around them.

``cupy.matmul`` of two small matrices cost 31 µs of host time a call in the
MLP of ``benchmarks/gpu.py`` and 57 µs in LeNet (cProfile on the lent H100 and
H200 machines; 149 calls a batch in the LSTM LM), around cuBLAS's own call,
which took 16-25 µs there: broadcasting, dtype and layout analysis,
compute-type selection. A step of a small network is bound by that host
time, not by the device. ``matmul`` here takes the common case,
two 2-D float32 or float64 CuPy arrays each C- or F-contiguous (a matrix or
the transpose of one), and calls ``cublas<S|D>gemm`` on the current stream
with the transposes read off the layouts, into a new C-contiguous result (or
``out``). Everything else, and large products whose host cost is nothing
beside the device's, goes to ``xp.matmul`` as before. NumPy arrays go to
NumPy's matmul.

The arithmetic is cuBLAS's GEMM in FP32 (FP64) either way; only the algorithm
cuBLAS picks may differ from the one behind CuPy's matmul, so results may
differ from it in the last bits, as two CuPy versions may.

Row-major ``C = A @ B`` is column-major ``C^T = B^T A^T``: a C-contiguous
``(r, c)`` array is, read column-major, its transpose with leading dimension
``c``; an F-contiguous one is itself with leading dimension ``r``. So the
call is ``gemm(op(B), op(A), n, m, k, B, ldb, A, lda, C, n)`` with ``op`` N
for C-contiguous operands and T for F-contiguous ones (``gemm_arguments``).

Importing this module does not import CuPy.
"""

import numpy as np

from .cupy_kernels import fusable

__all__ = ["gemm_arguments", "matmul"]

# products of at most this many multiply-adds go straight to cuBLAS (a 512 x 512 x 512
# product is 2**27); past it the host's 30 µs are nothing beside the device's time
DIRECT_MAX_MACS = 1 << 27
_OP_N, _OP_T = 0, 1  # cublasOperation_t
_POINTER_MODE_HOST = 0
_INT_MAX = 2**31 - 1

_state = {}  # "lib": (cublas module, handle getter, {dtype: (gemm, one, zero)}) or None


def _library(cupy):
    lib = _state.get("lib", 0)
    if lib != 0:
        return lib
    lib = None
    try:
        from cupy_backends.cuda.libs import cublas  # noqa: PLC0415 (CuPy only when used)

        needed = ("sgemm", "dgemm", "setStream", "setPointerMode")
        # CuPy >= 9 passes alpha and beta by pointer (earlier ones took floats)
        if int(cupy.__version__.split(".")[0]) >= 9 and all(hasattr(cublas, n) for n in needed):
            scalars = {}
            for dtype, gemm in ((np.float32, cublas.sgemm), (np.float64, cublas.dgemm)):
                one, zero = np.ones(1, dtype), np.zeros(1, dtype)
                # the arrays stay alive in the tuple; cuBLAS reads them through the pointers
                scalars[np.dtype(dtype)] = (gemm, one.ctypes.data, zero.ctypes.data, one, zero)
            lib = (cublas, cupy.cuda.device.get_cublas_handle, scalars)
    except (ImportError, AttributeError, ValueError):
        lib = None
    _state["lib"] = lib
    return lib


def gemm_arguments(a_shape, a_c_contiguous, b_shape, b_c_contiguous):
    """``(op_b, op_a, n, m, k, ldb, lda, ldc)`` of the column-major GEMM giving ``A @ B``.

    Each operand is C-contiguous (``*_c_contiguous``) or else F-contiguous.
    """
    m, k = a_shape
    n = b_shape[1]
    op_a, lda = (_OP_N, max(k, 1)) if a_c_contiguous else (_OP_T, max(m, 1))
    op_b, ldb = (_OP_N, max(n, 1)) if b_c_contiguous else (_OP_T, max(k, 1))
    return op_b, op_a, n, m, k, ldb, lda, max(n, 1)


def matmul(xp, a, b, out=None, accumulate=False):
    """``a @ b`` (into ``out`` when given), through cuBLAS directly where it can be.

    With ``accumulate``, ``out += a @ b``: on the direct path one GEMM with
    beta 1, no temporary (elsewhere the product, then the addition).
    """
    if accumulate:
        if out is None:
            raise ValueError("matmul(accumulate=True) adds into out: give out")
        if xp is np or a.ndim != 2 or b.ndim != 2 or _direct(xp, a, b, out, beta=1) is None:
            out += matmul(xp, a, b)
        return out
    if xp is np:
        return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
    if a.ndim == 3 and b.ndim == 3 and a.shape[0] == 1 and b.shape[0] == 1:
        # one group of a grouped product (a convolution's): the 2-D product, re-shaped
        if out is None:
            result = _direct(xp, a[0], b[0], None)
            if result is not None:
                return result[None]
        elif out.ndim == 3 and out.shape[0] == 1 and out.flags.c_contiguous:
            if _direct(xp, a[0], b[0], out[0]) is not None:
                return out
    elif a.ndim == 2 and b.ndim == 2:
        result = _direct(xp, a, b, out)
        if result is not None:
            return result
    return xp.matmul(a, b) if out is None else xp.matmul(a, b, out=out)


def _direct(cupy, a, b, out, beta=0):
    """The product through ``cublas<S|D>gemm``, or None where this path does not apply.

    ``beta`` 1 adds it to ``out`` (given).
    """
    m, k = a.shape
    k2, n = b.shape
    if k != k2 or not (m and n and k) or m * n * k > DIRECT_MAX_MACS or max(m, n, k) > _INT_MAX:
        return None
    if not fusable(a, b):  # CuPy arrays, float32 or float64, one dtype
        return None
    a_flags, b_flags = a.flags, b.flags
    a_c, b_c = a_flags.c_contiguous, b_flags.c_contiguous
    if not (a_c or a_flags.f_contiguous) or not (b_c or b_flags.f_contiguous):
        return None
    if out is not None and (
        out.shape != (m, n) or out.dtype != a.dtype or not out.flags.c_contiguous
    ):
        return None
    lib = _library(cupy)
    if lib is None:
        return None
    cublas, get_handle, scalars = lib
    device = a.data.device_id
    if b.data.device_id != device or cupy.cuda.runtime.getDevice() != device:
        return None
    gemm, one, zero, _, _ = scalars[a.dtype]
    beta_at = one if beta else zero
    result = cupy.empty((m, n), dtype=a.dtype) if out is None else out
    op_b, op_a, n_, m_, k_, ldb, lda, ldc = gemm_arguments(a.shape, a_c, b.shape, b_c)
    handle = get_handle()
    cublas.setStream(handle, cupy.cuda.get_current_stream().ptr)
    cublas.setPointerMode(handle, _POINTER_MODE_HOST)
    gemm(
        handle, op_b, op_a, n_, m_, k_, one, b.data.ptr, ldb,
        a.data.ptr, lda, beta_at, result.data.ptr, ldc,
    )  # fmt: skip
    return result
