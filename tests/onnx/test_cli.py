"""``python -m rebind.onnx export PREFIX EPOCH --shape ...``: a checkpoint to ONNX."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from rebind.onnx.__main__ import main

from .harness import onnx, run_onnx


@pytest.fixture
def lenet(golden, tmp_path):
    """A copy of the LeNet-with-BatchNorm checkpoint: (prefix, epoch, eval data, MXNet output)."""
    cases = json.loads((golden / "manifest.json").read_text())["categories"]["checkpoints"]
    (case,) = [c for c in cases["cases"] if c["id"] == "lenet_bn"]
    for name in case["files"]:
        shutil.copy(golden / case["dir"] / name, tmp_path / name)
    data = np.load(golden / case["data_file"])
    return str(tmp_path / case["prefix"]), case["epoch"], data["eval.data"], data["eval.output.0"]


def test_export_writes_prefix_onnx_that_predicts_as_mxnet(lenet, capsys):
    prefix, epoch, x, expected = lenet
    assert main(["export", prefix, str(epoch), "--shape", "data:16,1,12,12"]) == 0
    assert capsys.readouterr().out.strip() == f"{prefix}.onnx"
    (got,) = run_onnx(f"{prefix}.onnx", {"data": x})
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_dynamic_opset_and_output(lenet, tmp_path):
    prefix, epoch, x, expected = lenet
    out = tmp_path / "lenet.onnx"
    argv = ["export", prefix, str(epoch), "--shape", "data:1,1,12,12", "--dynamic"]
    assert main([*argv, "--opset", "15", "--output", str(out), "--dtype", "float32"]) == 0
    model = onnx.load(str(out))
    assert model.opset_import[0].version == 15
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    (got,) = run_onnx(out, {"data": x[:5]})
    np.testing.assert_allclose(got, expected[:5], rtol=1e-5, atol=1e-6)


def test_shape_names_must_match_the_inputs(lenet, capsys):
    prefix, epoch, _, _ = lenet
    with pytest.raises(SystemExit) as exc:
        main(["export", prefix, str(epoch), "--shape", "image:1,1,12,12"])
    assert exc.value.code == 2
    assert "do not match the model's inputs ['data']" in capsys.readouterr().err


@pytest.mark.parametrize("shape", ["data", "data:", "data:1,x", "data:0,3"])
def test_bad_shape_text(lenet, capsys, shape):
    prefix, epoch, _, _ = lenet
    with pytest.raises(SystemExit):
        main(["export", prefix, str(epoch), "--shape", shape])
    assert "NAME:D1,D2" in capsys.readouterr().err


def test_missing_epoch_is_an_error_not_a_traceback(lenet, capsys):
    prefix, _, _, _ = lenet
    assert main(["export", prefix, "9", "--shape", "data:1,1,12,12"]) == 1
    assert "0009.params" in capsys.readouterr().err


def test_runs_as_a_module(lenet, tmp_path):
    prefix, epoch, _, _ = lenet
    out = tmp_path / "m.onnx"
    command = [sys.executable, "-m", "rebind.onnx", "export", prefix, str(epoch)]
    command += ["--shape", "data:2,1,12,12", "--output", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(out)
    onnx.checker.check_model(onnx.load(str(out)))
