"""LibSVMIter against MXNet 1.9.1's batches, pads, epochs and partitions, and its refusals.

Golden values: tests/golden/io/libsvm.json (tests/recording/record_libsvm.py).
"""

import json
from pathlib import Path

import numpy as np
import pytest

import rebind as mx
from rebind.base import MXNetError

GOLDEN = json.loads((Path(__file__).parents[1] / "golden" / "io" / "libsvm.json").read_text())
CASES = GOLDEN["cases"]


def make_iter(case, folder):
    for name, text in case["files"].items():
        (folder / name).write_text(text)
    args = dict(case["args"])
    for key in ("data_shape", "label_shape"):
        if key in args:
            args[key] = tuple(args[key])
    if "label_libsvm" in args:
        args["label_libsvm"] = str(folder / args["label_libsvm"])
    return mx.io.LibSVMIter(data_libsvm=str(folder / "data.t"), **args)


@pytest.mark.parametrize("number", range(len(CASES)))
def test_batches_match_mxnet(number, tmp_path):
    case = CASES[number]
    if "error" in case:
        error = case["error"]
        # MXNet raises StopIteration from the constructor of an empty part; rebind ValueError
        expected = ValueError if "StopIteration" in error else (ValueError, NotImplementedError)
        if "bigger than batch size" in error:
            expected = MXNetError
        with pytest.raises(expected):
            it = make_iter(case, tmp_path)
            for _ in range(3):  # as recorded: three epochs
                list(it)
                it.reset()
        return
    it = make_iter(case, tmp_path)
    assert [[d.name, list(d.shape)] for d in it.provide_data] == case["provide_data"]
    assert [[d.name, list(d.shape)] for d in it.provide_label] == case["provide_label"]
    for epoch in case["epochs"]:
        got = list(it)
        assert len(got) == len(epoch)
        for batch, expected in zip(got, epoch, strict=True):
            assert batch.data[0].stype == expected["data_stype"] == "csr"
            batch.data[0].check_format(True)
            np.testing.assert_array_equal(batch.data[0].asnumpy(), expected["data"])
            assert batch.label[0].stype == expected["label_stype"]
            np.testing.assert_array_equal(batch.label[0].asnumpy(), expected["label"])
            assert batch.pad == expected["pad"]
            assert list(batch.index) == expected["index"]
        it.reset()


def test_too_large_batch_is_refused(tmp_path):
    (tmp_path / "data.t").write_text("1 0:1\n2 1:1\n")
    it = mx.io.LibSVMIter(data_libsvm=str(tmp_path / "data.t"), data_shape=(2,), batch_size=5)
    with pytest.raises(MXNetError, match="bigger than batch size"):
        it.next()


def test_malformed_line_names_file_and_line(tmp_path):
    path = tmp_path / "data.t"
    path.write_text("1.0 0:0.5\n-2.0\n-3.0 -1:0.6 1:2.4\n")
    with pytest.raises(MXNetError, match=r"data\.t, line 3: .*'-1:0\.6'"):
        mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(3,), batch_size=1)
    path.write_text("1.0 0:0.5\nx 1:1\n")
    with pytest.raises(MXNetError, match=r"line 2: the label 'x' is not a number"):
        mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(3,), batch_size=1)


def test_index_beyond_data_shape_is_refused(tmp_path):
    # MXNet keeps the index and yields a corrupt batch; rebind refuses (a documented difference)
    path = tmp_path / "data.t"
    path.write_text("1.0 0:0.5 5:1.2\n")
    with pytest.raises(MXNetError, match=r"feature index 5 is out of range for shape \(3,\)"):
        mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(3,), batch_size=1)


def test_folder_reads_its_files_in_name_order(tmp_path):
    (tmp_path / "b.t").write_text("2 1:2.0\n")
    (tmp_path / "a.t").write_text("1 0:1.0")  # no final newline
    it = mx.io.LibSVMIter(data_libsvm=str(tmp_path), data_shape=(2,), batch_size=2)
    batch = it.next()
    np.testing.assert_array_equal(batch.data[0].asnumpy(), [[1, 0], [0, 2]])
    np.testing.assert_array_equal(batch.label[0].asnumpy(), [1, 2])
