"""Replays every metric case recorded from MXNet 1.9.1 (manifest category ``metrics``).

Each case builds the metric, checks its ``get_config()`` against the recorded
one, then runs update(batch0), update(batch1), reset_local(), update(batch2),
comparing get(), get_name_value() and get_global() after every action.
"""

import json
import math

import numpy as np
import pytest

import rebind as mx
from tests.conftest import GOLDEN

MANIFEST = json.loads((GOLDEN / "manifest.json").read_text())["categories"]["metrics"]
CASES = {case["id"]: case for case in MANIFEST["cases"]}
RTOL = 1e-6


def build(config, average):
    """The metric a recorded config describes.

    The config is given to ``create`` without ``name`` first, then with it
    when the default differs (MXNet's TopKAccuracy appends ``_<k>`` to any
    name, so its recorded name cannot be passed back). MXNet's ``get_config``
    omits ``average``; the case id says it (``*_micro``).
    """
    settings = {k: v for k, v in config.items() if k not in ("metric", "name", "metrics")}
    if "metrics" in config:
        settings["metrics"] = [build(child, average) for child in config["metrics"]]
    if average and config["metric"] in ("F1", "MCC", "PearsonCorrelation"):
        settings["average"] = average
    metric = mx.metric.create(config["metric"], **settings)
    if metric.name != config["name"]:
        metric = mx.metric.create(config["metric"], name=config["name"], **settings)
    return metric


def batch(data, index, role, ctx):
    keys = sorted(
        (k for k in data if k.startswith(f"batch{index}.{role}.")),
        key=lambda k: int(k.rsplit(".", 1)[1]),
    )
    return [mx.nd.array(data[k], ctx=ctx, dtype=data[k].dtype) for k in keys]


def same_value(actual, expected):
    if isinstance(expected, list):
        return len(actual) == len(expected) and all(map(same_value, actual, expected))
    if isinstance(expected, dict):
        return actual.keys() == expected.keys() and all(
            same_value(actual[k], expected[k]) for k in expected
        )
    if expected is None or isinstance(expected, str):
        return actual == expected
    if math.isnan(expected):
        return math.isnan(actual)
    return math.isclose(actual, expected, rel_tol=RTOL, abs_tol=1e-12)


def assert_same(actual, expected, what):
    actual = json.loads(json.dumps(actual))  # tuples -> lists, as recorded
    assert same_value(actual, expected), f"{what}: got {actual}, MXNet gave {expected}"


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_golden_metric_case(case_id, ctx):
    case = CASES[case_id]
    average = "micro" if case_id.endswith("_micro") else None
    metric = build(case["config"], average)
    assert_same(metric.get_config(), case["config"], f"{case_id}: get_config")
    with np.load(GOLDEN / case["file"]) as npz:
        data = {key: npz[key] for key in npz.files}
    actions = {
        f"update batch{b}": (
            lambda b=b: metric.update(batch(data, b, "label", ctx), batch(data, b, "pred", ctx))
        )
        for b in range(case["num_batches"])
    }
    actions["reset_local"] = metric.reset_local
    for step in case["steps"]:
        actions[step["action"]]()
        where = f"{case_id} after {step['action']}"
        assert_same(metric.get(), step["get"], f"{where}: get()")
        assert_same(metric.get_name_value(), step["get_name_value"], f"{where}: get_name_value()")
        assert_same(metric.get_global(), step["get_global"], f"{where}: get_global()")


def test_every_recorded_case_is_replayed():
    assert MANIFEST["skipped"] == []
    assert len(CASES) == 30
