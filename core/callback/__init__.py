"""``mx.callback``: the callbacks ``fit`` calls after a batch or an epoch.

MXNet 1.9's callbacks, with its signatures and log lines:

- batch-end callbacks take one ``BatchEndParam`` (``epoch``, ``nbatch``,
  ``eval_metric``, ``locals``): ``Speedometer``, ``ProgressBar``,
  ``log_train_metric``; ``LogValidationMetricsCallback`` is an
  ``eval_end_callback`` and takes the same record with the validation metric.
- epoch-end callbacks take ``(epoch, symbol, arg_params, aux_params)``:
  ``do_checkpoint`` and ``module_checkpoint``.

They log through the root logger at INFO, as MXNet's do, so a script's
``logging.basicConfig(level=logging.INFO)`` shows them.

rebind adds callbacks MXNet lacks (``EarlyStopping``, ``BestCheckpoint``,
``StopOnNaN``); they live in ``rebind.callback.extras`` and are re-exported
here. They end training by raising ``rebind.errors.StopTraining``.
"""

import logging
import math
import time

from ..model import save_checkpoint  # MXNet's callback module exposes it too
from .extras import BestCheckpoint, EarlyStopping, StopOnNaN

__all__ = [
    "BestCheckpoint",
    "EarlyStopping",
    "LogValidationMetricsCallback",
    "ProgressBar",
    "Speedometer",
    "StopOnNaN",
    "do_checkpoint",
    "log_train_metric",
    "module_checkpoint",
    "save_checkpoint",
]


def _as_period(period):
    return int(max(1, period))


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """An epoch-end callback that calls ``mod.save_checkpoint`` every ``period`` epochs.

    After epoch index ``e`` (0-based) it saves when ``(e + 1) % period == 0``,
    under the number ``e + 1``: files ``prefix-symbol.json``,
    ``prefix-%04d.params`` and, with ``save_optimizer_states``,
    ``prefix-%04d.states``. A ``period`` below 1 counts as 1, as in MXNet.
    """
    period = _as_period(period)

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)

    return _callback


def do_checkpoint(prefix, period=1):
    """An epoch-end callback that saves the symbol and parameters every ``period`` epochs.

    It writes ``rebind.model.save_checkpoint(prefix, e + 1, sym, arg, aux)``
    after epoch index ``e`` when ``(e + 1) % period == 0``.
    """
    period = _as_period(period)

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)

    return _callback


def log_train_metric(period, auto_reset=False):
    """A batch-end callback logging the training metric every ``period`` batches.

    One line per metric value, ``Iter[epoch] Batch[nbatch] Train-name=value``;
    with ``auto_reset`` the metric's local statistics are cleared after each
    log, so every line covers the batches since the previous one.
    """

    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info(
                    "Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch, name, value
                )
            if auto_reset:
                param.eval_metric.reset_local()

    return _callback


class Speedometer:
    """A batch-end callback logging throughput and the training metric every ``frequent`` batches.

    The first call of an epoch starts the clock; every ``frequent`` batches
    after that it logs ``frequent * batch_size / elapsed`` samples per second
    with the metric (``Epoch[e] Batch [a-b]\\tSpeed: s samples/sec\\tname=value``),
    then restarts the clock. With ``auto_reset`` (the default) the metric's
    local statistics are cleared after each line, so values cover the last
    ``frequent`` batches; without it they cover the epoch so far (``Batch [0-b]``).
    A batch index smaller than the previous one means a new epoch: the clock
    starts again.

    Args:
        batch_size: samples per batch.
        frequent: batches between two lines.
        auto_reset: clear the metric's local statistics after logging.
    """

    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.auto_reset = auto_reset
        self.init = False
        self.tic = 0
        self.last_count = 0

    def __call__(self, param):
        """Log speed and metric when ``param.nbatch`` is a multiple of ``frequent``."""
        count = param.nbatch
        if self.last_count > count:
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        try:
            speed = self.frequent * self.batch_size / (time.time() - self.tic)
        except ZeroDivisionError:
            speed = float("inf")
        self._log(param, count, speed)
        self.tic = time.time()

    def _log(self, param, count, speed):
        metric = param.eval_metric
        if metric is None:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count, speed)
            return
        name_value = metric.get_name_value()
        values = [item for pair in name_value for item in pair]
        if self.auto_reset:
            metric.reset_local()
            message = "Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(
                name_value
            )
            logging.info(message, param.epoch, count - self.frequent, count, speed, *values)
        else:
            message = "Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(
                name_value
            )
            logging.info(message, param.epoch, count, speed, *values)


class ProgressBar:
    """A batch-end callback logging a text bar ``[====----] 50%`` of ``total`` batches.

    Args:
        total: batches in an epoch.
        length: characters in the bar.
    """

    def __init__(self, total, length=80):
        self.bar_len = length
        self.total = total

    def __call__(self, param):
        """Log the bar for batch ``param.nbatch``."""
        count = param.nbatch
        filled_len = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        prog_bar = "=" * filled_len + "-" * (self.bar_len - filled_len)
        logging.info("[%s] %s%s\r", prog_bar, percents, "%")


class LogValidationMetricsCallback:
    """An eval-end callback logging ``Epoch[e] Validation-name=value`` for each metric value."""

    def __call__(self, param):
        """Log the validation metric of ``param``; nothing without one."""
        if param.eval_metric is None:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)
