"""The trace an MLP's training passes leave: MXNet's operator names, honest times, valid JSON."""

import numpy as np
import pytest

from rebind import profiler
from rebind.executor import Executor
from rebind.profiler import PROFILER

from .conftest import load_trace, mlp_executor, operator_events, run_passes

PASSES = 3


@pytest.fixture
def plain_graph(monkeypatch):
    """Plans without graph rewrites: one step per node, as MXNet runs them."""
    monkeypatch.setenv("REBIND_GRAPH_OPT", "0")


def _profile_mlp(ctx, trace_path, passes=PASSES, **config):
    executor = mlp_executor(ctx)
    profiler.set_config(filename=str(trace_path), continuous_dump=False, **config)
    profiler.set_state("run")
    run_passes(executor, passes)
    profiler.set_state("stop")
    profiler.dump()
    return executor, load_trace(trace_path)


def test_mlp_passes_give_mxnets_operator_sequence(ctx, trace_path, plain_graph, mxnet_facts):
    _, document = _profile_mlp(ctx, trace_path, passes=mxnet_facts["passes"])
    names = [e["name"] for e in operator_events(document)]
    assert names == mxnet_facts["operator_order"]


def test_mlp_events_have_positive_durations_and_node_names(ctx, trace_path, plain_graph):
    _, document = _profile_mlp(ctx, trace_path)
    events = operator_events(document)
    assert len(events) == 8 * PASSES
    assert all(e["ph"] == "X" and e["dur"] > 0 for e in events)
    nodes = [e["args"]["node"] for e in events[:8]]
    assert nodes == ["fc1", "relu1", "fc2", "softmax", "softmax", "fc2", "relu1", "fc1"]
    starts = [e["ts"] for e in events]
    assert starts == sorted(starts)
    # each span ends before the next begins: the steps run one after another (timestamps
    # are wall-clock microseconds near 1.8e15, which a float holds to 0.25 us)
    pairs = zip(events[:-1], events[1:], strict=True)
    assert all(a["ts"] + a["dur"] <= b["ts"] + 0.5 for a, b in pairs)


def test_optimized_plan_is_profiled_as_it_runs(ctx, trace_path):
    executor, document = _profile_mlp(ctx, trace_path)
    steps = executor._plan.steps
    forward = [step.op.name for step in steps]
    backward = ["_backward_" + step.op.name for step in reversed(steps) if step.runs_backward]
    names = [e["name"] for e in operator_events(document)]
    assert names == (forward + backward) * PASSES


def test_trace_is_well_formed_for_chrome_tracing(ctx, trace_path):
    _, document = _profile_mlp(ctx, trace_path)
    assert document["displayTimeUnit"] == "ms"
    events = document["traceEvents"]
    meta = [e for e in events if e["ph"] == "M"]
    timed = [e for e in events if e["ph"] != "M"]
    processes = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]) for e in meta if e["name"] == "thread_name"}
    for event in timed:
        assert event["ph"] == "X"
        assert isinstance(event["ts"], (int, float)) and event["dur"] >= 0
        assert event["pid"] in processes and (event["pid"], event["tid"]) in threads
    assert processes[timed[0]["pid"]] == f"{ctx.device_type}/{ctx.device_id}"


def test_profiling_does_not_change_results(ctx, trace_path):
    plain = mlp_executor(ctx)
    run_passes(plain, 1)
    profiled, _ = _profile_mlp(ctx, trace_path, passes=1)
    np.testing.assert_array_equal(profiled.outputs[0].asnumpy(), plain.outputs[0].asnumpy())
    for name, grad in plain.grad_dict.items():
        np.testing.assert_array_equal(profiled.grad_dict[name].asnumpy(), grad.asnumpy())


def test_nothing_is_recorded_while_stopped_or_paused(ctx, trace_path, plain_graph):
    executor = mlp_executor(ctx)
    profiler.set_config(filename=str(trace_path), continuous_dump=False)
    run_passes(executor, 1)  # configured, not started
    profiler.set_state("run")
    run_passes(executor, 1)
    profiler.pause()
    run_passes(executor, 2)
    profiler.resume()
    run_passes(executor, 1)
    profiler.set_state("stop")
    run_passes(executor, 2)
    profiler.dump()
    assert len(operator_events(load_trace(trace_path))) == 8 * 2


def test_symbolic_flag_off_records_no_executor_steps(ctx, trace_path):
    _, document = _profile_mlp(ctx, trace_path, profile_symbolic=False)
    assert operator_events(document) == []


def test_forward_takes_the_generated_path_while_stopped(ctx, monkeypatch, plain_graph):
    calls = []
    original = Executor._forward_steps

    def spy(self, is_train, profiler=None):
        calls.append(profiler)
        return original(self, is_train, profiler)

    timed = []
    monkeypatch.setattr(Executor, "_forward_steps", spy)
    monkeypatch.setattr(
        PROFILER, "time_op", lambda name, node, ctx, fn, *args: timed.append(name) or fn(*args)
    )
    executor = mlp_executor(ctx)
    profiler.set_config(continuous_dump=False)
    run_passes(executor, 2)  # never started
    profiler.set_state("run")
    profiler.pause()
    run_passes(executor, 1)  # paused
    profiler.set_state("stop")
    run_passes(executor, 1)  # stopped again
    assert calls == [] and timed == []
    profiler.set_state("run")
    run_passes(executor, 1)
    assert calls == [PROFILER]
    assert "FullyConnected" in timed and "_backward_FullyConnected" in timed


class _CountingBackend:
    def __init__(self, log):
        self.log = log

    def synchronize(self, device_id=None):
        self.log.append(("sync", device_id))


class _Device:
    def __init__(self, device_type, log):
        self.device_type, self.device_id, self.backend = device_type, 1, _CountingBackend(log)


@pytest.mark.parametrize("device_type, synced", [("gpu", True), ("cpu", False)])
def test_device_ops_are_timed_between_synchronizations(device_type, synced):
    log = []
    profiler.set_config(continuous_dump=False)
    profiler.set_state("run")
    result = PROFILER.time_op(
        "Op", None, _Device(device_type, log), lambda x: log.append(x) or 7, 3
    )
    assert result == 7
    assert log == ([("sync", 1), 3, ("sync", 1)] if synced else [3])
    assert PROFILER.events[-1]["name"] == "Op"
