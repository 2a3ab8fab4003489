"""examples/detect.py trains its SSD-style detector through ImageDetRecordIter and learns.

A short run (3 epochs on 300 generated images) measured a validation mAP of 0.74
(an untrained network scores near 0); the test asks for 0.5.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cv2")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_detect_example_reaches_map():
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "detect.py"), "--num-epochs", "3", "--num-train", "300",
         "--num-val", "100"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=EXAMPLES.parent,
    )  # fmt: skip
    assert result.returncode == 0, f"detect.py failed:\n{result.stdout}\n{result.stderr}"
    found = re.search(r"Validation mAP: ([0-9.]+)", result.stdout)
    assert found, f"detect.py printed no mAP:\n{result.stdout}"
    assert float(found.group(1)) >= 0.5, result.stdout
