"""examples/distributed_mlp.py runs on two MPI workers, and alone."""

import importlib.util
import re
import subprocess
import sys

import pytest

from ._launch import REPOSITORY, launch, needs_mpi, output

needs_sklearn = pytest.mark.skipif(
    importlib.util.find_spec("sklearn") is None,
    reason="scikit-learn is not installed (pip install 'rebind[examples]')",
)
SCRIPT = REPOSITORY / "examples" / "distributed_mlp.py"


def _accuracies(stdout):
    # not greedy: a line is still found if another rank's output was put inside it
    return re.findall(r"rank (\d) of (\d): .*?Validation accuracy: ([0-9.]+)", stdout)


@needs_mpi
@needs_sklearn
def test_example_trains_on_two_workers(tmp_path):
    # the worker launcher runs scripts from tests/distributed/workers; hand it a path instead
    result, _ = launch(2, SCRIPT, "--num-epochs", "4", "--checkpoint-dir", tmp_path, timeout=120)
    assert result.returncode == 0, output(result)
    found = _accuracies(result.stdout)
    assert sorted(rank for rank, _, _ in found) == ["0", "1"], output(result)
    accuracies = {accuracy for _, _, accuracy in found}
    assert len(accuracies) == 1, "the workers hold the same weights, so score the same"
    assert float(accuracies.pop()) > 0.9
    assert result.stdout.count("holds my weights: True") == 2


@needs_sklearn
@pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None, reason="mpi4py missing")
def test_example_runs_as_one_process(tmp_path):
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--num-epochs", "3", "--checkpoint-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert _accuracies(result.stdout)[0][:2] == ("0", "1")
