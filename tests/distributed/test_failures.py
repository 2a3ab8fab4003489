"""Workers that die, raise or hang make the others stop with a clear error, in bounded time.

MPICH's launcher ends the job when a worker is killed; a worker that raises
(without ``python -m mpi4py``) or stops taking part is caught by the store's
collective timeout (``REBIND_MPI_TIMEOUT``, 2 s here), and the others raise
``DistributedError`` naming the operation and the ranks.
"""

import re

import pytest

from ._launch import launch, needs_mpi, output

BOUND = 30  # seconds a failed job may take to end
FAST_TIMEOUT = {"REBIND_MPI_TIMEOUT": "2"}


@needs_mpi
def test_a_killed_worker_ends_the_job():
    result, seconds = launch(3, "failing_worker.py", "kill", timeout=60, env=FAST_TIMEOUT)
    assert result.returncode != 0, output(result)
    assert seconds < BOUND
    assert "rank 1: failing on purpose (kill)" in result.stdout
    # the launcher's report (MPICH's hydra: "Killed (signal 9)"; Open MPI: "signal 9 (Killed)")
    assert "signal 9" in result.stdout + result.stderr, output(result)
    assert "finished training" not in result.stdout


@needs_mpi
@pytest.mark.parametrize("workers", [2, 3])
def test_a_worker_that_raises_makes_the_others_time_out(workers):
    # without python -m mpi4py nothing aborts the job: the timeout must end it
    result, seconds = launch(
        workers, "failing_worker.py", "raise", abort_on_error=False, env=FAST_TIMEOUT
    )
    assert result.returncode != 0, output(result)
    assert seconds < BOUND
    assert "RuntimeError: rank 1 fails on purpose" in result.stderr, output(result)
    # the first survivor to time out aborts the job; the others may not get to print
    survivors = "|".join(str(rank) for rank in range(workers) if rank != 1)
    assert re.search(rf"rank ({survivors}) of {workers}: push of key", result.stderr), output(
        result
    )
    assert "did not complete within 2 s" in result.stderr
    assert "DistributedError" in result.stderr
    assert "finished training" not in result.stdout


@needs_mpi
def test_a_stuck_worker_makes_the_others_fail_and_the_job_end():
    result, seconds = launch(2, "failing_worker.py", "hang", env=FAST_TIMEOUT)
    assert result.returncode != 0, output(result)
    assert seconds < BOUND
    message = "rank 0 of 2: push of key 'fc1_weight' (allreduce) failed: it did not complete"
    assert message in result.stderr, output(result)
    assert "ranks [1]" in result.stderr


@needs_mpi
@pytest.mark.parametrize("workers", [2, 3])
def test_init_with_different_shapes_names_the_key_and_both_shapes(workers):
    result, _ = launch(workers, "mismatch_worker.py", abort_on_error=False)
    assert result.returncode == 0, output(result)
    message = (
        "init of key 'fc1_weight': shape (16, 10) on rank 0 but (17, 10) on rank 1; every "
        "worker must build the network with the same shapes"
    )
    for rank in range(workers):
        assert f"rank {rank}: ShapeError: kvstore 'dist_sync': {message}" in result.stdout, output(
            result
        )
