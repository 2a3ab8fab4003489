"""Storage conversions of backend arrays: dense <-> csr, dense <-> row_sparse.

Kernels written once against the array namespace ``xp`` (NumPy or CuPy), on
the parts a sparse NDArray holds: ``values`` and the aux arrays in MXNet's aux
order (csr: ``(indptr, indices)``; row_sparse: ``(indices,)``), all indices
int64 as MXNet stores them. Knows nothing of NDArray; ``sparse_array`` wraps.

A dense form is made only when it fits: ``check_dense_fits`` refuses, naming
the shape and the bytes, a conversion whose result exceeds the memory free
where it would live.
"""

import math
import os

import numpy as np

from ..errors import RebindError

__all__ = [
    "AUX_DTYPE",
    "DenseTooLargeError",
    "check_dense_fits",
    "csr_to_dense",
    "dense_to_csr",
    "dense_to_row_sparse",
    "row_sparse_to_dense",
]

AUX_DTYPE = np.dtype(np.int64)  # MXNet's aux type of indptr and indices (kInt64)


class DenseTooLargeError(RebindError, MemoryError):
    """A sparse array's dense form would not fit in the memory free for it."""


def _host_free_bytes():
    """Bytes the host can still hand out (MemAvailable), or None where unknown."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def free_bytes(ctx):
    """Bytes free where ``ctx``'s arrays live (the device's memory, else the host's)."""
    try:
        free, _total = ctx.backend.memory_info(ctx.device_id)
        return free
    except NotImplementedError:
        return _host_free_bytes()


def check_dense_fits(shape, dtype, ctx, what):
    """Raise DenseTooLargeError if a dense ``shape`` array of ``dtype`` exceeds free memory."""
    needed = math.prod(shape) * np.dtype(dtype).itemsize
    free = free_bytes(ctx)
    if free is not None and needed > free:
        raise DenseTooLargeError(
            f"{what}: the dense form of shape {tuple(shape)} ({np.dtype(dtype).name}) takes "
            f"{needed} bytes but only {free} bytes are free on {ctx}; keep the array sparse "
            "(use operators with sparse support, or .data/.indices to work on its parts)"
        )


def dense_to_csr(xp, dense):
    """``(values, (indptr, indices))`` of a 2-d dense array; columns ascend within rows."""
    if dense.ndim != 2:
        raise ValueError(
            f"csr storage is 2-dimensional, got an array of shape {tuple(dense.shape)}; "
            "reshape it to 2-d first"
        )
    mask = dense != 0
    rows, cols = xp.nonzero(mask)  # row-major order: sorted columns in each row
    counts = mask.sum(axis=1, dtype=AUX_DTYPE)
    indptr = xp.zeros(dense.shape[0] + 1, dtype=AUX_DTYPE)
    xp.cumsum(counts, out=indptr[1:])
    values = xp.ascontiguousarray(dense[rows, cols])
    return values, (indptr, cols.astype(AUX_DTYPE))


def dense_to_row_sparse(xp, dense):
    """``(values, (indices,))``: the rows of ``dense`` holding any non-zero, ascending."""
    if dense.ndim < 1:
        raise ValueError("row_sparse storage needs at least one dimension, got a 0-d array")
    flat = dense.reshape(dense.shape[0], -1)
    keep = (flat != 0).any(axis=1)
    indices = xp.nonzero(keep)[0].astype(AUX_DTYPE)
    return xp.ascontiguousarray(dense[indices]), (indices,)


def csr_rows(xp, indptr):
    """The row of each stored element of a csr array (int64).

    Element ``k`` lies in the row counting the row ends ``indptr[1:]`` that are
    <= k; a search rather than ``repeat``, whose counts CuPy takes only from the host.
    """
    stored = xp.arange(int(indptr[-1]), dtype=AUX_DTYPE)
    return xp.searchsorted(indptr[1:], stored, side="right").astype(AUX_DTYPE)


def csr_to_dense(xp, values, aux, shape):
    """The dense array of a csr array's parts (a later duplicate entry wins, as MXNet's kernel)."""
    indptr, indices = aux
    dense = xp.zeros(shape, dtype=values.dtype)
    if values.size:
        dense[csr_rows(xp, indptr), indices] = values
    return dense


def row_sparse_to_dense(xp, values, aux, shape):
    """The dense array of a row_sparse array's parts."""
    dense = xp.zeros(shape, dtype=values.dtype)
    if values.size:
        dense[aux[0]] = values
    return dense


def empty_parts(xp, stype, shape, dtype):
    """The parts of an all-zero sparse array of ``shape``: no stored element."""
    values = xp.zeros((0,) + tuple(shape[1:]) if stype == "row_sparse" else (0,), dtype=dtype)
    if stype == "row_sparse":
        return values, (xp.zeros(0, dtype=AUX_DTYPE),)
    return values, (xp.zeros(shape[0] + 1, dtype=AUX_DTYPE), xp.zeros(0, dtype=AUX_DTYPE))


TO_DENSE = {"csr": csr_to_dense, "row_sparse": row_sparse_to_dense}
FROM_DENSE = {"csr": dense_to_csr, "row_sparse": dense_to_row_sparse}
