"""One copy of each parameter for the cpu contexts of a module that updates on its kvstore.

With ``context=[mx.cpu(0), mx.cpu(1)]`` and the update on an in-process store
(``fit``'s default, ``kvstore='local'``), MXNet keeps three copies of every
weight, the store's and one per context, and after each update copies the
store's into both. Host memory is one, and the contexts only read their
weights, so rebind lets every context's array hold the store's value itself
(``KVStore._share_stored``): the pull after an update copies nothing, the
contexts read one weight (one copy in the caches, not two) and the weights
take a third of the memory. Measured on the MLP of ``benchmarks/cnn.py
--fit`` (784-512-512-10, batch 128, one thread): 0.5-0.7 ms of CPU less per
step, of 8.

The values are those of the copies: every update changes the stored value
and the contexts read it, as they read the pulled copy. What differs from
MXNet: a parameter written after ``init_optimizer`` (``set_params``,
``init_params(force_init=True)``) is the one the next update starts from;
MXNet's next pull replaced it with the store's older copy.

Where the update runs on each context (``MXNET_UPDATE_ON_KVSTORE=0``, no
store, a distributed store), each context gets its own copy back: an update
per context must not see another's. ``REBIND_SHARE_HOST_PARAMS=0`` keeps the
copies always.
"""

import os

from ..kvstore import KVStore
from .context_threads import on_host

__all__ = ["share_or_own"]

VARIABLE = "REBIND_SHARE_HOST_PARAMS"


def share_or_own(group, store, update_on_kvstore):
    """Share ``group``'s parameters with ``store`` where that is safe, else own each copy.

    Called by ``init_optimizer`` once the store holds the parameters and has
    pulled them into every context; returns the names shared.
    """
    shared = []
    if _may_share(group, store, update_on_kvstore):
        for name, block in zip(group.param_names, group.param_arrays, strict=True):
            if store._share_stored(name, block):
                shared.append(name)
    for name, block in zip(group.param_names, group.param_arrays, strict=True):
        if name not in shared:
            own_copies(block)
    return shared


def _may_share(group, store, update_on_kvstore):
    return (
        update_on_kvstore
        and isinstance(store, KVStore)
        and store.num_workers == 1
        and len(group.execs) > 1
        and on_host(group.contexts)
        and os.environ.get(VARIABLE, "1") != "0"
    )


def own_copies(block):
    """Give every array of ``block`` (one parameter, one per context) memory of its own."""
    for index, array in enumerate(block):
        if any(array._data is other._data for other in block[:index]):
            array._data = array._data.copy()
            array._version += 1


def one_memory(block):
    """Whether the arrays of ``block`` all hold one array (shared with the store)."""
    first = block[0]._data
    return all(array._data is first for array in block[1:])
