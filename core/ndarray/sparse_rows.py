"""Row access for updates that write dense or row_sparse arrays in place.

Shared by the optimizers' sparse updates (``optimizer/sparse_updates.py``)
and the update operators called on row_sparse arrays
(``imperative_sparse_update.py``): MXNet's update kernels write a
row_sparse weight or state through its stored values, which must then hold
every row (``CheckAllRowsPresent``); a row_sparse state holding no row yet is
first given every row, as zeros (``FillDnsZerosRspImpl``).
"""

import numpy as np

from ..base import MXNetError

__all__ = ["full_rows", "stype_of", "store_every_row", "touched", "update_rows"]


def stype_of(array):
    """The storage type of ``array`` ('default' for dense NDArrays and None)."""
    return getattr(array, "stype", "default") if array is not None else "default"


def full_rows(array, owner, what, zero_fill=False):
    """The backend array holding every row of ``array``, which updates write in place.

    A dense NDArray gives its own array; a row_sparse one its values, which
    must hold every row; with ``zero_fill`` (states) an array holding no row
    is first given every row, as zeros.
    """
    if stype_of(array) == "default":
        return array._data
    if stype_of(array) != "row_sparse":
        raise MXNetError(
            f"{owner}: {what} has storage type {array.stype!r}; updates write dense or "
            "row_sparse arrays"
        )
    rows, stored = array.shape[0], array._values.shape[0]
    xp = array.context.backend.xp
    if zero_fill and stored == 0:
        array._values = xp.zeros(array.shape, dtype=array._values.dtype)
        array._aux = (xp.arange(rows, dtype=np.int64),)
        array._version += 1
        return array._values
    if stored != rows:
        raise MXNetError(
            f"{owner} for RowSparse {what} is only implemented for RowSparse {what} with all "
            f"rows containing non-zeros. Expects {what}.data.shape[0] ({stored}) == "
            f"{what}.shape[0] ({rows}); initialize it with every row (e.g. "
            "mx.nd.ones(shape).tostype('row_sparse') or an initializer)"
        )
    return array._values


def store_every_row(array):
    """Make a row_sparse ``array`` store every row (its dense values), in place."""
    if stype_of(array) != "row_sparse" or array._values.shape[0] == array.shape[0]:
        return
    xp = array.context.backend.xp
    array._values = array._data
    array._aux = (xp.arange(array.shape[0], dtype=np.int64),)
    array._version += 1


def touched(array):
    """Record an in-place write into a sparse ``array`` (its version moves on)."""
    if stype_of(array) != "default":
        array._version += 1


def update_rows(rows, fulls, step):
    """Run ``step`` on the rows ``rows`` of the backend arrays ``fulls``; write them back.

    ``step(*taken)`` receives copies of those rows (one per array, in order),
    changes them in place and may return new values for the first one (the
    weight); every array gets its rows back, unchanged rows included.
    """
    taken = [full[rows] for full in fulls]
    first = step(*taken)
    if first is not None:
        taken[0] = first
    for full, part in zip(fulls, taken, strict=True):
        full[rows] = part
