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
    ("mlp_digits.py", ["--num-epochs", "6"], 0.95),
    ("lenet_digits.py", ["--num-epochs", "5"], 0.95),
    ("train_imagerecord.py", ["--num-epochs", "6"], 0.9),
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


@needs_sklearn
@pytest.mark.parametrize("script", ["mlp_digits.py", "lenet_digits.py"])
def test_digits_example_reloads_its_checkpoint(script, tmp_path):
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script), "--num-epochs", "2", "--checkpoint-dir", tmp_path],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=EXAMPLES.parent,
    )
    assert result.returncode == 0, f"{script} failed:\n{result.stdout}\n{result.stderr}"
    stem = script.removesuffix(".py")
    saved = sorted(path.name for path in tmp_path.iterdir())
    assert saved == [f"{stem}-0001.params", f"{stem}-0002.params", f"{stem}-symbol.json"]
    scored = re.search(r"Validation accuracy: ([0-9.]+)", result.stdout).group(1)
    predicted = re.search(r"predict: 384 rows of 10 class probabilities, ([0-9.]+)", result.stdout)
    reloaded = re.search(r"reloaded from .*-0002\.params: accuracy ([0-9.]+)", result.stdout)
    assert predicted and reloaded, result.stdout
    # 384 validation examples are 12 whole batches of 32: score and predict see the same rows
    assert predicted.group(1) == scored
    assert reloaded.group(1) == scored


def test_lstm_bucketing_example_learns_and_reloads_its_checkpoint(tmp_path):
    quick = ["--num-epochs", "3", "--max-sentences", "1500", "--num-hidden", "64"]
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "lstm_bucketing.py"), *quick, "--num-embed", "32"]
        + ["--checkpoint-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=EXAMPLES.parent,
    )
    assert result.returncode == 0, f"lstm_bucketing.py failed:\n{result.stdout}\n{result.stderr}"
    before = re.search(r"Validation perplexity before training: ([0-9.]+)", result.stdout)
    trained = re.search(r"Validation perplexity: ([0-9.]+)", result.stdout)
    reloaded = re.search(r"reloaded from .*-0003\.params: perplexity ([0-9.]+)", result.stdout)
    assert before and trained and reloaded, result.stdout
    # untrained, the model is about as unsure as a uniform guess over the vocabulary
    assert float(trained.group(1)) < float(before.group(1)) / 2, result.stdout
    assert reloaded.group(1) == trained.group(1)
    saved = {path.name for path in tmp_path.iterdir()}
    expected = {
        "lstm_bucketing-0003.params",
        "lstm_bucketing-symbol.json",
        "lstm_bucketing.buckets",
    }
    assert expected <= saved, sorted(saved)


def test_operator_test_suite_example_passes_under_pytest():
    """examples/test_operators_suite.py is MXNet test code; it must pass as written."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(EXAMPLES / "test_operators_suite.py"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=EXAMPLES.parent,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^13 passed", result.stdout, re.MULTILINE), result.stdout


def test_sparse_linear_classification_learns_in_little_memory(tmp_path):
    # a million features: the dense form of one batch of 512 would take ~2 GB
    args = ["--num-examples", "4000", "--num-epochs", "3", "--data-dir", str(tmp_path)]
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "sparse_linear_classification.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=EXAMPLES.parent,
    )
    assert result.returncode == 0, f"failed:\n{result.stdout}\n{result.stderr}"
    assert "weight: row_sparse, (1000000, 2)" in result.stdout
    accuracy = re.search(r"Validation accuracy: ([0-9.]+)", result.stdout)
    assert accuracy and float(accuracy.group(1)) >= 0.7, result.stdout
    peak = re.search(
        r"Peak memory: ([0-9]+) MB; the dense form would need ([0-9]+) MB", result.stdout
    )
    assert peak and int(peak.group(1)) < int(peak.group(2)), result.stdout
