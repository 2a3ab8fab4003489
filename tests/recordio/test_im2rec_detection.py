"""im2rec packs a detection list (``--pack-label``) into the bytes MXNet 1.9.1's im2rec wrote.

tests/golden/detection_io/det.rec and det.idx came from MXNet's tools/im2rec.py
run on det.lst (header width 3, object width 6) with ``--pack-label --encoding
.png`` (tests/recording/record_detection_io.py); the packed labels then read back
through ImageDetIter.
"""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from rebind import recordio
from rebind.tools import im2rec

pytest.importorskip("cv2")

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "detection_io"


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("det_im2rec")
    shutil.copy(GOLDEN / "det.lst", folder / "det.lst")
    options = ["--pack-label", "--encoding", ".png", "--num-thread", "1"]
    assert im2rec.main([str(folder / "det"), str(GOLDEN), *options]) == 0
    return folder


@pytest.mark.parametrize("name", ["det.rec", "det.idx"])
def test_same_bytes_as_mxnet(packed, name):
    assert (packed / name).read_bytes() == (GOLDEN / name).read_bytes()


def test_every_label_value_is_packed(packed):
    reader = recordio.MXIndexedRecordIO(str(packed / "det.idx"), str(packed / "det.rec"), "r")
    lines = (GOLDEN / "det.lst").read_text().splitlines()
    for line in lines:
        fields = line.split("\t")
        header, _ = recordio.unpack(reader.read_idx(int(fields[0])))
        np.testing.assert_allclose(header.label, np.array(fields[1:-1], np.float32))
        assert header.flag == len(fields) - 2
    reader.close()
    assert os.path.getsize(packed / "det.rec") > 0
