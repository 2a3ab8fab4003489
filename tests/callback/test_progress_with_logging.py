"""The progress plugin and MXNet's own per-epoch log lines: each epoch is reported once.

MXNet's ``fit`` logs ``Epoch[0] Train-accuracy=...``, ``Epoch[0] Time cost=...``
and ``Epoch[0] Validation-...`` at INFO through the module's logger; most MXNet
scripts show them with ``logging.basicConfig(level=logging.INFO)``. When they
are shown the plugin stays quiet; when they are not, it reports the epoch.
"""

import io
import logging
import subprocess
import sys
import textwrap
import types

import pytest

from rebind.plugins import progress
from rebind.plugins.progress import ProgressReporter

from .test_progress_plugin import FakeTTY, ListHandler, run_fit

FIT_SCRIPT = """
import logging, sys
import numpy as np
import rebind as mx
{configure}
rng = np.random.RandomState(0)
x = rng.randn(40, 5).astype("float32")
y = (x[:, 0] > 0).astype("float32")
train = mx.io.NDArrayIter(x, y, batch_size=10)
val = mx.io.NDArrayIter(x, y, batch_size=10)
data = mx.sym.Variable("data")
net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=2), name="softmax")
mx.mod.Module(net).fit(train, eval_data=val, num_epoch=2)
"""


def _fit_stderr(configure):
    """stderr of a fresh process that configures logging as given, then fits 2 epochs."""
    script = textwrap.dedent(FIT_SCRIPT).format(configure=configure)
    env = {"REBIND_PROGRESS": "1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.fixture(autouse=True)
def progress_on(monkeypatch):
    monkeypatch.delenv(progress.ENV_SWITCH, raising=False)


@pytest.fixture
def info_logger():
    """A logger whose INFO records reach a handler, like basicConfig(level=INFO)'s root."""
    logger = logging.getLogger("tests.progress.module")
    handler = ListHandler()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger
    logger.removeHandler(handler)


def test_basic_config_at_info_shows_each_epoch_once_in_mxnets_words():
    err = _fit_stderr("logging.basicConfig(level=logging.INFO)")
    for epoch in range(2):
        assert err.count(f"Epoch[{epoch}] Train-accuracy=") == 1
        assert err.count(f"Epoch[{epoch}] Time cost=") == 1
        assert err.count(f"Epoch[{epoch}] Validation-accuracy=") == 1
    assert "epoch 0:" not in err and "epoch 1:" not in err  # no second report


def test_without_logging_configuration_the_plugin_reports_each_epoch():
    err = _fit_stderr("")
    assert "Epoch[" not in err  # MXNet's INFO lines are not shown without configuration
    for epoch in range(2):
        assert err.count(f"epoch {epoch}: train accuracy=") == 1


def test_logging_at_warning_keeps_the_plugin():
    err = _fit_stderr("logging.basicConfig(level=logging.WARNING)")
    assert "Epoch[" not in err
    assert err.count("epoch 1: train accuracy=") == 1


@pytest.mark.parametrize("tty", [False, True], ids=["log line", "terminal bar"])
def test_quiet_when_the_modules_logger_shows_info(info_logger, log_lines_sink, tty):
    stream = FakeTTY() if tty else io.StringIO()
    module = types.SimpleNamespace(logger=info_logger)
    run_fit(ProgressReporter(stream=stream, logger=log_lines_sink[0]), module=module)
    assert stream.getvalue() == "" and log_lines_sink[1] == []


def test_a_logger_adapter_is_looked_through(info_logger, log_lines_sink):
    module = types.SimpleNamespace(logger=logging.LoggerAdapter(info_logger, {}))
    run_fit(ProgressReporter(stream=io.StringIO(), logger=log_lines_sink[0]), module=module)
    assert log_lines_sink[1] == []


def test_a_handler_above_info_does_not_count(monkeypatch, info_logger, log_lines_sink):
    quiet = ListHandler()
    quiet.setLevel(logging.WARNING)
    # only this handler: pytest adds its capturing ones to loggers that do not propagate
    monkeypatch.setattr(info_logger, "handlers", [quiet])
    module = types.SimpleNamespace(logger=info_logger)
    run_fit(ProgressReporter(stream=io.StringIO(), logger=log_lines_sink[0]), module=module)
    assert log_lines_sink[1] == ["epoch 0: train accuracy=0.7500, 0.5 s (80 samples/s)"]


def test_default_module_logger_is_the_root_logger(monkeypatch, log_lines_sink):
    root = logging.getLogger()
    monkeypatch.setattr(root, "level", logging.INFO)
    monkeypatch.setattr(root, "handlers", [])  # only Python's last resort: warnings only
    module = types.SimpleNamespace(logger=logging)  # MXNet's default: logger=logging
    run_fit(ProgressReporter(stream=io.StringIO(), logger=log_lines_sink[0]), module=module)
    assert log_lines_sink[1] == ["epoch 0: train accuracy=0.7500, 0.5 s (80 samples/s)"]
    monkeypatch.setattr(root, "handlers", [ListHandler()])  # as basicConfig(level=INFO)
    run_fit(ProgressReporter(stream=io.StringIO(), logger=log_lines_sink[0]), module=module)
    assert len(log_lines_sink[1]) == 1  # no second line


@pytest.fixture
def log_lines_sink():
    """The plugin's own logger in these tests, and the lines it received."""
    logger = logging.getLogger("tests.progress.sink")
    handler = ListHandler()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, handler.lines
    logger.removeHandler(handler)
