"""Sparse parts on the host: validity checks and MXNet's sparse file records.

``check_parts`` is ``check_format``'s rule book (MXNet's CheckFormat: csr
indptr starts at 0, never decreases, ends at nnz, columns ascend within a row
and lie in range; row_sparse indices ascend and lie in range). ``SparseRecord``
is what the file codec (``fileformat``) reads and writes for storage types 1
(row_sparse) and 2 (csr); this module turns records into dense values for the
readers that want those, and never imports the codec.
"""

import math
from typing import NamedTuple

import numpy as np

__all__ = [
    "STORAGE_IDS",
    "SparseRecord",
    "check_parts",
    "densify",
    "record_shapes",
    "validate_record",
]

STORAGE_IDS = {"row_sparse": 1, "csr": 2}  # the file's storage type field
MAX_SPARSE_DENSE_BYTES = 2**30  # densifying a loaded record: bound a corrupted shape


class SparseRecord(NamedTuple):
    """A sparse array on the host: ``values``, ``aux`` (MXNet's aux order), logical ``shape``."""

    stype: str
    values: np.ndarray
    aux: tuple
    shape: tuple


def record_shapes(record):
    """(storage shape, aux shapes) as MXNet writes them for ``record``."""
    return tuple(record.values.shape), [tuple(a.shape) for a in record.aux]


def check_parts(stype, values, aux, shape, full_check=True):
    """Raise ValueError naming the fault unless the parts form a valid ``stype`` array."""
    if stype == "csr":
        _check_csr(values, aux[0], aux[1], shape, full_check)
    elif stype == "row_sparse":
        _check_row_sparse(values, aux[0], shape, full_check)
    else:
        raise ValueError(f"unknown storage type {stype!r}")


def _check_csr(values, indptr, indices, shape, full_check):
    if len(shape) != 2 or values.ndim != 1 or indptr.ndim != 1 or indices.ndim != 1:
        raise ValueError(
            f"csr parts of ndim {values.ndim}/{indptr.ndim}/{indices.ndim} do not fit shape {shape}"
        )
    if indptr.shape[0] != shape[0] + 1:
        raise ValueError(
            f"indptr has {indptr.shape[0]} entries, expected {shape[0] + 1} "
            f"(rows + 1) for shape {shape}"
        )
    if indices.shape[0] != values.shape[0]:
        raise ValueError(f"{indices.shape[0]} column indices for {values.shape[0]} values")
    if not full_check:
        return
    pointers = indptr.astype(np.int64)
    if pointers[0] != 0 or (np.diff(pointers) < 0).any():
        raise ValueError(f"indptr {pointers.tolist()[:8]}... must start at 0 and never decrease")
    if pointers[-1] != indices.shape[0]:
        raise ValueError(f"indptr ends at {pointers[-1]}, expected nnz = {indices.shape[0]}")
    _check_range(indices, shape[1], "column index")
    rows = np.repeat(np.arange(shape[0]), np.diff(pointers))
    same_row = rows[1:] == rows[:-1]
    if (np.diff(indices.astype(np.int64))[same_row] <= 0).any():
        raise ValueError("column indices must ascend strictly within each row")


def _check_row_sparse(values, indices, shape, full_check):
    if len(shape) < 1 or values.ndim != len(shape) or tuple(values.shape[1:]) != shape[1:]:
        raise ValueError(f"stored rows of shape {values.shape} do not fit shape {shape}")
    if indices.ndim != 1 or indices.shape[0] != values.shape[0]:
        raise ValueError(f"indices of shape {indices.shape} for {values.shape[0]} stored rows")
    if not full_check:
        return
    _check_range(indices, shape[0], "row index")
    if (np.diff(indices.astype(np.int64)) <= 0).any():
        raise ValueError("row indices must ascend strictly")


def _check_range(indices, bound, what):
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= bound):
        raise ValueError(f"{what} out of range 0..{bound - 1}")


def validate_record(record):
    """Check a loaded record's shapes, index ranges and uniqueness; ValueError if broken.

    Looser than ``check_parts`` (unsorted indices load, as MXNet loads them) but
    strict enough that densifying the record is well defined.
    """
    values, aux, shape = record.values, record.aux, record.shape
    if record.stype == "row_sparse":
        indices = aux[0]
        if len(shape) < 1 or values.shape[1:] != shape[1:] or values.ndim != len(shape):
            raise ValueError(f"storage shape {values.shape} does not fit shape {shape}")
        if indices.shape != values.shape[:1]:
            raise ValueError(f"indices shape {indices.shape} for {len(values)} rows")
        _check_range(indices, shape[0], "row index")
        if np.unique(indices).size != indices.size:
            raise ValueError("duplicate row indices")
        return
    indptr, indices = aux
    nnz = values.shape[0] if values.ndim == 1 else -1
    if len(shape) != 2 or indptr.shape != (shape[0] + 1,) or indices.shape != (nnz,):
        raise ValueError(
            f"values {values.shape}, indptr {indptr.shape} and "
            f"indices {indices.shape} do not fit shape {shape}"
        )
    steps = np.diff(indptr.astype(np.int64))
    if indptr[0] != 0 or indptr[-1] != nnz or (steps < 0).any():
        raise ValueError("indptr is not a non-decreasing 0..nnz sequence")
    _check_range(indices, shape[1], "column index")
    rows = np.repeat(np.arange(shape[0], dtype=np.int64), steps)
    if np.unique(rows * shape[1] + indices.astype(np.int64)).size != nnz:
        raise ValueError("duplicate (row, column) entries")


def densify(record):
    """The dense NumPy array of a validated ``record``; ValueError if too large."""
    from .sparse_convert import TO_DENSE

    if math.prod(record.shape) * record.values.itemsize > MAX_SPARSE_DENSE_BYTES:
        raise ValueError(f"dense shape {record.shape} exceeds {MAX_SPARSE_DENSE_BYTES} bytes")
    return TO_DENSE[record.stype](np, record.values, record.aux, record.shape)
