"""Distributed key-value stores over MPI: ``dist_sync`` and ``dist_device_sync``.

MXNet runs ``dist_sync`` with a parameter server; rebind runs the same API on
MPI collectives between N worker processes started by ``mpiexec -n N python
train.py``. Every worker keeps a full copy of every key:

- ``init`` checks that every worker initializes the same keys with the same
  shapes and dtypes (an error names the key and the shapes of both ranks),
  then copies rank 0's values to every worker, so all start from the same
  parameters.
- ``push`` sums the values of a key over this worker's devices, then over the
  workers (an allreduce on host buffers; GPU values go through host copies),
  and stores the sum or, with an optimizer set, updates the stored value on
  every worker with the same sum: the copies stay identical.
- ``pull`` reads the local copy, which is the same on every worker; so does
  ``row_sparse_pull``. A row_sparse value is summed and broadcast through its
  dense form (the rows each worker pushed may differ), then kept row_sparse.
- ``save_optimizer_states`` writes on rank 0 only; ``load_optimizer_states``
  reads the file on rank 0 and sends its bytes to the others, so only rank
  0 needs the file.

``dist_sync`` sums and updates on ``cpu(0)``, as ``local`` does;
``dist_device_sync`` (MXNet also spells it ``dist_sync_device``) sums and
updates on the device of the first value, as ``device`` does. On CPUs they
are the same. Collectives time out (``REBIND_MPI_TIMEOUT``, see
``rebind.plugins.mpi_comm``) so a dead worker stops the others with an error.

``dist_async`` (and ``dist_device_async``) are refused: an asynchronous
parameter server is not built.
"""

import json
import os

import numpy as np

from rebind.context import cpu
from rebind.errors import DTypeMismatchError, ShapeError
from rebind.hookspecs import hookimpl
from rebind.kvstore import KVStore, KVStoreError
from rebind.ndarray import NDArray

from .mpi_comm import TimedComm

__all__ = ["DistSyncKVStore"]

_OK, _FAILED = b"\x00", b"\x01"


class DistSyncKVStore(KVStore):
    """Synchronous data-parallel store: sums over devices, then over MPI workers.

    Args:
        name: the store's ``type``.
        on_device: sum and update on the first value's device (``dist_device_sync``)
            instead of ``cpu(0)`` (``dist_sync``).
    """

    _SUM_ALONE = False  # whether one worker alone still runs the collective of a push

    def __init__(self, name="dist_sync", on_device=False):
        super().__init__(name)
        self._on_device = on_device
        self._comm = TimedComm(f"kvstore {name!r}")

    # -- description -----------------------------------------------------------------
    @property
    def rank(self):
        """This worker's rank in ``[0, num_workers)`` (its MPI rank)."""
        return self._comm.rank

    @property
    def num_workers(self):
        """The number of workers (the MPI job's size)."""
        return self._comm.size

    def __repr__(self):
        return (
            f"<{type(self).__name__} {self._type!r}: rank {self.rank} of {self.num_workers}, "
            f"{len(self._store)} keys>"
        )

    def _home_context(self, value):
        return value.context if self._on_device else cpu(0)

    def _reduce_context(self, values):
        return values[0].context if self._on_device else cpu(0)

    # -- the collectives on values (the NCCL store replaces these two) ---------------
    def _sum_over_workers(self, array, what):
        """Replace ``array`` (an NDArray) by its sum over the workers."""
        self._on_host(array, self._comm.allreduce, what)

    def _copy_from_root(self, array, what):
        """Replace ``array`` (an NDArray) by rank 0's."""
        self._on_host(array, self._comm.bcast, what)

    @staticmethod
    def _on_host(array, collective, what):
        if getattr(array, "stype", "default") != "default":
            # a row_sparse value: workers may hold different rows, so the collective runs
            # on its dense form (a weight's size, refused when it cannot fit), stored back
            host = np.ascontiguousarray(array.asnumpy())
            collective(host, what)
            array._store(NDArray(host, cpu(0)))
            return
        data = array.data
        if isinstance(data, np.ndarray) and data.flags.c_contiguous and data.flags.writeable:
            collective(data, what)
            return
        host = np.ascontiguousarray(array.asnumpy())
        collective(host, what)
        NDArray(host, cpu(0)).copyto(array)

    # -- keys and values ----------------------------------------------------------------
    def init(self, key, value):
        """Initialize keys on every worker with rank 0's values (same keys and shapes needed).

        Every worker must call ``init`` with the same keys, shapes and dtypes;
        otherwise every worker raises an error naming the first key that
        differs and what each rank gave. The values given on ranks other
        than 0 are replaced by rank 0's.
        """
        pairs = self._pairs(key, value, "init")
        self._check_same_layout(pairs)
        super().init(key, value)
        for name, _ in pairs:
            self._copy_from_root(self._store[name], f"init of key {name!r} (broadcast)")

    def _apply_all(self, merged):
        if self.num_workers > 1 or self._SUM_ALONE:
            for name, value in merged:
                self._sum_over_workers(value, f"push of key {name!r} (allreduce)")
        super()._apply_all(merged)

    def barrier(self):
        """Return once every worker has reached ``barrier`` (or raise after the timeout)."""
        self._comm.barrier("barrier()")

    _barrier = barrier

    def _check_same_layout(self, pairs):
        """Raise on every rank if the ranks initialize different keys, shapes or dtypes."""
        layout = [
            [name, [list(a.shape) for a in arrays], [np.dtype(a.dtype).name for a in arrays]]
            for name, arrays in pairs
        ]
        gathered = self._gather_json(layout, "init (comparing keys and shapes)")
        for rank, theirs in enumerate(gathered):
            if theirs != gathered[0]:
                raise _layout_error(self._type, gathered[0], theirs, rank)

    def _gather_json(self, value, what):
        texts = self._comm.allgather_bytes(json.dumps(value).encode(), what)
        return [json.loads(text) for text in texts]

    # -- updates -------------------------------------------------------------------------
    def set_optimizer(self, optimizer):
        """Update on every worker with ``optimizer``, after checking all use the same settings.

        Each worker applies the optimizer to the same summed gradient and the
        same weight, so the copies stay identical only if the optimizers
        agree: their scalar settings (learning rate, ``rescale_grad``,
        momentum, ...) are compared across workers and a difference is an
        error naming the setting and the ranks.
        """
        super().set_optimizer(optimizer)
        settings = _scalar_settings(optimizer)
        gathered = self._gather_json(settings, "set_optimizer (comparing optimizers)")
        for rank, theirs in enumerate(gathered):
            if theirs != gathered[0]:
                self._updater = None
                raise _settings_error(self._type, gathered[0], theirs, rank)

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Rank 0 writes the states to ``fname``; every worker returns once it is written."""
        self._states_updater("save")
        failure = None
        if self.rank == 0:
            try:
                super().save_optimizer_states(fname, dump_optimizer)
            except Exception as exc:
                failure = exc
        report = _FAILED + str(failure).encode() if failure else _OK
        status = self._comm.bcast_bytes(report, f"save_optimizer_states({str(fname)!r})")
        if failure is not None:
            raise failure
        if status != _OK:
            raise KVStoreError(
                f"kvstore {self._type!r}, rank {self.rank}: rank 0 could not write the "
                f"optimizer states to {str(fname)!r}: {status[1:].decode(errors='replace')}"
            )

    def load_optimizer_states(self, fname):
        """Rank 0 reads ``fname`` and sends its bytes to every worker (only rank 0 needs it)."""
        updater = self._states_updater("load")
        failure, payload = None, b""
        if self.rank == 0:
            try:
                with open(os.fspath(fname), "rb") as handle:
                    payload = _OK + handle.read()
            except OSError as exc:
                failure, payload = exc, _FAILED + str(exc).encode()
        payload = self._comm.bcast_bytes(payload, f"load_optimizer_states({str(fname)!r})")
        if failure is not None:
            raise failure
        if payload[:1] != _OK:
            raise KVStoreError(
                f"kvstore {self._type!r}, rank {self.rank}: rank 0 could not read the "
                f"optimizer states from {str(fname)!r}: {payload[1:].decode(errors='replace')}"
            )
        updater.set_states(payload[1:])


def _scalar_settings(optimizer):
    """The optimizer's class and its scalar attributes, as JSON-comparable values."""
    settings = {"class": type(optimizer).__name__}
    for name, value in sorted(vars(optimizer).items()):
        if isinstance(value, (bool, int, float, str, type(None))):
            settings[name] = value
    return settings


def _settings_error(store, first, theirs, rank):
    differing = sorted(
        name for name in set(first) | set(theirs) if first.get(name) != theirs.get(name)
    )
    detail = ", ".join(
        f"{name}={first.get(name)!r} on rank 0 but {theirs.get(name)!r} on rank {rank}"
        for name in differing
    )
    return KVStoreError(
        f"kvstore {store!r}: set_optimizer: the workers' optimizers differ ({detail}); every "
        "worker must create the same optimizer (same settings and the same batch size per "
        "worker) so that their updates stay identical"
    )


def _layout_error(store, first, theirs, rank):
    """The error for the first key whose shape or dtype differs between rank 0 and ``rank``."""
    names_first = [entry[0] for entry in first]
    names_theirs = [entry[0] for entry in theirs]
    if names_first != names_theirs:
        return KVStoreError(
            f"kvstore {store!r}: init of different keys on different workers: rank 0 "
            f"initializes {names_first}, rank {rank} initializes {names_theirs}; every worker "
            "must build the same network and initialize the same keys in the same order"
        )
    for (name, shapes0, dtypes0), (_, shapes, dtypes) in zip(first, theirs, strict=True):
        if shapes0 != shapes:
            return ShapeError(
                f"kvstore {store!r}: init of key {name!r}: shape {_shapes(shapes0)} on rank 0 "
                f"but {_shapes(shapes)} on rank {rank}; every worker must build the network "
                "with the same shapes (same symbol, data shapes and parameters)"
            )
        if dtypes0 != dtypes:
            return DTypeMismatchError(
                f"kvstore {store!r}: init of key {name!r}: dtype {dtypes0} on rank 0 but "
                f"{dtypes} on rank {rank}; every worker must use the same dtypes"
            )
    return KVStoreError(f"kvstore {store!r}: init differs between rank 0 and rank {rank}")


def _shapes(shapes):
    text = [str(tuple(shape)) for shape in shapes]
    return text[0] if len(text) == 1 else "[" + ", ".join(text) + "]"


class _Refused:
    """The factory of an asynchronous store: refuses with the alternatives."""

    def __init__(self, name):
        self.name = name

    def __call__(self):
        raise NotImplementedError(
            f"kvstore {self.name!r}: asynchronous distributed training (a parameter server "
            "applying each worker's gradients as they arrive) is not implemented in rebind, "
            "which synchronizes workers with MPI collectives; use kvstore='dist_sync' (or "
            "'dist_device_sync' to sum on the GPU) and launch with `mpiexec -n N python train.py`"
        )


def _make(name, on_device):
    def factory():
        return DistSyncKVStore(name, on_device=on_device)

    factory.__doc__ = f"A new {name!r} store (MPI is started on first use)."
    return factory


@hookimpl
def rebind_add_kvstores(registry):
    registry.add("dist_sync", _make("dist_sync", False))
    for name in ("dist_device_sync", "dist_sync_device"):
        registry.add(name, _make(name, True))
    for name in ("dist_async", "dist_device_async"):
        registry.add(name, _Refused(name))
