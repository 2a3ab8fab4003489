"""The built-in progress plugin, driven through its hooks with stand-in modules and metrics."""

import io
import logging
import os
import sys

import numpy as np
import pytest

import rebind as mx
from rebind import registry
from rebind.plugins import progress
from rebind.plugins.progress import ProgressReporter


class FakeTTY(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self):
        return True


class ListHandler(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture
def log_lines():
    """A private logger for the per-epoch lines, and the lines it received."""
    logger = logging.getLogger("tests.progress")
    handler = ListHandler()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, handler.lines
    logger.removeHandler(handler)


@pytest.fixture(autouse=True)
def draw_every_batch(monkeypatch):
    monkeypatch.delenv(progress.ENV_SWITCH, raising=False)
    monkeypatch.setattr(progress, "REFRESH_SECONDS", 0.0)


def accuracy(correct, total=4):
    metric = mx.metric.create("acc")
    labels = np.array([1.0] * correct + [0.0] * (total - correct))
    metric.update([mx.nd.array(labels)], [mx.nd.array(np.tile([[0.2, 0.8]], (total, 1)))])
    return metric


class Batches:
    """An iterator stand-in with no len(): the plugin learns the epoch's length."""


def run_fit(reporter, epochs=1, batches=4, train_data=None, validation=None, module=None):
    """Drive the reporter as fit would: 10 samples per batch, 0.5 s per epoch."""
    module = module if module is not None else object()
    metric = accuracy(3)
    train_data = train_data if train_data is not None else [None] * batches
    reporter.fit_begin(module, 0, epochs, train_data, metric)
    for epoch in range(epochs):
        for nbatch in range(batches):
            reporter.batch_end(module, epoch, nbatch, 10, metric)
        reporter.epoch_end(module, epoch, metric, validation, 0.5)
    reporter.fit_end(module, epochs, metric)


def test_terminal_mode_with_tqdm_shows_bar_throughput_and_metric():
    pytest.importorskip("tqdm")
    tty = FakeTTY()
    run_fit(ProgressReporter(stream=tty, use_tqdm=True), validation=accuracy(2))
    out = tty.getvalue()
    assert "epoch 0" in out and "4/4" in out
    assert "samples/s, accuracy=0.7500" in out
    assert "train accuracy=0.7500, validation accuracy=0.5000, 0.5 s (80 samples/s)" in out


def test_a_terminal_of_size_zero_still_shows_the_bar(monkeypatch):
    # a pseudo-terminal may report 0x0 (e.g. under `script`): tqdm would print empty lines
    pytest.importorskip("tqdm")

    class ZeroSizeTTY(FakeTTY):
        def fileno(self):
            return 99

    monkeypatch.setattr("os.get_terminal_size", lambda fd: os.terminal_size((0, 0)))
    tty = ZeroSizeTTY()
    run_fit(ProgressReporter(stream=tty, use_tqdm=True), validation=accuracy(2))
    assert "epoch 0" in tty.getvalue() and "accuracy=0.7500" in tty.getvalue()


def test_terminal_mode_without_tqdm_draws_a_carriage_return_bar():
    tty = FakeTTY()
    run_fit(ProgressReporter(stream=tty, use_tqdm=False), epochs=2, train_data=Batches())
    out = tty.getvalue()
    # epoch 0 does not know its length; epoch 1 does, from epoch 0
    assert "\repoch 0 2 batches " in out
    assert "\repoch 1 [===============>              ] 2/4 " in out
    assert "\repoch 1 [==============================] 4/4 " in out
    assert "samples/s, accuracy=0.7500" in out
    assert out.count("\n") == 2 and "epoch 1: train accuracy=0.7500, 0.5 s (80 samples/s)" in out


def test_non_terminal_mode_logs_one_line_per_epoch(log_lines):
    logger, lines = log_lines
    stream = io.StringIO()
    run_fit(ProgressReporter(stream=stream, logger=logger), epochs=3, validation=accuracy(2))
    assert lines == [
        f"epoch {e}: train accuracy=0.7500, validation accuracy=0.5000, 0.5 s (80 samples/s)"
        for e in range(3)
    ]
    assert stream.getvalue() == ""


def test_default_logger_needs_no_configuration(monkeypatch, capsys):
    logger = logging.getLogger(progress.LOGGER_NAME)
    monkeypatch.setattr(logger, "handlers", [])
    monkeypatch.setattr(logger, "propagate", False)  # as if nothing above handled it either
    run_fit(ProgressReporter(stream=io.StringIO()))
    assert "epoch 0: train accuracy=0.7500, 0.5 s (80 samples/s)\n" in capsys.readouterr().err
    assert len(logger.handlers) == 1


def test_rebind_progress_zero_silences(monkeypatch, log_lines):
    logger, lines = log_lines
    monkeypatch.setenv("REBIND_PROGRESS", "0")
    tty = FakeTTY()
    run_fit(ProgressReporter(stream=tty, logger=logger))
    run_fit(ProgressReporter(stream=io.StringIO(), logger=logger))
    assert tty.getvalue() == "" and lines == []


class BrokenMetric:
    def get_global_name_value(self):
        raise RuntimeError("metric exploded")

    get_name_value = get_global_name_value


class BrokenStream(FakeTTY):
    def write(self, text):
        raise BrokenPipeError("terminal went away")


def test_display_errors_never_reach_training(log_lines):
    logger, lines = log_lines
    reporter = ProgressReporter(stream=FakeTTY(), logger=logger, use_tqdm=False)
    module = object()
    reporter.fit_begin(module, 0, 1, [None] * 2, BrokenMetric())
    for nbatch in range(2):
        reporter.batch_end(module, 0, nbatch, 10, BrokenMetric())
    reporter.epoch_end(module, 0, BrokenMetric(), None, 0.5)
    reporter.fit_end(module, 1, BrokenMetric())
    assert lines == ["progress display turned off for this fit: RuntimeError('metric exploded')"]
    run_fit(ProgressReporter(stream=BrokenStream(), logger=logger, use_tqdm=False))
    assert len(lines) == 2 and "terminal went away" in lines[1]


def test_an_early_stop_closes_the_open_epoch(log_lines):
    logger, lines = log_lines
    reporter, module, metric = (
        ProgressReporter(stream=io.StringIO(), logger=logger),
        object(),
        accuracy(4),
    )
    reporter.fit_begin(module, 0, 5, [None] * 4, metric)
    reporter.batch_end(module, 0, 0, 10, metric)
    reporter.fit_end(module, 1, metric)
    assert lines == ["epoch 0: train accuracy=1.0000, stopped after 1 batches"]


def test_batches_per_epoch_from_len_or_ndarrayiter():
    data = np.zeros((10, 2), dtype=np.float32)
    assert progress._known_batches([None] * 7) == 7
    assert progress._known_batches(mx.io.NDArrayIter(data, batch_size=4)) == 3
    discard = mx.io.NDArrayIter(data, batch_size=4, last_batch_handle="discard")
    assert progress._known_batches(discard) == 2
    assert progress._known_batches(Batches()) is None


def test_hooks_reach_the_reporter_through_the_registry(monkeypatch, log_lines):
    logger, lines = log_lines
    monkeypatch.setattr(
        progress, "_REPORTER", ProgressReporter(stream=io.StringIO(), logger=logger)
    )
    hook = registry.get_plugin_manager().hook
    module, metric = object(), accuracy(1)
    hook.rebind_fit_begin(
        module=module, begin_epoch=0, num_epoch=1, train_data=[None], eval_metric=metric
    )
    hook.rebind_batch_end(module=module, epoch=0, nbatch=0, batch_size=4, eval_metric=metric)
    hook.rebind_epoch_end(
        module=module, epoch=0, eval_metric=metric, validation_metric=None, seconds=2.0
    )
    hook.rebind_fit_end(module=module, num_epoch=1, eval_metric=metric)
    assert lines == ["epoch 0: train accuracy=0.2500, 2.0 s (2 samples/s)"]


def test_without_tqdm_a_terminal_gets_the_plain_bar(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm now raises ImportError
    tty = FakeTTY()
    run_fit(ProgressReporter(stream=tty))
    assert "\repoch 0 [==============================] 4/4 " in tty.getvalue()
