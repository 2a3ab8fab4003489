"""Launching worker scripts under ``mpiexec`` for the distributed tests, or skipping."""

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rebind.plugins.mpi_comm import find_mpiexec, launcher_environment

WORKERS = Path(__file__).parent / "workers"
REPOSITORY = Path(__file__).resolve().parents[2]


def skip_reason():
    """Why the MPI tests cannot run here, or None."""
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install 'rebind[mpi]')"
    if find_mpiexec() is None:
        return "no mpiexec beside the interpreter or on PATH (pip install 'rebind[mpi]')"
    return None


needs_mpi = pytest.mark.skipif(skip_reason() is not None, reason=str(skip_reason()))


def launch(workers, script, *args, timeout=60, abort_on_error=True, env=None):
    """Run ``workers/<script>`` on ``workers`` MPI processes; ``(CompletedProcess, seconds)``.

    With ``abort_on_error`` the script runs under ``python -m mpi4py``, which
    aborts the whole job on an uncaught exception. The test fails (instead of
    hanging) if the job outlives ``timeout`` seconds.
    """
    launcher = find_mpiexec()
    command = [launcher, "-n", str(workers), sys.executable]
    if abort_on_error:
        command += ["-m", "mpi4py"]
    command += [str(WORKERS / script), *map(str, args)]
    environment = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    environment.update(env or {})
    environment = launcher_environment(launcher, environment)
    started = time.monotonic()
    # a session of its own, so a job that overruns is killed with all its processes
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPOSITORY,
        env=environment,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"{' '.join(command)} still ran after {timeout} s:\n{stdout}\n{stderr}")
    result = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    return result, time.monotonic() - started


def output(result):
    """stdout and stderr of a finished job, for assertions and failure messages."""
    return f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
