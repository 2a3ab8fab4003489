"""environment, set_env_var, discard_stderr, retry, list_gpus, is_cd_run, DummyIter."""

import os
import subprocess
import sys

import numpy as np
import pytest

import rebind as mx
from rebind import test_utils as tu

VAR = "REBIND_TEST_UTILS_VAR"


def test_environment_context_manager_restores(monkeypatch):
    monkeypatch.setenv(VAR, "before")
    with tu.environment(VAR, "inside"):
        assert os.environ[VAR] == "inside"
    assert os.environ[VAR] == "before"
    with tu.environment({VAR: None, VAR + "2": "x"}):
        assert VAR not in os.environ and os.environ[VAR + "2"] == "x"
    assert os.environ[VAR] == "before" and VAR + "2" not in os.environ


def test_environment_restores_after_an_error(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    with pytest.raises(KeyError), tu.environment(VAR, "1"):
        raise KeyError("boom")
    assert VAR not in os.environ


def test_environment_as_decorator(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)

    @tu.environment(VAR, "deco")
    def read():
        return os.environ[VAR]

    assert read() == "deco" and read() == "deco"
    assert VAR not in os.environ


def test_set_env_var_returns_previous(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    assert tu.set_env_var(VAR, "a", default_val="none") == "none"
    assert tu.set_env_var(VAR, "b") == "a" and os.environ[VAR] == "b"


def test_discard_stderr_silences_descriptor_two():
    code = ("import os, sys\nfrom rebind.test_utils import discard_stderr\n"
            "with discard_stderr():\n    os.write(2, b'hidden')\nos.write(2, b'shown')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert done.stderr == b"shown"


def test_retry_retries_assertion_errors_only():
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) >= 3

    flaky()
    assert len(calls) == 3

    @tu.retry(2)
    def always_fails():
        calls.append(2)
        raise AssertionError("still wrong")

    with pytest.raises(AssertionError, match="still wrong"):
        always_fails()
    assert calls.count(2) == 2

    @tu.retry(5)
    def other_error():
        calls.append(3)
        raise ValueError("not retried")

    with pytest.raises(ValueError):
        other_error()
    assert calls.count(3) == 1


def test_list_gpus_and_cd_run(monkeypatch):
    assert list(tu.list_gpus()) == list(range(mx.context.num_gpus()))
    monkeypatch.setenv("CD_JOB", "1")
    assert tu.is_cd_run()
    monkeypatch.setenv("CD_JOB", "0")
    assert not tu.is_cd_run()


def test_dummy_iter_repeats_the_first_batch():
    data = np.arange(24, dtype=np.float32).reshape(6, 4)
    real = mx.io.NDArrayIter(data, np.arange(6), batch_size=2)
    dummy = tu.DummyIter(real)
    assert dummy.batch_size == 2 and dummy.provide_data == real.provide_data
    batches = [next(dummy) for _ in range(5)]
    assert all(b is batches[0] for b in batches)
    np.testing.assert_array_equal(batches[0].data[0].asnumpy(), data[:2])
    assert next(iter(dummy)) is batches[0]
