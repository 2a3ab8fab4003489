"""row_sparse values in the in-process stores, as MXNet 1.9.1's ``KVStoreLocal`` treats them.

- ``push``: the values of a key are summed as MXNet's ``CommCPU::Reduce`` does,
  by the storage type of the first: row_sparse values give a row_sparse sum
  holding the union of their rows (``merge_row_sparse``); csr is refused.
- ``pull``: a row_sparse output is skipped, with MXNet's warning once per key,
  unless ``ignore_sparse=False`` (``sparse_targets``).
- ``row_sparse_pull``: the stored row_sparse value restricted to the rows
  asked for (unique, sorted: MXNet's ``Unique``), into each row_sparse output
  (``row_sparse_pull``).
"""

import logging

import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray
from .keys import key_value_pairs

__all__ = [
    "check_stored_row_sparse",
    "is_sparse",
    "merge_row_sparse",
    "pulled_targets",
    "row_sparse_pull",
]

_LOG = logging.getLogger("rebind.kvstore")
AUX = np.int64


def stype_of(array):
    return getattr(array, "stype", "default")


def is_sparse(arrays):
    """Whether the first of ``arrays`` is sparse: MXNet's reduce goes by the first value."""
    return stype_of(arrays[0]) != "default"


def merge_row_sparse(store, arrays, ctx):
    """The sum of row_sparse ``arrays`` on ``ctx``: a row_sparse array of the union of rows."""
    from ..ndarray.sparse_array import make_sparse

    for array in arrays:
        if stype_of(array) not in ("default", "row_sparse"):
            raise MXNetError(
                f"kvstore {store.type!r}: push of a {array.stype} array; "
                "unexpected storage type detected during kvstore push (push dense or "
                "row_sparse values)"
            )
    backend, xp = ctx.backend, ctx.backend.xp
    parts = [_row_parts(array, ctx) for array in arrays]
    first = arrays[0]
    if len(parts) == 1:  # one value: its rows as they are (a copy)
        ids, values = parts[0]
        return make_sparse("row_sparse", values.copy(), (ids.astype(AUX),), first.shape, ctx)
    rows = unique_rows(xp, xp.concatenate([ids for ids, _ in parts]))
    total = xp.zeros((int(rows.shape[0]),) + tuple(first.shape[1:]), dtype=first.dtype)
    with backend.device(ctx.device_id):
        for ids, values in parts:
            total[xp.searchsorted(rows, ids)] += values
    return make_sparse("row_sparse", total, (rows,), first.shape, ctx)


def unique_rows(xp, ids):
    """``ids`` sorted without repeats (MXNet's ``Unique``), as int64; itself if already so."""
    ids = ids.astype(AUX, copy=False)
    if ids.shape[0] < 2 or bool((ids[1:] > ids[:-1]).all()):
        return ids
    ordered = xp.sort(ids)
    keep = xp.ones(ordered.shape[0], dtype=bool)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]


def _row_parts(array, ctx):
    """``(row ids, rows)`` of a row_sparse (or dense) ``array`` as backend arrays on ``ctx``."""
    backend = ctx.backend
    if stype_of(array) == "row_sparse":
        ids, values = array._aux[0], array._values
    else:  # a dense value among row_sparse ones: every row
        values = array._data
        ids = array.context.backend.xp.arange(array.shape[0], dtype=AUX)
    if array.context != ctx and not backend.owns(values):
        values = backend.asarray(array.context.backend.to_host(values), None, ctx.device_id)
        ids = backend.asarray(array.context.backend.to_host(ids), AUX, ctx.device_id)
    return ids, values


def pulled_targets(store, name, outs, ignore_sparse, warned):
    """The outputs ``pull`` fills: sparse ones are skipped (warned once) when ``ignore_sparse``."""
    if not ignore_sparse:
        return outs
    kept = [out for out in outs if stype_of(out) == "default"]
    if len(kept) != len(outs) and name not in warned:
        warned.add(name)
        _LOG.warning(
            "Warning: non-default weights detected during kvstore pull. This call has been "
            "ignored. Please make sure to use kv.row_sparse_pull() or module.prepare() "
            "with row_ids."
        )
    return kept


def row_sparse_pull(store, key, out, row_ids):
    """``KVStore.row_sparse_pull``: each output gets the stored rows at its row ids."""
    if out is None or row_ids is None:
        raise TypeError(
            f"kvstore {store.type!r}: row_sparse_pull needs out= (row_sparse arrays) and "
            "row_ids= (an NDArray of row ids, or a list of them)"
        )
    if isinstance(row_ids, NDArray):
        row_ids = [row_ids]
    if not isinstance(row_ids, list):
        raise TypeError(
            f"kvstore {store.type!r}: row_ids should be NDArray or list of NDArray, got "
            f"{type(row_ids).__name__}"
        )
    # one row id array for several outputs: pull into the first, copy to the rest
    rest = []
    if len(row_ids) == 1 and isinstance(out, list):
        out, rest = [out[0]], out[1:]
    pairs = key_value_pairs(key, out, "row_sparse_pull")
    id_pairs = key_value_pairs(key, row_ids, "row_sparse_pull")
    outs = [target for _, targets in pairs for target in targets]
    ids = [array for _, arrays in id_pairs for array in arrays]
    if len(ids) != len(outs):
        raise ValueError(
            f"kvstore {store.type!r}: the number of row_ids ({len(ids)}) doesn't match the "
            f"number of values ({len(outs)})"
        )
    position = 0
    for name, targets in pairs:
        stored = store._sparse_source(name)
        for target in targets:
            _pull_rows(store, name, stored, target, ids[position])
            position += 1
    for target in rest:
        outs[0].copyto(target)


def check_stored_row_sparse(store, name, stored):
    """MXNet's check: row_sparse_pull reads a key stored as row_sparse."""
    if stype_of(stored) != "row_sparse":
        raise MXNetError(
            f"kvstore {store.type!r}: row_sparse_pull of key {name!r}, whose stored value is "
            f"{stored.stype}; PullRowSparse expects row_sparse src NDArray (init the key "
            "with a row_sparse array, or use pull)"
        )


def _pull_rows(store, name, stored, target, row_id):
    from ..ndarray.sparse_array import make_sparse

    if stype_of(target) != "row_sparse":
        raise MXNetError(
            f"kvstore {store.type!r}: row_sparse_pull of key {name!r}: expected row_sparse "
            f"storage type for row_sparse_pull values, but detected storage type "
            f"{target.stype}; pull dense outputs with pull()"
        )
    if stype_of(row_id) != "default":
        raise MXNetError(
            f"kvstore {store.type!r}: row_sparse_pull of key {name!r}: expected default "
            f"storage type for row_sparse_pull rowids, but detected storage type {row_id.stype}"
        )
    if tuple(target.shape) != tuple(stored.shape):
        raise ValueError(
            f"kvstore {store.type!r}: row_sparse_pull of key {name!r} into an array of shape "
            f"{target.shape}; the stored value has shape {stored.shape}"
        )
    ctx, xp = stored.context, stored.context.backend.xp
    wanted = ctx.backend.asarray(row_id.asnumpy().reshape(-1), None, ctx.device_id)
    rows = unique_rows(xp, wanted)
    stored_ids, stored_values = stored._aux[0], stored._values
    if stored_ids.shape[0] == stored.shape[0]:  # every row stored (weights): index directly
        values = stored_values[rows]
        target._store(make_sparse("row_sparse", values, (rows,), stored.shape, ctx))
        return
    values = xp.zeros((int(rows.shape[0]),) + tuple(stored.shape[1:]), dtype=stored.dtype)
    if stored_ids.shape[0] and rows.shape[0]:
        at = xp.clip(xp.searchsorted(stored_ids, rows), 0, stored_ids.shape[0] - 1)
        found = stored_ids[at] == rows
        values[found] = stored_values[at[found]]
    target._store(make_sparse("row_sparse", values, (rows,), stored.shape, ctx))
