"""mx.test_utils' run helpers: environment, stderr, retry, GPUs, DummyIter."""

import os
import subprocess
import sys

import numpy as np
import pytest

import rebind as mx
from rebind import test_utils as tu


def test_environment_sets_and_restores(monkeypatch):
    monkeypatch.setenv("REBIND_T1", "before")
    monkeypatch.delenv("REBIND_T2", raising=False)
    with tu.environment({"REBIND_T1": "during", "REBIND_T2": "new"}):
        assert os.environ["REBIND_T1"] == "during" and os.environ["REBIND_T2"] == "new"
    assert os.environ["REBIND_T1"] == "before" and "REBIND_T2" not in os.environ
    with pytest.raises(RuntimeError), tu.environment("REBIND_T1", None):
        assert "REBIND_T1" not in os.environ
        raise RuntimeError("the body fails")
    assert os.environ["REBIND_T1"] == "before"


def test_environment_as_a_decorator(monkeypatch):
    monkeypatch.delenv("REBIND_T3", raising=False)

    @tu.environment("REBIND_T3", "on")
    def read():
        return os.environ.get("REBIND_T3")

    assert read() == "on" and "REBIND_T3" not in os.environ


def test_discard_stderr_silences_the_file_descriptor():
    code = (
        "import os, sys\n"
        "from rebind.test_utils import discard_stderr\n"
        "with discard_stderr():\n"
        "    os.write(2, b'hidden')\n"
        "os.write(2, b'shown')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert done.stderr == b"shown"


def test_retry_retries_assertions_only():
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) == 3

    flaky()
    assert len(calls) == 3

    @tu.retry(2)
    def always_fails():
        raise AssertionError("still wrong")

    with pytest.raises(AssertionError, match="still wrong"):
        always_fails()

    @tu.retry(5)
    def broken():
        calls.append(1)
        raise KeyError("not an assertion")

    before = len(calls)
    with pytest.raises(KeyError):
        broken()
    assert len(calls) == before + 1


def test_list_gpus_counts_devices():
    assert list(tu.list_gpus()) == list(range(mx.context.num_gpus()))


def test_platform_flags(monkeypatch):
    monkeypatch.setenv("CD_JOB", "1")
    assert tu.is_cd_run()
    monkeypatch.setenv("CD_JOB", "0")
    assert not tu.is_cd_run()
    assert tu.has_tvm_ops() is False and tu.is_op_runnable() is True


def test_dummy_iter_repeats_the_first_batch():
    data = np.arange(12, dtype=np.float32).reshape(6, 2)
    real = mx.io.NDArrayIter(data, np.arange(6), batch_size=2)
    dummy = tu.DummyIter(real)
    assert dummy.batch_size == 2 and dummy.provide_data == real.provide_data
    batches = [next(dummy) for _ in range(5)]
    assert all(batch is batches[0] for batch in batches)
    assert batches[0].data[0].asnumpy().tolist() == [[0, 1], [2, 3]]
