"""``nccl``: a distributed store that sums GPU values over processes with NCCL (through CuPy).

One process per GPU, started like any rebind worker (``mpiexec -n N python
train.py``), each training on ``mx.gpu(i)``. A push sums the values of a key
over this process's GPUs on the first of them (as ``device`` does), then over
the processes with NCCL's allreduce, on the GPU: no host copies. ``init``
copies rank 0's values with NCCL's broadcast. MPI (mpi4py) carries the rest:
the NCCL unique id from rank 0 to the others, and the checks ``init`` and
``set_optimizer`` share with ``dist_sync`` (rebind.plugins.kvstores_dist).

MXNet's ``nccl`` store sums over the GPUs of one process; rebind's also sums
over processes, so ``Module`` creates it even for one GPU per process and
scales ``rescale_grad`` by ``num_workers``. With one process it behaves as
MXNet's.

Each NCCL call is followed by polling a CUDA event with the deadline of
``REBIND_MPI_TIMEOUT``; past it the NCCL communicator is aborted and
``DistributedError`` raised, so a dead worker does not hang the others.
"""

import os
import time

import numpy as np

from rebind.context import Context, cpu
from rebind.errors import BackendUnavailableError, ContextMismatchError
from rebind.hookspecs import hookimpl

from .kvstores_dist import DistSyncKVStore
from .mpi_comm import FIRST_NAP, LAST_NAP, SPIN_SECONDS, TIMEOUT_VARIABLE, DistributedError

__all__ = ["NCCLKVStore"]

NCCL_TYPES = {
    "float16": "NCCL_FLOAT16",
    "float32": "NCCL_FLOAT32",
    "float64": "NCCL_FLOAT64",
    "int8": "NCCL_INT8",
    "uint8": "NCCL_UINT8",
    "int32": "NCCL_INT32",
    "int64": "NCCL_INT64",
}


def load_nccl():
    """``(cupy, cupy.cuda.nccl)``, or an error saying what to install."""
    try:
        import cupy
        from cupy.cuda import nccl
    except ImportError as exc:
        raise BackendUnavailableError(
            f"kvstore 'nccl' needs CuPy with NCCL ({exc}); install it with "
            "pip install 'rebind[gpu,mpi]', or use kvstore='dist_device_sync' (host copies)"
        ) from exc
    if not getattr(nccl, "available", False):
        raise BackendUnavailableError(
            "kvstore 'nccl': CuPy is installed but cannot load the NCCL library; install NCCL "
            "for your CUDA version (e.g. pip install nvidia-nccl-cu12), or use "
            "kvstore='dist_device_sync'"
        )
    return cupy, nccl


class NCCLKVStore(DistSyncKVStore):
    """Sums over this process's GPUs, then over the processes with NCCL, on the GPU."""

    # NCCL even for one process: cheap on the GPU, and one GPU then tests the real path
    _SUM_ALONE = True

    def __init__(self, name="nccl"):
        self._cupy, self._nccl = load_nccl()
        super().__init__(name, on_device=True)
        self._context = None  # the GPU of the first init: every sum and update runs there
        self._pending = []  # (host value, what) given to init before any GPU was seen
        self._communicator = None
        self._failure = None

    def _home_context(self, value):
        if self._context is None and value.context.device_type != "gpu":
            return cpu(0)  # a host value waits there until a GPU is named (see _settle)
        return self._gpu(value.context)

    def _reduce_context(self, values):
        return self._gpu(values[0].context)

    # -- host values given to init ------------------------------------------------------
    # Module.fit initializes the store with its host copies of the parameters, as
    # MXNet's does; MXNet's nccl store takes them. Before any GPU array is seen they
    # are kept on the host, and the first push or pull that names a GPU moves every
    # one there and broadcasts rank 0's values, in init order on every rank.

    def _copy_from_root(self, array, what):
        if array.context.device_type != "gpu":
            self._pending.append((array, what))
            return
        self._broadcast(array, what)

    def _settle(self, arrays):
        gpu = next((a.context for a in arrays if a.context.device_type == "gpu"), None)
        if not self._pending or gpu is None:
            return
        self._gpu(gpu)
        moved = {}
        for name, stored in list(self._store.items()):
            if stored.context.device_type != "gpu":
                moved[id(stored)] = self._store[name] = stored.copyto(self._context)
        pending, self._pending = self._pending, []
        for array, what in pending:
            on_gpu = moved.get(id(array))
            self._broadcast(array.copyto(self._context) if on_gpu is None else on_gpu, what)

    def push(self, key, value, priority=0):
        self._settle(_flat(value))
        super().push(key, value, priority)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        self._settle(_flat(out))
        super().pull(key, out, priority, ignore_sparse)

    def _gpu(self, context):
        if self._context is None:
            if context.device_type != "gpu":
                raise ContextMismatchError(
                    f"kvstore {self._type!r} sums GPU arrays, got an array on {context}; "
                    "train on mx.gpu(i), or use kvstore='dist_sync' on CPUs"
                )
            self._context = Context(context)
        return self._context

    # -- the collectives, on the GPU --------------------------------------------------
    def _sum_over_workers(self, array, what):
        data = array.data
        self._run(
            lambda comm, stream: comm.allReduce(
                data.data.ptr,
                data.data.ptr,
                data.size,
                self._type_of(data, what),
                self._nccl.NCCL_SUM,
                stream.ptr,
            ),
            what,
        )

    def _broadcast(self, array, what):
        data = array.data
        self._run(
            lambda comm, stream: comm.bcast(
                data.data.ptr, data.size, self._type_of(data, what), 0, stream.ptr
            ),
            what,
        )

    def _type_of(self, data, what):
        name = NCCL_TYPES.get(np.dtype(data.dtype).name)
        if name is None or not hasattr(self._nccl, name):
            raise TypeError(
                f"kvstore {self._type!r}: {what}: NCCL cannot sum dtype {data.dtype}; use one "
                f"of {sorted(NCCL_TYPES)}"
            )
        return getattr(self._nccl, name)

    def _run(self, call, what):
        if self._failure is not None:
            raise DistributedError(
                f"kvstore {self._type!r}, rank {self.rank}: cannot run {what}: an earlier NCCL "
                f"call failed ({self._failure}); restart the job"
            )
        with self._cupy.cuda.Device(self._context.device_id):
            comm = self._nccl_communicator()
            stream = self._cupy.cuda.get_current_stream()
            call(comm, stream)
            self._wait(comm, stream, what)

    def _nccl_communicator(self):
        """The NCCL communicator, made on first use from rank 0's unique id (sent over MPI)."""
        if self._communicator is None:
            message = b""
            if self.rank == 0:
                message = pack_unique_id(self._nccl.get_unique_id())
            message = self._comm.bcast_bytes(message, "nccl: sending the unique id")
            self._comm.barrier("nccl: every worker ready to join")
            self._communicator = self._nccl.NcclCommunicator(
                self.num_workers, unpack_unique_id(message), self.rank
            )
        return self._communicator

    def _wait(self, comm, stream, what):
        """Wait for the NCCL call queued on ``stream``, up to the timeout; abort past it."""
        event = self._cupy.cuda.Event(disable_timing=True)
        event.record(stream)
        timeout = self._comm.timeout
        start = time.monotonic()
        spin_until = start + SPIN_SECONDS
        deadline = None if timeout is None else start + timeout
        nap = FIRST_NAP
        while not event.done:
            comm.check_async_error()
            now = time.monotonic()
            if now < spin_until:
                os.sched_yield()
                continue
            if deadline is not None and now > deadline:
                raise self._abort(comm, what, timeout)
            time.sleep(nap)
            nap = min(nap * 2, LAST_NAP)

    def _abort(self, comm, what, timeout):
        self._failure = what
        comm.abort()
        self._communicator = None
        return DistributedError(
            f"kvstore {self._type!r}, rank {self.rank} of {self.num_workers}: {what} did not "
            f"complete within {timeout:g} s: another worker died, raised or is stuck; the NCCL "
            f"communicator was aborted. Set {TIMEOUT_VARIABLE} (seconds, 0 = wait forever) if "
            "a step may legitimately take longer"
        )


def _flat(values):
    """The NDArrays in a push's values or a pull's targets (nested lists flattened)."""
    if values is None:
        return []
    if isinstance(values, (list, tuple)):
        return [a for v in values for a in _flat(v)]
    return [values]


@hookimpl
def rebind_add_kvstores(registry):
    registry.add("nccl", NCCLKVStore)


def pack_unique_id(unique_id):
    """Bytes for MPI of NCCL's unique id as CuPy gives it: bytes (CuPy 14) or a tuple of ints.

    The first byte says which, so that every rank hands ``NcclCommunicator`` the
    same type rank 0 got (older CuPy takes the 128 signed chars as a tuple).
    """
    if isinstance(unique_id, (bytes, bytearray)):
        return b"b" + bytes(unique_id)
    return b"t" + np.asarray(unique_id, np.int16).tobytes()


def unpack_unique_id(message):
    """The unique id that ``pack_unique_id`` packed."""
    kind, body = message[:1], message[1:]
    if kind == b"b":
        return body
    if kind == b"t":
        return tuple(int(v) for v in np.frombuffer(body, np.int16))
    raise DistributedError(f"nccl: a unique id message of unknown kind {kind!r}")
