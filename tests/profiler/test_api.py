"""set_config/set_state/dump, the marking objects, scope(), and imperative calls."""

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import rebind as mx
from rebind import profiler
from rebind.base import MXNetError
from rebind.profiler import PROFILER

from .conftest import MXNET_FACTS, load_trace, operator_events


def _start(trace_path, **config):
    profiler.set_config(filename=str(trace_path), continuous_dump=False, **config)
    profiler.set_state("run")


def _finish(trace_path):
    profiler.set_state("stop")
    profiler.dump()
    return load_trace(trace_path)


# -- configuration ---------------------------------------------------------------------------
def test_unknown_config_key_is_an_error_that_lists_the_keys():
    with pytest.raises(MXNetError, match="'bogus'.*profile_symbolic"):
        profiler.set_config(bogus=1)


@pytest.mark.parametrize("key, value", [("profile_all", "maybe"), ("dump_period", "abc")])
def test_invalid_config_values_are_errors(key, value):
    with pytest.raises(MXNetError, match=key):
        profiler.set_config(**{key: value})


def test_keys_left_out_return_to_mxnets_defaults():
    profiler.set_config(profile_imperative=False, filename="a.json", aggregate_stats="True")
    assert PROFILER.config["profile_imperative"] is False
    assert PROFILER.config["aggregate_stats"] is True
    profiler.set_config(continuous_dump=0)
    assert PROFILER.config["profile_imperative"] is True
    assert PROFILER.config["filename"] == "profile.json"
    assert PROFILER.config["aggregate_stats"] is False


def test_server_process_is_not_implemented():
    with pytest.raises(NotImplementedError, match="server"):
        profiler.set_state("run", profile_process="server")


def test_bad_state_is_an_error():
    with pytest.raises(MXNetError, match="'run' or 'stop'"):
        profiler.set_state("go")


def test_deprecated_aliases_warn_and_work(trace_path):
    with pytest.warns(UserWarning, match="set_config"):
        profiler.profiler_set_config(mode="all", filename=str(trace_path))
    assert PROFILER.config["profile_all"] and PROFILER.config["filename"] == str(trace_path)
    with pytest.warns(UserWarning, match="set_state"):
        profiler.profiler_set_state("run")
    assert PROFILER.running
    profiler.Event("e").start()
    with pytest.warns(UserWarning, match="dump"):
        profiler.dump_profile()
    assert load_trace(trace_path)["displayTimeUnit"] == "ms"


# -- dump ------------------------------------------------------------------------------------
def test_dump_before_running_is_an_error(trace_path):
    profiler.set_config(filename=str(trace_path))
    with pytest.raises(MXNetError, match="set_state\\('run'\\)"):
        profiler.dump()


def test_dump_replaces_the_file_atomically(trace_path, monkeypatch):
    trace_path.write_text("old contents")
    _start(trace_path)
    assert not trace_path.exists()  # set_config starts the file afresh, as MXNet does
    trace_path.write_text("x" * 100000)
    replaced = []
    real_replace = os.replace

    def spy(source, target):
        # the complete document is in place under a temporary name before the rename
        assert json.loads(open(source).read())["displayTimeUnit"] == "ms"
        replaced.append(target)
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", spy)
    profiler.Event("e").start()
    profiler.dump(finished=False)
    assert replaced == [str(trace_path.resolve())]
    assert load_trace(trace_path)["traceEvents"] == []
    assert [p.name for p in trace_path.parent.iterdir()] == [trace_path.name]


def test_finished_dump_ends_output_until_the_next_run(trace_path):
    _start(trace_path)
    event = profiler.Event("first")
    event.start()
    event.stop()
    profiler.dump(finished=False)
    profiler.dump(finished=True)
    names = [e["name"] for e in load_trace(trace_path)["traceEvents"] if e["ph"] == "X"]
    assert names == ["first"]
    with pytest.raises(MXNetError):
        profiler.dump()
    profiler.set_state("run")
    event.start()
    event.stop()
    profiler.dump()
    assert sum(e["ph"] == "X" for e in load_trace(trace_path)["traceEvents"]) == 1


def test_continuous_dump_writes_the_file_while_running(trace_path):
    profiler.set_config(filename=str(trace_path), dump_period=0.02)
    profiler.set_state("run")
    task = profiler.Task(profiler.Domain("D"), "t")
    task.start()
    task.stop()
    deadline = time.monotonic() + 5
    while not trace_path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    names = [e["name"] for e in load_trace(trace_path)["traceEvents"] if e["ph"] == "X"]
    assert names == ["t"]
    profiler.set_state("stop")
    assert PROFILER._dumper is None


# -- marking objects -------------------------------------------------------------------------
def test_objects_appear_in_the_trace(trace_path):
    _start(trace_path)
    domain = profiler.Domain("PyDom")
    counter = domain.new_counter("cnt", 5)
    counter += 2
    counter -= 1
    counter.increment(4)
    counter.decrement()
    domain.new_marker("mk").mark("global")
    for timed in (domain.new_task("tsk"), domain.new_frame("frm"), profiler.Event("evt")):
        timed.start()
        timed.stop()
    events = [e for e in _finish(trace_path)["traceEvents"] if e["ph"] != "M"]
    counters = [e for e in events if e["ph"] == "C"]
    assert [e["args"]["cnt"] for e in counters] == [5, 7, 6, 10, 9]
    assert {e["cat"] for e in counters} == {"PyDom"}
    (marker,) = [e for e in events if e["ph"] == "i"]
    assert (marker["name"], marker["cat"], marker["s"]) == ("mk", "PyDom,instant_marker", "g")
    spans = {e["name"]: e["cat"] for e in events if e["ph"] == "X"}
    assert spans == {"tsk": "PyDom", "frm": "PyDom,frame", "evt": "event"}


def test_objects_record_nothing_while_paused(trace_path):
    _start(trace_path)
    profiler.pause()
    task = profiler.Task(profiler.Domain("D"), "t")
    task.start()
    task.stop()
    profiler.Counter(profiler.Domain("D"), "c", 3)
    profiler.Marker(profiler.Domain("D"), "m").mark()
    assert [e for e in _finish(trace_path)["traceEvents"] if e["ph"] != "M"] == []


def test_stop_without_start_and_bad_marker_scope_are_errors():
    with pytest.raises(MXNetError, match="start"):
        profiler.Task(profiler.Domain("D"), "t").stop()
    with pytest.raises(MXNetError, match="scope 'bogus'"):
        profiler.Marker(profiler.Domain("D"), "m").mark("bogus")


def test_scope_prefixes_operator_names(trace_path, ctx):
    _start(trace_path)
    x = mx.nd.ones((2, 2), ctx=ctx)
    with profiler.scope("outer") as outer:
        mx.nd.relu(x)
        with profiler.scope("inner:") as inner:
            mx.nd.sqrt(x)
        with profiler.scope("alone", append_mode=False):
            mx.nd.exp(x)
    mx.nd.abs(x)
    assert (outer, inner) == ("outer:", "outer:inner:")
    names = [e["name"] for e in operator_events(_finish(trace_path))]
    assert names == ["outer:relu", "outer:inner:sqrt", "alone:exp", "abs"]


# -- imperative calls ------------------------------------------------------------------------
def test_imperative_calls_recorded_only_with_profile_imperative(trace_path, ctx):
    x = mx.nd.array(np.arange(4.0), ctx=ctx)
    _start(trace_path, profile_imperative=False)
    mx.nd.sqrt(x)
    assert operator_events(_finish(trace_path)) == []
    _start(trace_path)  # profile_imperative is True by default, as in MXNet
    y = mx.nd.sqrt(x)
    x.sum()
    mx.nd.sqrt(y)
    events = operator_events(_finish(trace_path))
    assert [e["name"] for e in events] == ["sqrt", "sum", "sqrt"]
    assert all(e["dur"] > 0 and "args" not in e for e in events)
    np.testing.assert_allclose(y.asnumpy(), np.sqrt(np.arange(4.0)), rtol=1e-6)


# -- before set_config, and MXNET_PROFILER_AUTOSTART -----------------------------------------
def test_before_set_config_imperative_calls_are_not_profiled(tmp_path, monkeypatch, ctx):
    monkeypatch.chdir(tmp_path)  # the initial file name is profile.json, here
    profiler.set_state("run")
    mx.nd.sqrt(mx.nd.ones((2, 2), ctx=ctx))
    profiler.Event("e").start()
    profiler.dump()
    document = load_trace(tmp_path / "profile.json")
    assert operator_events(document) == []
    assert PROFILER.config["profile_symbolic"] and PROFILER._dumper is None


@pytest.mark.parametrize("mode, expected", [(None, ["t"]), ("3", ["sqrt", "t"])])
def test_autostart_profiles_the_whole_run_and_writes_at_exit(tmp_path, mode, expected):
    script = (
        "import rebind as mx\n"
        "mx.nd.sqrt(mx.nd.ones((2, 2)))\n"
        "task = mx.profiler.Task(mx.profiler.Domain('D'), 't')\n"
        "task.start()\n"
        "task.stop()\n"
    )
    env = dict(os.environ, MXNET_PROFILER_AUTOSTART="1")
    env.pop("MXNET_PROFILER_MODE", None)
    if mode is not None:
        env["MXNET_PROFILER_MODE"] = mode
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, check=True)
    events = load_trace(tmp_path / "profile.json")["traceEvents"]
    assert [e["name"] for e in events if e["ph"] == "X"] == expected


@pytest.mark.parametrize("expression", sorted(MXNET_FACTS["arithmetic"]))
def test_arithmetic_is_recorded_under_mxnets_operator_names(expression, trace_path, ctx):
    def evaluate():
        names = {"x": mx.nd.full((2, 2), 2.0, ctx=ctx), "y": mx.nd.ones((2, 2), ctx=ctx)}
        exec(expression, names)  # noqa: S102 (expressions recorded from MXNet, fixed)
        return names["x"].asnumpy()

    plain = evaluate()
    _start(trace_path)
    profiled = evaluate()
    names = [e["name"] for e in operator_events(_finish(trace_path))]
    assert names == MXNET_FACTS["arithmetic"][expression]
    np.testing.assert_array_equal(profiled, plain)


def test_threads_get_their_own_tracks(trace_path):
    _start(trace_path)

    def work():
        event = profiler.Event(threading.current_thread().name)
        event.start()
        event.stop()

    threads = [threading.Thread(target=work, name=f"worker-{i}") for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = _finish(trace_path)["traceEvents"]
    spans = {e["name"]: (e["pid"], e["tid"]) for e in events if e["ph"] == "X"}
    named = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {named[track] for track in spans.values()} == {"worker-0", "worker-1"}
    assert len(set(spans.values())) == 2
