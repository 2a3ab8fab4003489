"""Module.fit end to end with the callbacks, the monitor and the progress plugin active."""

import io
import json
import logging
import os

import numpy as np
import pytest

import rebind as mx
from rebind.plugins import progress
from rebind.plugins.progress import ProgressReporter


class ListHandler(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture
def progress_lines(monkeypatch):
    """The progress plugin, writing its per-epoch lines to a list."""
    monkeypatch.delenv(progress.ENV_SWITCH, raising=False)
    logger = logging.getLogger("tests.progress.fit")
    handler = ListHandler()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    reporter = ProgressReporter(stream=io.StringIO(), logger=logger)
    monkeypatch.setattr(progress, "_REPORTER", reporter)
    yield handler.lines
    logger.removeHandler(handler)


def module_logger():
    """A module logger that shows warnings but not fit's INFO epoch lines.

    With the epoch lines shown, the progress plugin stays quiet (see
    test_progress_with_logging.py); these tests want both it and caplog's records.
    """
    logger = logging.getLogger("tests.fit_module")
    logger.setLevel(logging.WARNING)
    return logger


def classifier(ctx):
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    return mx.mod.Module(net, context=ctx, logger=module_logger())


def two_blobs(rows=64, seed=3):
    rng = np.random.default_rng(seed)
    label = (np.arange(rows) % 2).astype(np.float32)
    data = rng.standard_normal((rows, 3)).astype(np.float32) + label[:, None] * 3.0
    return data, label


def test_fit_with_callbacks_monitor_and_progress(ctx, tmp_path, caplog, progress_lines):
    caplog.set_level(logging.INFO)
    mx.random.seed(11)
    data, label = two_blobs()
    train = mx.io.NDArrayIter(data, label, batch_size=16)
    valid = mx.io.NDArrayIter(data, label, batch_size=16)
    mod, prefix = classifier(ctx), str(tmp_path / "net")
    stopper = mx.callback.EarlyStopping(patience=1, min_delta=2.0)  # nothing improves by 2
    mod.fit(
        train,
        eval_data=valid,
        num_epoch=5,
        optimizer_params={"learning_rate": 0.1},
        batch_end_callback=[mx.callback.Speedometer(16, 2), mx.callback.StopOnNaN(module=mod)],
        epoch_end_callback=mx.callback.do_checkpoint(prefix, period=2),
        eval_end_callback=[mx.callback.BestCheckpoint(prefix), stopper],
        monitor=mx.monitor.Monitor(3, pattern="fc_weight"),
    )
    assert stopper.stopped_epoch == 1
    assert any("Training stopped: EarlyStopping: validation accuracy" in m for m in caplog.messages)
    assert sorted(os.listdir(tmp_path)) == [
        "net-0002.params",
        "net-best-symbol.json",
        "net-best.json",
        "net-best.params",
        "net-symbol.json",
    ]
    record = json.loads((tmp_path / "net-best.json").read_text())
    assert record["monitor"] == "accuracy" and record["epoch"] in (0, 1)
    best = mx.nd.load(f"{prefix}-best.params")
    assert best["arg:fc_weight"].shape == (2, 3)
    # Speedometer every 2 batches (of 4), Monitor every 3rd batch: steps 1, 4, 7
    assert sum("samples/sec\taccuracy=" in m for m in caplog.messages) == 2
    monitored = [m.split()[1] for m in caplog.messages if m.startswith("Batch:")]
    assert monitored == ["1", "4", "7"]
    assert len(progress_lines) == 2
    assert progress_lines[0].startswith("epoch 0: train accuracy=")
    assert ", validation accuracy=" in progress_lines[0] and "samples/s)" in progress_lines[0]
    # epoch 1 ended inside evaluation: its line comes from the end of fit
    assert progress_lines[1].startswith("epoch 1: train accuracy=")
    assert progress_lines[1].endswith("stopped after 4 batches")


def test_fit_stops_on_a_nan_loss(ctx, caplog, progress_lines):
    caplog.set_level(logging.INFO)
    data, label = two_blobs(rows=32)
    data[20] = np.nan  # in the second batch of 16
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=1, name="fc")
    net = mx.sym.LinearRegressionOutput(net, name="lro")
    mod = mx.mod.Module(net, context=ctx, label_names=["lro_label"], logger=module_logger())
    train = mx.io.NDArrayIter(data, label, batch_size=16, label_name="lro_label")
    mod.fit(train, num_epoch=3, eval_metric="mse", batch_end_callback=mx.callback.StopOnNaN())
    stopped = [m for m in caplog.messages if "Training stopped" in m]
    assert len(stopped) == 1
    assert "StopOnNaN: training metric 'mse' became nan at epoch 0, batch 1" in stopped[0]
    assert progress_lines == ["epoch 0: train mse=nan, stopped after 1 batches"]
