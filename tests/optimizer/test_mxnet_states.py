"""Optimizer ``.states`` exchanged with MXNet 1.9.1, both ways (tests/recording/record_states.py).

- rebind writes the bytes MXNet writes for the same states;
- rebind resumes from MXNet's checkpoint to the weights MXNet reached;
- MXNet resumed from rebind's checkpoint (recorded) to the weights rebind reaches.
"""

import pickletools
import struct
from pathlib import Path

import numpy as np
import pytest

import rebind as mx
from rebind.optimizer import mxnet_pickle

from .states_cases import CASES, resume, train_and_save

GOLDEN = Path(__file__).parent.parent / "golden" / "states"
UPDATER_FILES = sorted((GOLDEN / "updater").glob("*.states")) + [
    Path(__file__).parent / "data" / "mxnet_1.9.1_updater.states"
]


def _tolerance(case):
    return (
        {"atol": 2e-3, "rtol": 2e-3}
        if CASES[case][4] == "float16"
        else {"atol": 1e-6, "rtol": 1e-5}
    )


def _assert_params_close(found, path, case):
    expected = mx.nd.load(str(path))
    assert sorted(found) == sorted(expected)
    for name, array in expected.items():
        np.testing.assert_allclose(
            found[name].asnumpy().astype("f8"),
            array.asnumpy().astype("f8"),
            **_tolerance(case),
            err_msg=f"{case}: {name}",
        )


@pytest.mark.parametrize("path", UPDATER_FILES, ids=lambda p: p.stem)
def test_updater_writes_mxnet_bytes_for_the_same_states(path):
    raw = path.read_bytes()
    updater = mx.optimizer.get_updater(mx.optimizer.create("sgd"))
    updater.set_states(raw)
    assert updater.get_states() == raw


@pytest.mark.parametrize("case", CASES)
def test_module_saves_mxnet_bytes_for_the_same_states(case, tmp_path):
    """MXNet's checkpoint loaded into a Module and saved again: the same bytes."""
    optimizer, params, devices, kvstore, dtype = CASES[case]
    mod = mx.mod.Module.load(
        str(GOLDEN / case / "mxnet"),
        1,
        load_optimizer_states=True,
        context=[mx.cpu(i) for i in range(devices)],
    )
    mod.bind(
        [mx.io.DataDesc("data", (4, 4), dtype)], [mx.io.DataDesc("softmax_label", (4,), dtype)]
    )
    mod.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=dict(params))
    mod.save_optimizer_states(str(tmp_path / "again.states"))
    assert (tmp_path / "again.states").read_bytes() == (
        GOLDEN / case / "mxnet-0001.states"
    ).read_bytes()


@pytest.mark.parametrize("case", CASES)
def test_rebind_resumes_from_mxnet_checkpoint(case):
    found = resume(mx, case, str(GOLDEN / case / "mxnet"))
    _assert_params_close(found, GOLDEN / case / "mxnet_resumed.params", case)


@pytest.mark.parametrize("case", CASES)
def test_mxnet_resumed_from_rebind_checkpoint_as_rebind_does(case):
    """MXNet loaded rebind's recorded checkpoint and trained on; rebind does the same."""
    found = resume(mx, case, str(GOLDEN / case / "rebind"))
    _assert_params_close(found, GOLDEN / case / "rebind_resumed_by_mxnet.params", case)


def _opcodes(raw):
    """The pickle's opcodes and arguments, array records cut to their head (shape to dtype)."""
    ops = []
    for op, arg, _ in pickletools.genops(raw):
        if isinstance(arg, bytes):
            arg = arg[: 24 + 8 * struct.unpack_from("<i", arg, 8)[0]]
        ops.append((op.name, arg))
    return ops


@pytest.mark.parametrize("case", CASES)
def test_rebind_checkpoint_states_are_laid_out_as_mxnet_writes_them(case, tmp_path):
    """Trained in rebind: the same keys, nesting, devices, dtypes and near values as MXNet's.

    On a kvstore the records say cpu_pinned(0) (device type 3), where MXNet's
    CPU kvstores keep their copy of a key, as MXNet's file does.
    """
    train_and_save(mx, case, str(tmp_path / "run"))
    ours = (tmp_path / "run-0001.states").read_bytes()
    theirs = (GOLDEN / case / "mxnet-0001.states").read_bytes()
    assert _opcodes(ours) == _opcodes(theirs)
    ours, theirs = mxnet_pickle.loads(ours), mxnet_pickle.loads(theirs)
    assert list(ours) == list(theirs)
    for key in theirs:
        for mine, recorded in zip(_flat(ours[key]), _flat(theirs[key]), strict=True):
            assert mine.context == recorded.context and mine.dtype == recorded.dtype
            np.testing.assert_allclose(mine.asnumpy(), recorded.asnumpy(), **_tolerance(case))


def _flat(state):
    if isinstance(state, tuple):
        return [a for part in state for a in _flat(part)]
    return [] if state is None else [state]


def test_states_of_a_second_cpu_are_read_back_on_it():
    raw = (GOLDEN / "sgd_mom_2dev_nokv" / "mxnet-0001.states").read_bytes()
    loaded = mxnet_pickle.loads(raw)
    assert {k: v.context for k, v in loaded.items()} == {
        0: mx.cpu(0),
        2: mx.cpu(0),
        1: mx.cpu(1),
        3: mx.cpu(1),
    }


def test_dump_optimizer_keeps_rebinds_own_format():
    from rebind.optimizer import states as updater_states

    updater = mx.optimizer.get_updater(mx.optimizer.create("sgd", momentum=0.9))
    updater(0, mx.nd.ones((2,)), mx.nd.ones((2,)))
    assert updater.get_states(dump_optimizer=True).startswith(updater_states.MAGIC)
    assert updater.get_states().startswith(b"\x80\x04\x95")


@pytest.mark.parametrize(
    "states",
    [
        {},
        {0: None},
        {i: None for i in range(2000)},
        {"a": (1, -1, 300, 70000, -(2**40), 2**70, 0.5, True, False, None, "é" * 300)},
        {0: [None] * 1001, 1: [1], 2: [], 3: ()},
        {0: ("x" * 70000, b"")[:1]},
    ],
)
def test_plain_values_are_pickled_as_python_pickles_them(states):
    """Without arrays the stream is Python's own protocol-4 pickle (the C pickler's)."""
    import pickle

    from rebind.optimizer import mxnet_pickle_writer

    assert mxnet_pickle_writer.dumps(states) == pickle.dumps(states, protocol=4)
