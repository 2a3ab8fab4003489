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


# -- pickling: MXNet's state {"handle": one record} ----------------------------------
# NDArray.__getstate__() of MXNet 1.9.1 for nd.array([[1.5, 2], [3, 4]]) and
# nd.array([7, 8], dtype="int32") on cpu(0)
MXNET_STATES = [
    (
        b"\xc9\xfa\x93\xf9\x00\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00"
        b"\x02\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        b"\x00\x00\xc0?\x00\x00\x00@\x00\x00@@\x00\x00\x80@",
        np.array([[1.5, 2], [3, 4]], dtype=np.float32),
    ),
    (
        b"\xc9\xfa\x93\xf9\x00\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00"
        b"\x01\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x07\x00\x00\x00\x08\x00\x00\x00",
        np.array([7, 8], dtype=np.int32),
    ),
]
# MXNet's test_load_saved_gpu_array_when_no_gpus_are_present: mx.nd.arange(1, ctx=gpu(0))
GPU_STATE = (
    b"\xc9\xfa\x93\xf9\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"
    b"\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
)


@pytest.mark.parametrize(("state", "values"), MXNET_STATES)
def test_getstate_matches_mxnet_and_setstate_reads_it(state, values):
    array = mx.nd.array(values, dtype=values.dtype)
    assert array.__getstate__() == {"handle": bytearray(state)}
    restored = mx.nd.zeros((1,))
    restored.__setstate__({"handle": bytearray(state)})
    assert restored.dtype is values.dtype.type and restored.context == mx.cpu(0)
    np.testing.assert_array_equal(restored.asnumpy(), values)


def test_a_gpu_state_loads_on_the_cpu_when_that_gpu_is_absent():
    restored = mx.nd.zeros((1,))
    restored.__setstate__({"handle": bytearray(GPU_STATE)})
    expected = mx.gpu(0) if mx.context.num_gpus() > 0 else mx.cpu(0)
    assert restored.context == expected
    np.testing.assert_array_equal(restored.asnumpy(), [0.0])


def test_pickle_round_trip_keeps_values_dtype_and_context(ctx):
    import pickle

    array = mx.nd.array(np.arange(6).reshape(2, 3), ctx=ctx, dtype=np.float16)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        restored = pickle.loads(pickle.dumps(array, protocol=protocol))
        assert restored.context == ctx and restored.dtype is np.float16
        np.testing.assert_array_equal(restored.asnumpy(), array.asnumpy())


def test_setstate_refuses_a_state_without_data():
    with pytest.raises(NotImplementedError, match="handle None"):
        mx.nd.zeros((1,)).__setstate__({"handle": None})


def test_copy_and_deepcopy_give_independent_arrays_on_the_same_context(ctx):
    import copy

    array = mx.nd.array([[1, 2], [3, 4]], ctx=ctx, dtype=np.int32)
    for twin in (copy.copy(array), copy.deepcopy({"a": array, "b": None})["a"]):
        assert twin is not array and twin.context == ctx and twin.dtype is np.int32
        twin[:] = 0
        np.testing.assert_array_equal(array.asnumpy(), [[1, 2], [3, 4]])
