"""mx.callback: MXNet's callbacks (log lines, periods) and rebind's EarlyStopping,
BestCheckpoint and StopOnNaN (when they stop, what they write, what they name)."""

import json
import logging
import math
import os
import types

import numpy as np
import pytest

import rebind as mx
from rebind import callback, fileutil
from rebind.errors import StopTraining
from rebind.model import BatchEndParam


def accuracy_metric(correct=3, total=4):
    """An accuracy metric that has seen ``correct`` right answers out of ``total``."""
    metric = mx.metric.create("acc")
    labels = np.array([1.0] * correct + [0.0] * (total - correct))
    preds = np.tile([[0.2, 0.8]], (total, 1))
    metric.update([mx.nd.array(labels)], [mx.nd.array(preds)])
    return metric


class FakeClock:
    """Stands in for time.time: returns the given instants in turn."""

    def __init__(self, *instants):
        self.instants = list(instants)

    def __call__(self):
        return self.instants.pop(0)


class ValueMetric:
    """A metric reporting whatever value it is set to (for the validation callbacks)."""

    def __init__(self, name, value=0.0):
        self.name, self.value = name, value

    def get_name_value(self):
        return [(self.name, self.value)]


def fake_time(clock):
    """The ``time`` module as rebind.callback sees it (logging keeps the real one)."""
    return types.SimpleNamespace(time=clock)


@pytest.fixture
def info_logs(caplog):
    caplog.set_level(logging.INFO)
    return caplog


def param(epoch=0, nbatch=0, metric=None, local=None):
    return BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=metric, locals=local)


# -- Speedometer ---------------------------------------------------------------------------
def test_speedometer_logs_speed_from_the_clock_and_resets_the_metric(monkeypatch, info_logs):
    monkeypatch.setattr(callback, "time", fake_time(FakeClock(100.0, 104.0, 104.0)))
    metric = accuracy_metric()
    speedometer = mx.callback.Speedometer(batch_size=10, frequent=2)
    for nbatch in range(3):
        speedometer(param(epoch=1, nbatch=nbatch, metric=metric))
    # 2 batches of 10 samples in 4 seconds
    assert info_logs.messages == [
        "Epoch[1] Batch [0-2]\tSpeed: 5.00 samples/sec\taccuracy=0.750000"
    ]
    assert metric.num_inst == 0  # auto_reset cleared the local statistics


def test_speedometer_without_auto_reset_reports_the_epoch_so_far(monkeypatch, info_logs):
    monkeypatch.setattr(callback, "time", fake_time(FakeClock(0.0, 8.0, 8.0)))
    metric = accuracy_metric()
    speedometer = mx.callback.Speedometer(batch_size=4, frequent=2, auto_reset=False)
    for nbatch in range(3):
        speedometer(param(nbatch=nbatch, metric=metric))
    assert info_logs.messages == [
        "Epoch[0] Batch [0-2]\tSpeed: 1.00 samples/sec\taccuracy=0.750000"
    ]
    assert metric.num_inst == 4


def test_speedometer_without_metric_and_zero_elapsed(monkeypatch, info_logs):
    monkeypatch.setattr(callback, "time", fake_time(FakeClock(5.0, 5.0, 5.0)))
    speedometer = mx.callback.Speedometer(batch_size=4, frequent=1)
    speedometer(param(nbatch=0))
    speedometer(param(nbatch=1))
    assert info_logs.messages == ["Iter[0] Batch [1]\tSpeed: inf samples/sec"]


def test_speedometer_restarts_its_clock_at_a_new_epoch(monkeypatch, info_logs):
    monkeypatch.setattr(callback, "time", fake_time(FakeClock(0.0, 1.0, 1.0, 50.0, 52.0, 52.0)))
    speedometer = mx.callback.Speedometer(batch_size=1, frequent=1)
    for epoch, nbatch in [(0, 0), (0, 1), (1, 0), (1, 1)]:
        speedometer(param(epoch=epoch, nbatch=nbatch))
    # epoch 1's batch 0 starts the clock (no line), batch 1 is timed from it
    assert info_logs.messages == [
        "Iter[0] Batch [1]\tSpeed: 1.00 samples/sec",
        "Iter[1] Batch [1]\tSpeed: 0.50 samples/sec",
    ]


# -- ProgressBar, log_train_metric, LogValidationMetricsCallback -------------------------
def test_progress_bar_lines(info_logs):
    bar = mx.callback.ProgressBar(total=4, length=8)
    bar(param(nbatch=1))
    bar(param(nbatch=3))
    assert info_logs.messages == ["[==------] 25%\r", "[======--] 75%\r"]


def test_log_train_metric_every_period_with_auto_reset(info_logs):
    metric = accuracy_metric()
    log = mx.callback.log_train_metric(2, auto_reset=True)
    log(param(epoch=3, nbatch=1, metric=metric))
    assert info_logs.messages == []
    log(param(epoch=3, nbatch=2, metric=metric))
    assert info_logs.messages == ["Iter[3] Batch[2] Train-accuracy=0.750000"]
    assert metric.num_inst == 0


def test_log_validation_metrics(info_logs):
    mx.callback.LogValidationMetricsCallback()(param(epoch=2, metric=accuracy_metric(1, 4)))
    mx.callback.LogValidationMetricsCallback()(param(epoch=2, metric=None))
    assert info_logs.messages == ["Epoch[2] Validation-accuracy=0.250000"]


# -- checkpoints ----------------------------------------------------------------------------
class RecordingModule:
    """A module stand-in whose save_checkpoint writes an empty marker file."""

    def __init__(self):
        self.calls = []

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False):
        self.calls.append((epoch, save_optimizer_states))
        open(f"{prefix}-{epoch:04d}.params", "wb").close()


def test_module_checkpoint_saves_every_period(tmp_path):
    module = RecordingModule()
    save = mx.callback.module_checkpoint(
        module, str(tmp_path / "net"), period=2, save_optimizer_states=True
    )
    for epoch in range(5):
        save(epoch)
    assert module.calls == [(2, True), (4, True)]
    assert sorted(os.listdir(tmp_path)) == ["net-0002.params", "net-0004.params"]


def test_module_checkpoint_period_below_one_means_every_epoch(tmp_path):
    module = RecordingModule()
    save = mx.callback.module_checkpoint(module, str(tmp_path / "net"), period=0)
    for epoch in range(2):
        save(epoch, None, None, None)
    assert module.calls == [(1, False), (2, False)]


def small_symbol():
    data = mx.sym.Variable("data")
    return mx.sym.FullyConnected(data, num_hidden=2, name="fc")


def small_params(scale):
    return (
        {"fc_weight": mx.nd.array(np.full((2, 3), scale)), "fc_bias": mx.nd.array([scale, -scale])},
        {},
    )


def test_do_checkpoint_writes_mxnet_files_every_period(tmp_path):
    prefix = str(tmp_path / "net")
    save = mx.callback.do_checkpoint(prefix, period=3)
    symbol = small_symbol()
    for epoch in range(6):
        arg, aux = small_params(float(epoch))
        save(epoch, symbol, arg, aux)
    assert sorted(os.listdir(tmp_path)) == ["net-0003.params", "net-0006.params", "net-symbol.json"]
    _, arg, _ = mx.model.load_checkpoint(prefix, 6)
    np.testing.assert_array_equal(arg["fc_weight"].asnumpy(), np.full((2, 3), 5.0))


# -- EarlyStopping ---------------------------------------------------------------------------
def feed(watcher, metric, values, first_epoch=0):
    """Call ``watcher`` once per value; returns the epoch that raised StopTraining, or None."""
    for epoch, value in enumerate(values, start=first_epoch):
        metric.value = value
        try:
            watcher(param(epoch=epoch, metric=metric))
        except StopTraining:
            return epoch
    return None


def test_early_stopping_counts_patience_with_min_delta():
    metric = ValueMetric("accuracy")
    stopper = mx.callback.EarlyStopping(patience=2, min_delta=0.01, mode="max")
    # 0.605 and 0.61 do not beat 0.6 by more than 0.01: the second of them stops
    assert feed(stopper, metric, [0.5, 0.6, 0.605, 0.61, 0.9]) == 3
    assert (stopper.best, stopper.best_epoch, stopper.stopped_epoch) == (0.6, 1, 3)


def test_early_stopping_keeps_going_while_improving():
    metric = ValueMetric("accuracy")
    stopper = mx.callback.EarlyStopping(patience=1)
    assert feed(stopper, metric, [0.1, 0.2, 0.3, 0.4]) is None
    assert feed(stopper, metric, [0.5], first_epoch=4) is None
    assert feed(stopper, metric, [0.5], first_epoch=5) == 5


def test_early_stopping_min_mode_and_auto_mode_for_losses():
    losses = [1.0, 0.8, 0.9, 0.85, 0.7]
    assert feed(mx.callback.EarlyStopping(patience=2, mode="min"), ValueMetric("x"), losses) == 3
    auto = mx.callback.EarlyStopping(patience=2)  # 'cross-entropy': lower is better
    assert feed(auto, ValueMetric("cross-entropy"), losses) == 3
    as_max = mx.callback.EarlyStopping(patience=2, mode="max")
    assert feed(as_max, ValueMetric("cross-entropy"), losses) == 2


def test_early_stopping_patience_zero_stops_at_the_first_stall_and_nan_never_improves():
    assert feed(mx.callback.EarlyStopping(patience=0), ValueMetric("acc"), [0.5, 0.5]) == 1
    stopper = mx.callback.EarlyStopping(patience=2)
    assert feed(stopper, ValueMetric("acc"), [math.nan, math.nan]) == 1
    assert stopper.best is None


def test_early_stopping_message_and_monitor_choice():
    metric = accuracy_metric()
    composite = mx.metric.create(["acc", "ce"])
    stopper = mx.callback.EarlyStopping(monitor="accuracy", patience=1)
    stopper(param(epoch=0, metric=metric))
    with pytest.raises(
        StopTraining,
        match=r"validation accuracy has not improved on 0\.75 "
        r"\(epoch 0\).*patience=1.*after epoch 1",
    ):
        stopper(param(epoch=1, metric=metric))
    with pytest.raises(ValueError, match=r"no value named 'f1'.*\['accuracy', 'cross-entropy'\]"):
        mx.callback.EarlyStopping(monitor="f1")(param(metric=composite))


def test_early_stopping_starts_over_with_a_new_fit():
    metric = ValueMetric("accuracy")
    stopper = mx.callback.EarlyStopping(patience=1)
    assert feed(stopper, metric, [0.9, 0.5]) == 1
    # a second fit from epoch 0: the old best (0.9) is forgotten
    assert feed(stopper, metric, [0.2, 0.3]) is None


def test_early_stopping_rejects_bad_settings():
    with pytest.raises(ValueError, match="mode must be one of"):
        mx.callback.EarlyStopping(mode="up")
    with pytest.raises(ValueError, match="patience must be >= 0"):
        mx.callback.EarlyStopping(patience=-1)
    with pytest.raises(ValueError, match="eval_end_callback"):
        mx.callback.EarlyStopping()(param(metric=None))


# -- BestCheckpoint --------------------------------------------------------------------------
class ParamModule:
    """A module stand-in: a symbol and parameters set by the test."""

    def __init__(self):
        self.symbol = small_symbol()
        self.scale = 0.0

    def get_params(self):
        return small_params(self.scale)


def saved_weight(prefix):
    loaded = mx.nd.load(f"{prefix}-best.params")
    assert sorted(loaded) == ["arg:fc_bias", "arg:fc_weight"]
    return float(loaded["arg:fc_weight"].asnumpy()[0, 0])


def test_best_checkpoint_keeps_only_the_best_epoch(tmp_path):
    prefix, module, metric = str(tmp_path / "net"), ParamModule(), ValueMetric("accuracy")
    keeper = mx.callback.BestCheckpoint(prefix, monitor="accuracy", mode="max", module=module)
    for epoch, value in enumerate([0.5, 0.7, 0.6]):
        module.scale, metric.value = float(epoch), value
        keeper(param(epoch=epoch, metric=metric))
    assert sorted(os.listdir(tmp_path)) == [
        "net-best-symbol.json",
        "net-best.json",
        "net-best.params",
    ]
    assert saved_weight(prefix) == 1.0  # epoch 1's parameters, not epoch 2's
    record = json.loads((tmp_path / "net-best.json").read_text())
    assert record == {"epoch": 1, "monitor": "accuracy", "value": 0.7, "mode": "max"}
    assert mx.sym.load(f"{prefix}-best-symbol.json").tojson() == module.symbol.tojson()


def test_best_checkpoint_takes_the_module_from_fit_locals(tmp_path):
    prefix, module = str(tmp_path / "net"), ParamModule()
    keeper = mx.callback.BestCheckpoint(prefix, mode="min")
    keeper(param(epoch=0, metric=ValueMetric("mse", 0.3), local={"self": module}))
    assert json.loads((tmp_path / "net-best.json").read_text())["mode"] == "min"
    with pytest.raises(ValueError, match="no module to save"):
        mx.callback.BestCheckpoint(prefix)(param(metric=ValueMetric("mse", 0.1), local={}))


def test_best_checkpoint_write_failure_leaves_the_previous_best(tmp_path, monkeypatch):
    prefix, module, metric = str(tmp_path / "net"), ParamModule(), ValueMetric("accuracy", 0.5)
    keeper = mx.callback.BestCheckpoint(prefix, module=module)
    keeper(param(epoch=0, metric=metric))

    def failing_replace(source, target):
        raise OSError("disk full")

    monkeypatch.setattr(fileutil.os, "replace", failing_replace)
    module.scale, metric.value = 9.0, 0.9
    with pytest.raises(OSError, match="disk full"):
        keeper(param(epoch=1, metric=metric))
    monkeypatch.undo()
    assert saved_weight(prefix) == 0.0
    assert sorted(os.listdir(tmp_path)) == [
        "net-best-symbol.json",
        "net-best.json",
        "net-best.params",
    ]


# -- StopOnNaN --------------------------------------------------------------------------------
def loss_metric(*values):
    metric = mx.metric.create("loss")
    metric.update(None, [mx.nd.array(np.array(values))])
    return metric


def test_stop_on_nan_names_the_metric_epoch_and_batch():
    guard = mx.callback.StopOnNaN()
    guard(param(epoch=1, nbatch=3, metric=loss_metric(0.5, 0.25)))
    with pytest.raises(
        StopTraining, match=r"training metric 'loss' became nan at epoch 1, batch 4"
    ):
        guard(param(epoch=1, nbatch=4, metric=loss_metric(0.5, np.nan)))
    composite = mx.metric.create(["acc", "mse"])
    composite.get_metric(1).update([mx.nd.array([1.0])], [mx.nd.array([np.inf])])
    composite.get_metric(0).update([mx.nd.array([1.0])], [mx.nd.array([[0.1, 0.9]])])
    with pytest.raises(StopTraining, match=r"'mse' became inf"):
        guard(param(metric=composite))


def test_stop_on_nan_skips_a_metric_without_instances_and_respects_period():
    metric = loss_metric(np.nan)
    guard = mx.callback.StopOnNaN(period=3)
    guard(param(nbatch=1, metric=metric))  # not a checked batch
    metric.reset()  # no instances: its NaN means 'nothing yet', not a diverged loss
    guard(param(nbatch=3, metric=metric))
    guard(param(nbatch=3, metric=None))


class NaNParamModule:
    def get_params(self):
        return (
            {
                "fc1_weight": mx.nd.array([1.0, 2.0]),
                "fc2_weight": mx.nd.array([1.0, np.inf, np.nan]),
            },
            {"bn_moving_var": mx.nd.array([1.0])},
        )


def test_stop_on_nan_names_the_parameter():
    guard = mx.callback.StopOnNaN(module=NaNParamModule())
    with pytest.raises(
        StopTraining,
        match=r"parameter 'fc2_weight' has 2 NaN/Inf value\(s\) of 3 "
        r"at epoch 2, batch 0",
    ):
        guard(param(epoch=2, nbatch=0, metric=accuracy_metric()))
