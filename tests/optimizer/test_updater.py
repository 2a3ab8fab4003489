"""The updater: lazy states, saving and restoring them safely, reading MXNet's pickles."""

import json
import os
import pickle
import struct
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import rebind as mx
from rebind.errors import FormatError
from rebind.optimizer import states as updater_states

DATA = Path(__file__).parent / "data"


def _run(updater, ctx, steps, seed):
    rs = np.random.RandomState(seed)
    weights = {
        0: mx.nd.array(rs.randn(2, 3), ctx=ctx),
        "fc_bias": mx.nd.array(rs.randn(3), ctx=ctx),
    }
    for _ in range(steps):
        for index, weight in weights.items():
            updater(index, mx.nd.array(rs.randn(*weight.shape), ctx=ctx), weight)
    return weights


def _continue(updater, weights, ctx, steps, seed):
    rs = np.random.RandomState(seed)
    for _ in range(steps):
        for index, weight in weights.items():
            updater(index, mx.nd.array(rs.randn(*weight.shape), ctx=ctx), weight)


def _copy(weights):
    return {k: w.copy() for k, w in weights.items()}


# -- the updater ------------------------------------------------------------------


def test_states_are_created_lazily_on_the_weight_context(ctx):
    updater = mx.optimizer.get_updater(mx.optimizer.create("adam"))
    assert updater.states == {}
    weights = _run(updater, ctx, 1, seed=0)
    assert set(updater.states) == set(weights)
    assert all(array.context == ctx for array in updater.states[0])
    assert updater.states_synced == {0: True, "fc_bias": True}


def test_list_calls_and_bytes_indices(ctx):
    updater = mx.optimizer.get_updater(mx.optimizer.create("sgd", learning_rate=1.0))
    weights = [mx.nd.ones((2,), ctx=ctx), mx.nd.ones((2,), ctx=ctx)]
    updater([b"a", b"b"], [mx.nd.ones((2,), ctx=ctx)] * 2, weights)
    assert sorted(updater.states) == ["a", "b"]
    np.testing.assert_allclose(weights[1].asnumpy(), [0.0, 0.0])
    with pytest.raises(ValueError, match="2 indices, 1 gradients"):
        updater([0, 1], [weights[0]], weights)


def test_states_round_trip_with_the_optimizer(ctx):
    scheduler = mx.lr_scheduler.MultiFactorScheduler(step=[2, 4], factor=0.5, base_lr=0.02)
    optimizer = mx.optimizer.create(
        "adam", learning_rate=0.02, lr_scheduler=scheduler, param_idx2name={0: "w_weight"}
    )
    updater = mx.optimizer.get_updater(optimizer)
    weights = _run(updater, ctx, 3, seed=1)
    saved = updater.get_states(dump_optimizer=True)
    assert saved.startswith(updater_states.MAGIC)
    reference = _copy(weights)
    _continue(updater, reference, ctx, 3, seed=2)

    restored = mx.optimizer.get_updater(mx.optimizer.create("sgd"))
    restored.set_states(saved)
    assert type(restored.optimizer) is mx.optimizer.Adam
    assert restored.optimizer.num_update == 3 and restored.optimizer.idx2name == {0: "w_weight"}
    assert type(restored.optimizer.lr_scheduler) is mx.lr_scheduler.MultiFactorScheduler
    assert restored.states_synced == {0: False, "fc_bias": False}
    resumed = _copy(weights)
    _continue(restored, resumed, ctx, 3, seed=2)
    for index in weights:
        np.testing.assert_array_equal(resumed[index].asnumpy(), reference[index].asnumpy())
        assert restored.states[index][0].context == ctx


def test_states_only_round_trip_keeps_the_optimizer(ctx):
    updater = mx.optimizer.get_updater(mx.optimizer.create("sgd", momentum=0.9))
    weights = _run(updater, ctx, 2, seed=3)
    saved = updater.get_states()
    reference = _copy(weights)
    _continue(updater, reference, ctx, 2, seed=4)
    fresh = mx.optimizer.create("sgd", momentum=0.9)
    restored = mx.optimizer.get_updater(fresh)
    restored.set_states(saved)
    assert restored.optimizer is fresh
    resumed = _copy(weights)
    _continue(restored, resumed, ctx, 2, seed=4)
    for index in weights:
        np.testing.assert_array_equal(resumed[index].asnumpy(), reference[index].asnumpy())


def test_nested_and_none_states_round_trip(ctx):
    states = {0: (None, mx.nd.ones((2,), ctx=ctx)), 1: None, "x": [1, 2.5, float("nan"), "s"]}
    loaded, optimizer = updater_states.loads(updater_states.dumps(states))
    assert optimizer is None and loaded[1] is None and loaded[0][0] is None
    np.testing.assert_array_equal(loaded[0][1].asnumpy(), [1.0, 1.0])
    assert loaded["x"][:2] == [1, 2.5] and np.isnan(loaded["x"][2]) and loaded["x"][3] == "s"


def test_unsaveable_values_are_named():
    with pytest.raises(TypeError, match=r"states\[0\]: a set is not"):
        updater_states.dumps({0: {1, 2}})

    class Unregistered(mx.optimizer.Optimizer):
        pass

    with pytest.raises(TypeError, match="Unregistered: it is not registered"):
        updater_states.dumps({}, Unregistered())


def _empty_list_file():
    return struct.pack("<QQQQ", 0x112, 0, 0, 0)


def _with_header(header):
    text = json.dumps(header).encode()
    return updater_states.MAGIC + struct.pack("<IQ", 1, len(text)) + text + _empty_list_file()


@pytest.mark.parametrize(
    "data, message",
    [
        (updater_states.MAGIC + b"\x01", "truncated header"),
        (updater_states.MAGIC + struct.pack("<IQ", 7, 0), "format version 7"),
        (updater_states.MAGIC + struct.pack("<IQ", 1, 99) + b"{}", "header of 99 bytes"),
        (_with_header({"version": 1, "states": {"pickle": "x"}}), "unknown tag 'pickle'"),
        (_with_header({"version": 1, "states": {"dict": [[0, {"array": 3}]]}}), "names array 3"),
        (_with_header({"version": 1, "states": [1]}), "not a value"),
    ],
)
def test_corrupt_rebind_states_are_refused(data, message):
    with pytest.raises(FormatError, match=message):
        mx.optimizer.get_updater(mx.optimizer.create("sgd")).set_states(data)


def test_saved_optimizer_must_be_registered_class():
    header = {"version": 1, "states": {"dict": []}, "optimizer": {"name": "nosuch", "attrs": {}}}
    with pytest.raises(ValueError, match="unknown optimizer 'nosuch'"):
        updater_states.loads(_with_header(header))


# -- MXNet's pickles ----------------------------------------------------------------


def test_reads_a_states_file_written_by_mxnet(ctx):
    expected = mx.nd.load(str(DATA / "mxnet_1.9.1_updater_expected.params"))
    updater = mx.optimizer.get_updater(mx.optimizer.create("adam", learning_rate=0.01))
    updater.set_states((DATA / "mxnet_1.9.1_updater.states").read_bytes())
    assert set(updater.states) == {0, "fc_bias", 3}
    assert updater.states[3][0] is None
    for name, array in expected.items():
        index, position = name.split("/")
        index = int(index) if index.isdigit() else index
        np.testing.assert_array_equal(
            updater.states[index][int(position)].asnumpy(), array.asnumpy()
        )
    weight = mx.nd.zeros((2, 3), ctx=ctx)
    updater(0, mx.nd.ones((2, 3), ctx=ctx), weight)
    assert updater.states[0][0].context == ctx


def test_mxnet_states_with_a_dumped_optimizer_are_refused():
    data = (DATA / "mxnet_1.9.1_dump_optimizer.states").read_bytes()
    with pytest.raises(FormatError, match="mxnet.optimizer.optimizer.Adam.*dump_optimizer=False"):
        mx.optimizer.get_updater(mx.optimizer.create("adam")).set_states(data)


def _record(values):
    """One NDArray record of the .params format, written by hand (V2, dense, cpu, float32)."""
    values = np.asarray(values, np.float32)
    head = struct.pack(f"<Iii{values.ndim}q", 0xF993FAC9, 0, values.ndim, *values.shape)
    return head + struct.pack("<iii", 1, 0, 0) + values.astype("<f4").tobytes()


@pytest.fixture
def fake_mxnet(monkeypatch):
    """A stand-in ``mxnet.ndarray.ndarray.NDArray`` that pickles as MXNet's does."""

    class NDArray:
        def __init__(self, raw=None):
            self.raw = raw

        def __reduce__(self):
            return NDArray, (None,), {"handle": None if self.raw is None else bytearray(self.raw)}

    NDArray.__module__, NDArray.__qualname__ = "mxnet.ndarray.ndarray", "NDArray"
    for name in ("mxnet", "mxnet.ndarray", "mxnet.ndarray.ndarray"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    sys.modules["mxnet.ndarray.ndarray"].NDArray = NDArray
    return NDArray


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_reads_hand_made_mxnet_pickles(fake_mxnet, protocol):
    states = {
        0: (fake_mxnet(_record([[1, 2], [3, 4]])), fake_mxnet(_record([0.5]))),
        "fc_bias": fake_mxnet(_record([7, 8, 9])),
        2: None,
        3: (fake_mxnet(None), np.arange(3, dtype=np.float64), np.float32(1.5), 4),
    }
    loaded = updater_states.loads(pickle.dumps(states, protocol=protocol))[0]
    np.testing.assert_array_equal(loaded[0][0].asnumpy(), [[1, 2], [3, 4]])
    assert loaded[0][1].dtype == np.float32 and loaded[0][1].shape == (1,)
    np.testing.assert_array_equal(loaded["fc_bias"].asnumpy(), [7, 8, 9])
    assert loaded[2] is None and loaded[3][0] is None
    np.testing.assert_array_equal(loaded[3][1].asnumpy(), [0, 1, 2])
    assert loaded[3][1].dtype == np.float64 and loaded[3][2:] == (1.5, 4)


class _Evil:
    def __init__(self, action):
        self.action = action

    def __reduce__(self):
        return self.action


@pytest.mark.parametrize("protocol", [0, 2, pickle.DEFAULT_PROTOCOL])
@pytest.mark.parametrize(
    "name, make_action",
    [
        ("system", lambda marker: (os.system, (f"touch {marker}",))),
        ("eval", lambda marker: (eval, (f"open({str(marker)!r}, 'w')",))),
        ("open", lambda marker: (open, (str(marker), "w"))),
    ],
)
def test_malicious_pickles_are_refused_without_running(tmp_path, protocol, name, make_action):
    marker = tmp_path / "pwned"
    payload = pickle.dumps({0: _Evil(make_action(marker))}, protocol=protocol)
    with pytest.raises(FormatError, match=rf"refusing to load \w+\.{name}"):
        mx.optimizer.get_updater(mx.optimizer.create("sgd")).set_states(payload)
    assert not marker.exists()


def test_object_arrays_and_other_classes_are_refused(fake_mxnet):
    with pytest.raises(FormatError, match="not numeric"):
        updater_states.loads(pickle.dumps({0: np.array([1, "a"], dtype=object)}))
    with pytest.raises(FormatError, match="refusing to load collections.OrderedDict"):
        from collections import OrderedDict

        updater_states.loads(pickle.dumps({0: OrderedDict(a=1)}))
    with pytest.raises(FormatError, match="not an array or container"):
        updater_states.loads(pickle.dumps({0: bytearray(b"x")}))
    with pytest.raises(FormatError, match="MXNet NDArray state must be"):
        bad = fake_mxnet(b"")
        bad.__reduce__ = lambda: (type(bad), (None,), {"handle": b"", "extra": 1})
        updater_states.loads(pickle.dumps({0: bad}))


@pytest.mark.parametrize("data", [b"", b"garbage", pickle.dumps([1, 2]), b"\x80\x04K"])
def test_unreadable_bytes_are_format_errors(data):
    with pytest.raises(FormatError):
        updater_states.loads(data)


def test_a_corrupt_ndarray_record_is_a_format_error(fake_mxnet):
    with pytest.raises(FormatError, match="truncated"):
        updater_states.loads(pickle.dumps({0: fake_mxnet(_record([1, 2, 3])[:-4])}))


BIG = b"\x8a\x06\x00\x10\xa5\xd4\xe8\x00"  # LONG1: 10**12


@pytest.mark.parametrize(
    "payload, message",
    [
        # bytearray(10**12): memory from nothing
        (b"\x80\x02c__builtin__\nbytearray\n" + BIG + b"\x85R.", "only from bytes or text"),
        # numpy's reconstructor asked for a 10**12-element array
        (
            b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n"
            + BIG
            + b"\x85C\x01b\x87R.",
            "as NumPy's own pickles do",
        ),
        (b"\x80\x02cnumpy\nndarray\n" + BIG + b"\x85R.", "may not call numpy.ndarray"),
    ],
)
def test_allocation_bombs_are_refused(payload, message):
    with pytest.raises(FormatError, match=message):
        updater_states.loads(payload)
