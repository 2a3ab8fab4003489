"""The example scripts run as written and learn: each in a subprocess, with few epochs."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# script, arguments for a short run, the validation accuracy it must reach
SHORT_RUNS = [
    ("python_loss_module.py", ["--num-epochs", "4"], 0.9),
    ("sequential_module.py", ["--num-epochs", "4"], 0.9),
]

needs_sklearn = pytest.mark.skipif(
    importlib.util.find_spec("sklearn") is None,
    reason="scikit-learn is not installed (pip install 'rebind[examples]'); the examples "
    "train on its bundled digits",
)


@needs_sklearn
@pytest.mark.parametrize("script, args, threshold", SHORT_RUNS, ids=[s[0] for s in SHORT_RUNS])
def test_example_trains_to_accuracy(script, args, threshold):
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=EXAMPLES.parent,
    )
    assert result.returncode == 0, f"{script} failed:\n{result.stdout}\n{result.stderr}"
    found = re.search(r"Validation accuracy: ([0-9.]+)", result.stdout)
    assert found, f"{script} printed no validation accuracy:\n{result.stdout}"
    assert float(found.group(1)) >= threshold, result.stdout
