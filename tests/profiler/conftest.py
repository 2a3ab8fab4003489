"""Fixtures for the profiler tests: a fresh profiler, writing into the test's directory."""

import json
from pathlib import Path

import numpy as np
import pytest

import rebind as mx
from rebind.profiler import PROFILER

MXNET_FACTS = json.loads((Path(__file__).parent / "mxnet_profiler.json").read_text())


@pytest.fixture
def mxnet_facts():
    """What MXNet 1.9.1 recorded (tests/recording/record_profiler.py)."""
    return MXNET_FACTS


@pytest.fixture(autouse=True)
def fresh_profiler():
    """The process's profiler in its initial state, before and after each test."""
    PROFILER.set_state(False)
    PROFILER.__init__()
    yield PROFILER
    PROFILER.set_state(False)
    PROFILER.__init__()


@pytest.fixture
def trace_path(tmp_path):
    """Where the test's trace goes."""
    return tmp_path / "profile.json"


def mlp_executor(ctx):
    """The recording script's MLP (fc1 16, relu, fc2 4, softmax) with random arguments."""
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=4, name="fc2")
    out = mx.sym.SoftmaxOutput(fc2, name="softmax")
    executor = out.simple_bind(ctx, data=(8, 10), softmax_label=(8,))
    rng = np.random.default_rng(0)
    for name, array in executor.arg_dict.items():
        if name == "softmax_label":
            array[:] = rng.integers(0, 4, size=array.shape)
        else:
            array[:] = rng.uniform(-1, 1, size=array.shape)
    return executor


def run_passes(executor, passes):
    """``passes`` training forward/backward passes."""
    for _ in range(passes):
        executor.forward(is_train=True)
        executor.backward()


def load_trace(path):
    """The trace file's document."""
    with open(path) as handle:
        return json.load(handle)


def operator_events(document):
    """The trace's operator events, in order."""
    return [e for e in document["traceEvents"] if e.get("cat") == "operator"]
