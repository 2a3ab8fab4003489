"""rebind.tools.im2rec makes the .lst/.rec/.idx files MXNet 1.9.1's tools/im2rec.py made.

The golden outputs in tests/recordio/data/im2rec/ came from MXNet's own script run
with the options in cases.IM2REC_RUNS (OpenCV 4.8 there, the venv's OpenCV here);
the files match byte for byte, JPEG and PNG encodings included.
"""

import os
import subprocess
import sys

import pytest

from rebind import recordio
from rebind.tools import im2rec
from tests.recordio import cases

pytest.importorskip("cv2")  # im2rec needs the image extra

GOLDEN = sorted(path.name for path in cases.IM2REC.iterdir())


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """Runs every im2rec command of cases.IM2REC_RUNS in a fresh folder."""
    folder = tmp_path_factory.mktemp("im2rec")
    for name, text in cases.HANDWRITTEN_LISTS.items():
        (folder / name).write_text(text)
    for prefix, options in cases.IM2REC_RUNS:
        assert im2rec.main([str(folder / prefix), str(cases.IMAGES), *options]) == 0
    return folder


def test_makes_the_same_files(outputs):
    assert sorted(path.name for path in outputs.iterdir()) == GOLDEN


@pytest.mark.parametrize("name", GOLDEN)
def test_same_bytes_as_mxnet(outputs, name):
    assert (outputs / name).read_bytes() == (cases.IM2REC / name).read_bytes()


def test_records_carry_list_labels(outputs):
    record = recordio.MXIndexedRecordIO(outputs / "multi.idx", outputs / "multi.rec", "r")
    assert record.keys == [3, 7]
    header, img = recordio.unpack_img(record.read_idx(7))
    assert header.label.tolist() == [0.0, 2.0] and header.id == 7
    assert img.shape == (11, 17, 3)


def test_unreadable_image_is_reported_and_skipped(tmp_path, capsys):
    (tmp_path / "bad.lst").write_text("0\t0.000000\treadme.txt\n1\t1.000000\td0.png\n")
    assert im2rec.main([str(tmp_path / "bad"), str(cases.IMAGES / "dog"), "--num-thread", "2"]) == 0
    assert "readme.txt" in capsys.readouterr().out
    record = recordio.MXIndexedRecordIO(tmp_path / "bad.idx", tmp_path / "bad.rec", "r")
    assert record.keys == [1]


def test_bad_list_lines_are_reported(tmp_path, capsys):
    (tmp_path / "l.lst").write_text("only\ttwo\nx\t1.0\td0.png\n")
    im2rec.main([str(tmp_path / "l"), str(cases.IMAGES / "dog")])
    out = capsys.readouterr().out
    assert "at least has three parts" in out and "Parsing lst met error" in out
    assert f"{tmp_path / 'l.lst'}, line 1)" in out and "l.lst, line 2)" in out


def test_command_line(tmp_path):
    command = [
        sys.executable,
        "-m",
        "rebind.tools.im2rec",
        str(tmp_path / "flat"),
        str(cases.IMAGES),
    ]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([*command, "--list", "--no-shuffle"], check=True, env=env, capture_output=True)
    assert (tmp_path / "flat.lst").read_bytes() == (cases.IM2REC / "flat.lst").read_bytes()
