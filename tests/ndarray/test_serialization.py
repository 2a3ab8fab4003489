"""``mx.nd.save`` / ``mx.nd.load`` on NDArrays, against the files MXNet 1.9.1 wrote."""

import json

import numpy as np
import pytest

import rebind as mx
from rebind.errors import FormatError
from tests.conftest import GOLDEN

CASES = json.loads((GOLDEN / "manifest.json").read_text())["categories"]["ndarray_files"]["cases"]
# Files whose re-save cannot be byte-identical, and why (see README, "Differences").
NOT_REPRODUCED = {
    "sparse_csr_rowsparse": "rebind stores arrays densely",
    "legacy_0d_unloadable": "re-saved in the V3 form MXNet can read",
}


def _expected(case):
    with np.load(GOLDEN / case["expected_file"]) as npz:
        return {key: npz[key] for key in npz.files}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_golden_file_loads_with_mxnet_values(case):
    loaded = mx.nd.load(GOLDEN / case["file"])
    expected = _expected(case)
    if case["id"] == "sparse_csr_rowsparse":
        expected = {k[: -len(".dense")]: v for k, v in expected.items() if k.endswith(".dense")}
    if isinstance(loaded, list):
        assert case["names"] == []
        loaded = {str(i): array for i, array in enumerate(loaded)}
    else:
        assert list(loaded) == case["names"]
    assert sorted(loaded) == sorted(expected)
    for name, array in loaded.items():
        assert array.context == mx.cpu(0)
        assert array.dtype == expected[name].dtype.type, name
        assert array.shape == expected[name].shape, name
        np.testing.assert_array_equal(array.asnumpy(), expected[name], err_msg=name)


@pytest.mark.parametrize(
    "case", [c for c in CASES if c["id"] not in NOT_REPRODUCED], ids=lambda c: c["id"]
)
def test_golden_file_resaves_byte_for_byte(case, tmp_path):
    original = (GOLDEN / case["file"]).read_bytes()
    mx.nd.save(tmp_path / "again.params", mx.nd.load(GOLDEN / case["file"]))
    assert (tmp_path / "again.params").read_bytes() == original


def test_save_from_any_backend_and_load(ctx, tmp_path):
    data = {"w": mx.nd.array(np.arange(6).reshape(2, 3), ctx=ctx), "b": mx.nd.ones(3, ctx=ctx)}
    mx.nd.save(tmp_path / "x.params", data)
    loaded = mx.nd.load(tmp_path / "x.params")
    assert list(loaded) == ["w", "b"]
    np.testing.assert_array_equal(loaded["w"].asnumpy(), data["w"].asnumpy())


def test_single_array_and_list_saves_load_as_lists(tmp_path):
    mx.nd.save(tmp_path / "one", mx.nd.ones(2))
    assert [a.shape for a in mx.nd.load(tmp_path / "one")] == [(2,)]
    mx.nd.save(tmp_path / "two", [mx.nd.ones(2), mx.nd.zeros((1, 1), dtype="int64")])
    loaded = mx.nd.load(tmp_path / "two")
    assert isinstance(loaded, list) and loaded[1].dtype == np.int64


def test_load_frombuffer_matches_load():
    raw = (GOLDEN / "ndarray_files/dict_all_dtypes.params").read_bytes()
    from_buffer = mx.nd.load_frombuffer(raw)
    from_file = mx.nd.load(GOLDEN / "ndarray_files/dict_all_dtypes.params")
    assert list(from_buffer) == list(from_file)
    for name in from_file:
        np.testing.assert_array_equal(from_buffer[name].asnumpy(), from_file[name].asnumpy())


@pytest.mark.parametrize(
    "data", [{"a": np.ones(2)}, [np.ones(2)], {1: mx.nd.ones(2)}, "text", [mx.nd.ones(1), 3]]
)
def test_save_refuses_what_is_not_ndarrays(data, tmp_path):
    with pytest.raises(TypeError):
        mx.nd.save(tmp_path / "bad.params", data)
    assert not (tmp_path / "bad.params").exists()


def test_truncated_file_names_file_and_offset(tmp_path):
    raw = (GOLDEN / "checkpoints/mlp/mlp-0003.params").read_bytes()
    path = tmp_path / "cut-0003.params"
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(FormatError) as info:
        mx.nd.load(path)
    assert str(path) in str(info.value) and "offset" in str(info.value)


def test_failed_save_keeps_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "model-0001.params"
    mx.nd.save(path, {"w": mx.nd.ones(3)})
    before = path.read_bytes()

    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", crash)
    with pytest.raises(OSError, match="disk full"):
        mx.nd.save(path, {"w": mx.nd.zeros(300)})
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model-0001.params"]
