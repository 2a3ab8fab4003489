"""``mx.kv`` (alias ``mx.kvstore``): ``KVStore``, rebind's in-process store, and ``create``.

A key-value store keeps one array per key. ``push`` sums the values given for
a key (one per device) and stores the sum, or, once an optimizer or updater is
set, applies it to the stored value; ``pull`` copies the stored value into
arrays on any context. Modules use it to sum gradients across devices and to
update each weight in one place.

This module owns what every in-process store shares, as MXNet 1.9.1 defines
it: int or str keys (one kind per store), lists of keys, several values per
key, repeated keys in one call merged, keys processed in MXNet's order, the
updater and its saved states. A concrete store says only where values are
kept and summed (``_home_context``, ``_reduce_context``); ``local`` and
``device`` are plugins (``rebind.plugins.kvstores_local``) registered through
``rebind_add_kvstores`` as a third-party store would be. A factory registered
there is called with no arguments and returns a ``KVStoreBase`` (``base.py``:
the interface, and ``register`` for stores written against it).

Where rebind differs from MXNet:

- ``create`` refuses names nobody registered (MXNet made a local store of any
  name without "dist" or "nccl" in it).
- Pushing to a key that was never initialized is an error (MXNet stored int
  keys silently when no updater was set).
- The stored value never shares memory with a pushed array (MXNet's store
  could alias the array of a single-value push). A module's cpu contexts may
  hold the stored value itself (``_share_stored``, see
  ``rebind.module.host_params``): their pulls then copy nothing.
- ``priority`` is accepted and ignored: calls run synchronously, in order.
"""

import os

from .. import registry
from ..errors import DTypeMismatchError, PluginError, RebindError, ShapeError
from ..fileutil import write_atomic
from ..optimizer import Optimizer, get_updater
from ..optimizer.updater import Updater
from . import host_copies, sparse
from .base import FAMILY, KVStoreBase, register
from .keys import key_kind, key_value_pairs

__all__ = ["KVStore", "KVStoreBase", "KVStoreError", "create", "register"]


class KVStoreError(RebindError, RuntimeError):
    """A key was used out of turn: not initialized yet, initialized twice, wrong kind."""


class KVStore(KVStoreBase):
    """rebind's in-process key-value store; subclasses choose the contexts values live on.

    Args:
        name: the store's ``type`` (defaults to the lower-cased class name, as
            MXNet names registered stores).
    """

    def __init__(self, name=None):
        self._type = (name or type(self).__name__).lower()
        self._store = {}  # key -> stored NDArray
        self._str_order = {}  # str key -> rank of its init, MXNet's internal int key
        self._key_kind = None  # int or str, fixed by the first init
        self._updater = None
        self._buffers = {}  # key -> the array its host pushes are summed into (_merge)

    # -- what a concrete store decides ----------------------------------------
    def _home_context(self, value):
        """Where ``init`` keeps the copy of ``value``."""
        raise NotImplementedError(f"{type(self).__name__} does not say where values are kept")

    def _reduce_context(self, values):
        """Where the values pushed for one key are summed (and the update runs)."""
        raise NotImplementedError(f"{type(self).__name__} does not say where values are summed")

    # -- description ----------------------------------------------------------
    @property
    def type(self):
        """The store's type name (``'local'``, ``'device'``, ...)."""
        return self._type

    @property
    def rank(self):
        """This worker's rank: always 0 in one process."""
        return 0

    @property
    def num_workers(self):
        """The number of workers: always 1 in one process."""
        return 1

    def is_capable(self, capability):
        """Whether the store can do ``capability``; ``'optimizer'``: it can update weights."""
        if isinstance(capability, str) and capability.lower() == self.OPTIMIZER:
            return True
        raise ValueError(f"kvstore {self._type!r}: unknown capability {capability!r}")

    def __repr__(self):
        return f"<{type(self).__name__} {self._type!r}: {len(self._store)} keys>"

    # -- keys and values --------------------------------------------------------
    def init(self, key, value):
        """Store a copy of ``value`` under ``key`` (or of each value under each key).

        A key may be initialized only once, with one NDArray.
        """
        pairs = self._pairs(key, value, "init")
        seen = set()
        for name, arrays in pairs:
            if name in self._store or name in seen or len(arrays) != 1:
                raise KVStoreError(
                    f"kvstore {self._type!r}: duplicate init of key {name!r}; a key is "
                    "initialized once with one NDArray (push updates it afterwards)"
                )
            seen.add(name)
        if pairs:
            self._key_kind = key_kind(pairs[0][0])
        for name, (array,) in pairs:
            if isinstance(name, str):
                self._str_order[name] = len(self._str_order)
            self._store[name] = array.copyto(self._home_context(array))

    def push(self, key, value, priority=0):
        """Sum the values of each key and store the sum, or apply it through the updater.

        ``value`` is an NDArray or a list of NDArrays (one per device) for one
        key, or a list of those for a list of keys. With an updater set, it is
        called as ``updater(key, summed, stored)`` and changes ``stored`` in
        place; a str key reaches it as bytes, as MXNet passes it.
        """
        groups = self._groups(self._pairs(key, value, "push"), "push")
        for name, arrays in groups:
            self._check_push(name, arrays)
        if type(self)._merge is KVStore._merge:  # rebind's sums: host ones in place, in threads
            self._apply_all(host_copies.merge_all(self._merge_key, groups))
        else:  # a subclass sums its own way
            self._apply_all([(name, self._merge(arrays)) for name, arrays in groups])

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copy the stored value of each key into every array of ``out``, on its context."""
        if out is None:
            raise TypeError(f"kvstore {self._type!r}: pull needs out= (the arrays to fill)")
        copies = []
        for name, outs in self._groups(self._pairs(key, out, "pull"), "pull"):
            stored = self._store[name]
            warned = self.__dict__.setdefault("_sparse_warned", set())
            outs = sparse.pulled_targets(self, name, outs, ignore_sparse, warned)
            for target in outs:
                if target.shape != stored.shape:
                    raise ShapeError(
                        f"kvstore {self._type!r}: pull of key {name!r} into an array of shape "
                        f"{target.shape}; the stored value has shape {stored.shape}"
                    )
                copies.append((stored, target))
        host_copies.copy_all(copies)

    def pushpull(self, key, value, out=None, priority=0):
        """``push`` then ``pull``; without ``out`` the result lands in ``value`` itself."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority=0):
        """Initialize ``key`` with ``value`` and pull it into ``out`` (once per key)."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Copy the stored rows at ``row_ids`` into each row_sparse ``out`` (``kvstore.sparse``).

        ``row_ids`` is an NDArray (or a list, one per output) of row ids, in
        any order and with repeats; one array for several outputs is used for
        all of them. The key must be stored as row_sparse.
        """
        sparse.row_sparse_pull(self, key, out, row_ids)

    def _sparse_source(self, name):
        """The stored row_sparse value of ``name`` (for ``row_sparse_pull``)."""
        self._groups([(name, [])], "row_sparse_pull")  # the key must be initialized
        stored = self._store[name]
        sparse.check_stored_row_sparse(self, name, stored)
        return stored

    def set_gradient_compression(self, compression_params):
        """Not available: gradient compression is not implemented in rebind."""
        raise NotImplementedError(
            f"kvstore {self._type!r}: gradient compression (2-bit quantization) is not "
            "implemented in rebind; train without set_gradient_compression"
        )

    def barrier(self):
        """Wait for every worker: with one worker there is nothing to wait for."""

    _barrier = barrier

    def num_dead_node(self, node_id, timeout_sec=60):
        """The number of dead nodes: always 0 in one process."""
        return 0

    def _share_stored(self, key, arrays):
        """rebind: let the host ``arrays`` hold ``key``'s stored value itself; whether they do.

        A module with several cpu contexts updating on this store pulls every
        updated weight into each context's copy; host memory is one, so the
        contexts' arrays may instead hold the stored array (a pull into them
        then copies nothing, ``host_copies.copy_into``). Only where the store
        updates its values in place (an updater is set) and every array is a
        dense host array of the stored shape and dtype.
        """
        stored = self._store.get(key)
        if (
            stored is None
            or self._updater is None
            or not host_copies.on_host(stored, stored.context)
        ):
            return False
        for array in arrays:
            if not host_copies.on_host(array, stored.context):
                return False
            if array.shape != stored.shape or array.dtype != stored.dtype:
                return False
        for array in arrays:
            array._data = stored._data
            array._version += 1
        return True

    # -- updates -----------------------------------------------------------------
    def set_optimizer(self, optimizer):
        """Update stored values on ``push`` with ``optimizer`` (through an ``Updater``)."""
        if not isinstance(optimizer, Optimizer):
            raise TypeError(
                f"kvstore {self._type!r}: set_optimizer needs an Optimizer, got "
                f"{optimizer!r}; make one with mx.optimizer.create(name, ...)"
            )
        self._set_updater(get_updater(optimizer))

    def _set_updater(self, updater):
        """Call ``updater(key, summed, stored)`` on every push from now on."""
        if not callable(updater):
            raise TypeError(
                f"kvstore {self._type!r}: the updater must be callable, got {updater!r}"
            )
        self._updater = updater

    set_updater = _set_updater

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the updater's states (and the optimizer, if asked) to ``fname`` atomically."""
        write_atomic(fname, self._states_updater("save").get_states(dump_optimizer))

    def load_optimizer_states(self, fname):
        """Restore the updater's states from ``fname`` (rebind's format or MXNet's pickle)."""
        updater = self._states_updater("load")
        with open(os.fspath(fname), "rb") as handle:
            updater.set_states(handle.read())

    def _states_updater(self, verb):
        updater = self._updater
        if updater is None:
            raise KVStoreError(
                f"kvstore {self._type!r}: cannot {verb} optimizer states, no optimizer is set; "
                "call set_optimizer first"
            )
        if not hasattr(updater, "get_states"):
            raise KVStoreError(
                f"kvstore {self._type!r}: cannot {verb} optimizer states: the updater "
                f"{updater!r} has no get_states/set_states (set_optimizer installs one)"
            )
        return updater

    # -- internals ---------------------------------------------------------------
    def _pairs(self, key, value, call):
        pairs = key_value_pairs(key, value, call)
        if pairs and self._key_kind is not None:
            kind = key_kind(pairs[0][0])
            if kind is not self._key_kind:
                raise KVStoreError(
                    f"kvstore {self._type!r}: {call} with {kind.__name__} key "
                    f"{pairs[0][0]!r}, but this store uses {self._key_kind.__name__} keys; "
                    "MXNet does not allow mixing key types in one store"
                )
        return pairs

    def _groups(self, pairs, call):
        """Arrays per key, repeated keys merged, in MXNet's order (its int keys ascending)."""
        groups = {}
        for name, arrays in pairs:
            if name not in self._store:
                raise KVStoreError(
                    f"kvstore {self._type!r}: {call} of key {name!r}, which has not been "
                    f"initialized; call init({name!r}, value) first"
                )
            groups.setdefault(name, []).extend(arrays)
        return sorted(groups.items(), key=lambda item: self._order(item[0]))

    def _order(self, name):
        return self._str_order[name] if isinstance(name, str) else name

    def _check_push(self, name, arrays):
        stored = self._store[name]
        for array in arrays:
            if array.shape != stored.shape:
                raise ShapeError(
                    f"kvstore {self._type!r}: push to key {name!r} of a value of shape "
                    f"{array.shape}; the stored value has shape {stored.shape}"
                )
            if array.dtype != stored.dtype:
                raise DTypeMismatchError(
                    f"kvstore {self._type!r}: push to key {name!r} of a value of dtype "
                    f"{array.dtype.__name__}; the stored value has dtype {stored.dtype.__name__}"
                )

    def _merge_key(self, arrays, name):
        """The sum pushed for key ``name``: into the key's buffer between host contexts.

        With an updater set, the sum is read by the update and dropped, so it
        goes into the same array at every push, as MXNet's CommCPU keeps one;
        otherwise ``_merge`` makes a new one (it becomes the stored value).
        """
        if self._updater is not None and len(arrays) > 1:
            ctx = self._reduce_context(arrays)
            if all(host_copies.on_host(array, ctx) for array in arrays):
                return host_copies.sum_on_host(arrays, ctx, self._buffer(name, arrays[0], ctx))
        return self._merge(arrays)

    def _merge(self, arrays):
        """The sum of ``arrays``, a new array on the reduce context, in the order given."""
        ctx = self._reduce_context(arrays)
        if sparse.is_sparse(arrays):  # MXNet reduces by the first value's storage type
            return sparse.merge_row_sparse(self, arrays, ctx)
        if len(arrays) > 1 and all(host_copies.on_host(array, ctx) for array in arrays):
            return host_copies.sum_on_host(arrays, ctx)  # host memory is one: no copies first
        merged = arrays[0].copyto(ctx)
        with ctx.backend.device(ctx.device_id):
            for array in arrays[1:]:
                merged._data += array.as_in_context(ctx)._data
        return merged

    def _buffer(self, name, like, ctx):
        """The array the host pushes of key ``name`` are summed into (made once)."""
        like = like._data
        buffer = self._buffers.get(name)
        if buffer is None or buffer.shape != like.shape or buffer.dtype != like.dtype:
            buffer = self._buffers[name] = ctx.backend.xp.empty_like(like)
        return buffer

    def _apply_all(self, merged):
        """Store each ``(name, sum)``, or update the stored values with one updater call.

        One call for every key of a push (the optimizer's ``update_many``):
        the same arithmetic as one call per key, without its per-call cost.
        """
        if self._updater is None:
            for name, value in merged:
                self._store[name] = value
            return
        if not isinstance(self._updater, Updater):  # a function of the user's: one key a call
            for name, value in merged:
                self._apply_one(name, value)
            return
        keys, sums, stored = [], [], []
        for name, value in merged:
            keys.append(name.encode() if isinstance(name, str) else name)
            sums.append(value)
            stored.append(self._stored_at(name, value.context))
        if keys:
            self._updater(keys, sums, stored)

    def _stored_at(self, name, ctx):
        """The stored value of ``name``, moved to ``ctx`` first (the update runs where the sum is,
        as MXNet moves the weight there)."""
        target = self._store[name]
        if target.context != ctx:
            target = self._store[name] = target.copyto(ctx)
        return target

    def _apply_one(self, name, value):
        key = name.encode() if isinstance(name, str) else name
        self._updater(key, value, self._stored_at(name, value.context))


def create(name="local"):
    """A new store of the type registered as ``name`` (case-insensitive), e.g. ``'device'``.

    An unknown name raises ``UnknownNameError`` (a ValueError) listing the
    known ones. The built-ins are ``local`` and ``device`` (and MXNet's other
    spellings of them), and, over MPI, ``dist_sync``, ``dist_device_sync`` and
    ``nccl`` (``rebind.plugins.kvstores_dist`` and ``kvstores_nccl``).
    """
    if not isinstance(name, str):
        raise TypeError(f"kvstore create: name must be a string such as 'local', got {name!r}")
    factory = registry.lookup(FAMILY, name)
    store = factory()
    if not isinstance(store, KVStoreBase):
        owner = registry.get_registry(FAMILY).owner(name)
        raise PluginError(
            f"kvstore {name!r} (plugin {owner!r}) made a {type(store).__name__}, not a "
            "rebind.kvstore.KVStoreBase"
        )
    return store
