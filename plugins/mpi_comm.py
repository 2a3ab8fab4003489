"""Collectives between worker processes over MPI (mpi4py) that fail instead of hanging.

The distributed kvstores (``rebind.plugins.kvstores_dist``,
``rebind.plugins.kvstores_nccl``) talk to the other workers only through
``TimedComm``. Every collective is started non-blocking and polled until it
completes or a deadline passes: ``REBIND_MPI_TIMEOUT`` seconds (default 60;
0 waits forever, with MPI's blocking calls). A worker that died, raised or is
stuck therefore makes the others raise ``DistributedError`` naming the
operation and the ranks instead of waiting forever. A collective that timed
out can never be completed, so the communicator is unusable afterwards and
the process aborts the whole MPI job when it exits (MPI could not finalize).

mpi4py is imported only when a ``TimedComm`` is made, so rebind imports and
runs without MPI installed; ``pip install 'rebind[mpi]'`` installs mpi4py and
MPICH from PyPI.
"""

import atexit
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from rebind.errors import RebindError

__all__ = [
    "DistributedError",
    "MPIUnavailableError",
    "TimedComm",
    "find_mpiexec",
    "launcher_environment",
    "load_mpi",
    "read_timeout",
]

TIMEOUT_VARIABLE = "REBIND_MPI_TIMEOUT"
DEFAULT_TIMEOUT = 60.0
INSTALL_HINT = "pip install 'rebind[mpi]'"
LAUNCH_HINT = (
    "launch workers as `mpiexec -n N python -m mpi4py train.py` so that an error in one "
    "worker ends them all"
)

# polling: test (yielding the CPU between tests) for SPIN_SECONDS, as MPI's blocking calls
# spin; after that the others are busy, and naps doubling from FIRST_NAP to LAST_NAP seconds
# free the CPU for them
SPIN_SECONDS = 0.05
FIRST_NAP = 1e-4
LAST_NAP = 2e-3
ABORT_GRACE = 1.0  # seconds between a failed worker's last words and the end of the job


class DistributedError(RebindError, RuntimeError):
    """A collective between workers failed or did not complete before the deadline."""


class MPIUnavailableError(RebindError, ImportError):
    """mpi4py (or the MPI library it loads) is not installed."""


def find_mpiexec():
    """``mpiexec`` beside this interpreter (the ``mpi`` extra's MPICH puts it there), else PATH's.

    The launcher beside the interpreter belongs to the MPI library mpi4py was
    installed with; the one on PATH may be another implementation. None when
    there is neither.
    """
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def launcher_environment(mpiexec, environment):
    """``environment`` plus what ``mpiexec`` needs to start jobs here.

    Open MPI's launcher refuses to run as root unless both
    ``OMPI_ALLOW_RUN_AS_ROOT`` and ``OMPI_ALLOW_RUN_AS_ROOT_CONFIRM`` are 1
    (containers often run as root); those are set for it when running as
    root and not set already. MPICH's launcher needs nothing.
    """
    environment = dict(environment)
    if hasattr(os, "geteuid") and os.geteuid() == 0 and _is_open_mpi(mpiexec):
        environment.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        environment.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return environment


def _is_open_mpi(mpiexec):
    try:
        version = subprocess.run(
            [mpiexec, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    text = version.stdout + version.stderr
    return "Open MPI" in text or "OpenRTE" in text


def load_mpi(owner):
    """The ``mpi4py.MPI`` module, imported now; a clear error naming the install if missing."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise MPIUnavailableError(
            f"{owner} needs mpi4py and an MPI library, which are not installed ({exc}); "
            f"install them with {INSTALL_HINT}, then launch with `mpiexec -n N python train.py`"
        ) from exc
    except (RuntimeError, OSError) as exc:  # mpi4py present, its MPI library is not
        raise MPIUnavailableError(
            f"{owner}: mpi4py could not load an MPI library ({exc}); install MPICH with "
            f"{INSTALL_HINT} (or point mpi4py at a system MPI)"
        ) from exc
    return MPI


def read_timeout():
    """Seconds a collective may take (``REBIND_MPI_TIMEOUT``); None means no limit."""
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        raise ValueError(
            f"{TIMEOUT_VARIABLE}={text!r} is not a number of seconds; set it to e.g. 60, "
            "or 0 to wait forever"
        ) from None
    return seconds if seconds > 0 else None


class TimedComm:
    """A private duplicate of ``MPI.COMM_WORLD`` whose collectives have a deadline.

    Args:
        owner: who uses it, for messages (``"kvstore 'dist_sync'"``).
    """

    def __init__(self, owner):
        self._owner = owner
        self._mpi = load_mpi(owner)
        self.timeout = read_timeout()
        self._failure = None
        self._pending = None
        world = self._mpi.COMM_WORLD
        self.rank, self.size = world.Get_rank(), world.Get_size()
        self._comm = world
        comm, request = world.Idup()
        self._wait(request, "creating the store (duplicating MPI.COMM_WORLD)")
        self._comm = comm

    def __repr__(self):
        return f"<TimedComm rank {self.rank} of {self.size}, timeout {self.timeout}>"

    # -- collectives on NumPy arrays and bytes ------------------------------------------
    def allreduce(self, array, what):
        """Sum ``array`` (contiguous NumPy, changed in place) over every worker."""
        self._run(lambda: self._comm.Iallreduce(self._mpi.IN_PLACE, array), what)

    def bcast(self, array, what, root=0):
        """Overwrite ``array`` (contiguous NumPy) on every worker with ``root``'s."""
        self._run(lambda: self._comm.Ibcast(array, root=root), what)

    def barrier(self, what):
        """Return once every worker has called ``barrier``."""
        self._run(self._comm.Ibarrier, what)

    def allgather_bytes(self, data, what):
        """Every worker's ``data`` (bytes), in rank order."""
        counts = np.zeros(self.size, np.int64)
        self._run(lambda: self._comm.Iallgather(np.array([len(data)], np.int64), counts), what)
        received = np.empty(int(counts.sum()), np.uint8)
        displacements = np.concatenate([[0], np.cumsum(counts)[:-1]])
        spec = [received, counts.tolist(), displacements.tolist(), self._mpi.BYTE]
        sent = np.frombuffer(data, np.uint8)
        self._run(lambda: self._comm.Iallgatherv([sent, self._mpi.BYTE], spec), what)
        return [received[d : d + c].tobytes() for d, c in zip(displacements, counts, strict=True)]

    def bcast_bytes(self, data, what, root=0):
        """``root``'s ``data`` (bytes; ignored elsewhere) on every worker."""
        length = np.array([len(data) if self.rank == root else 0], np.int64)
        self.bcast(length, what, root)
        buffer = np.empty(int(length[0]), np.uint8)
        if self.rank == root:
            buffer[:] = np.frombuffer(data, np.uint8)
        self.bcast(buffer, what, root)
        return buffer.tobytes()

    # -- waiting with a deadline ------------------------------------------------------
    def _run(self, start, what):
        if self._failure is not None:
            raise DistributedError(
                f"{self._owner}, rank {self.rank} of {self.size}: cannot run {what}: an "
                f"earlier collective failed ({self._failure}); the workers are out of step, "
                "restart the job"
            )
        try:
            request = start()
        except self._mpi.Exception as exc:
            raise self._error(what, f"MPI refused it: {exc}") from exc
        try:
            self._wait(request, what)
        except DistributedError:
            # MPI may still write into the buffers of a pending collective: keep them alive
            self._pending = (request, start)
            raise

    def _wait(self, request, what):
        try:
            if self.timeout is None:
                request.Wait()
                return
            start = time.monotonic()
            spin_until, deadline = start + SPIN_SECONDS, start + self.timeout
            nap = FIRST_NAP
            while not request.Test():
                now = time.monotonic()
                if now < spin_until:
                    os.sched_yield()
                    continue
                if now > deadline:
                    raise self._timed_out(what)
                time.sleep(nap)
                nap = min(nap * 2, LAST_NAP)
        except self._mpi.Exception as exc:
            raise self._error(what, f"MPI reported: {exc}") from exc

    def _timed_out(self, what):
        others = [rank for rank in range(self.size) if rank != self.rank]
        return self._error(
            what,
            f"it did not complete within {self.timeout:g} s: not every other worker (ranks "
            f"{others}) took part; one of them died, raised an error or is stuck. Set "
            f"{TIMEOUT_VARIABLE} (seconds, 0 = wait forever) if a step may legitimately take "
            "longer",
        )

    def _error(self, what, reason):
        if self._failure is None:
            atexit.register(_abort_job, self._mpi, self._owner)
        self._failure = what
        return DistributedError(
            f"{self._owner}, rank {self.rank} of {self.size}: {what} failed: {reason}. "
            f"This worker stops; {LAUNCH_HINT}"
        )


def _abort_job(mpi, owner):
    """End every worker: a collective left pending would make MPI_Finalize hang."""
    sys.stderr.write(f"rebind: {owner}: aborting the MPI job after a failed collective\n")
    sys.stderr.flush()
    sys.stdout.flush()
    time.sleep(ABORT_GRACE)  # the launcher drops output it has not forwarded when the job ends
    mpi.COMM_WORLD.Abort(1)
