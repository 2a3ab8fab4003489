"""rebind's callbacks beyond MXNet: early stopping, the best checkpoint, a NaN/Inf guard.

They keep MXNet's callback signature (one ``BatchEndParam`` with ``epoch``,
``nbatch``, ``eval_metric``, ``locals``), so they go where MXNet's go:

- ``EarlyStopping`` and ``BestCheckpoint`` watch the validation metric: pass
  them as ``fit(..., eval_data=..., eval_end_callback=...)``.
- ``StopOnNaN`` watches the training metric (and the parameters): pass it as
  ``batch_end_callback``.

A callback ends training by raising ``rebind.errors.StopTraining``; ``fit``
catches it, stops cleanly and fires its end hooks. ``mx.callback`` re-exports
all three.
"""

import json
import math

import numpy

from .. import ndarray
from ..errors import StopTraining
from ..fileutil import write_atomic

__all__ = ["EarlyStopping", "BestCheckpoint", "StopOnNaN"]

MODES = ("auto", "max", "min")
# MXNet metric names whose value is better when lower; mode='auto' looks here
LOWER_IS_BETTER = frozenset(
    {"cross-entropy", "nll-loss", "loss", "torch", "caffe", "mse", "mae", "rmse", "perplexity"}
)


class _MetricWatch:
    """One value of a metric, followed across epochs: the best so far and epochs since it.

    A call for an epoch before the last one seen means a new ``fit`` began:
    the history starts again.
    """

    def __init__(self, owner, monitor, mode, min_delta):
        if mode not in MODES:
            raise ValueError(f"{owner}: mode must be one of {MODES}, got {mode!r}")
        if min_delta < 0:
            raise ValueError(f"{owner}: min_delta must be >= 0, got {min_delta!r}")
        self.owner, self.monitor, self.mode, self.min_delta = owner, monitor, mode, min_delta
        self.reset()

    def reset(self):
        """Forget the history."""
        self.best = None
        self.best_epoch = None
        self.since_best = 0
        self._last_epoch = None

    def read(self, metric):
        """``(name, value)`` of the watched value (the first one when ``monitor`` is None)."""
        if metric is None:
            raise ValueError(
                f"{self.owner}: got no metric; use it as fit's eval_end_callback with eval_data"
            )
        pairs = metric.get_name_value()
        if self.monitor is None and pairs:
            return pairs[0][0], float(pairs[0][1])
        for name, value in pairs:
            if name == self.monitor:
                return name, float(value)
        names = [name for name, _ in pairs]
        raise ValueError(
            f"{self.owner}: the metric reports no value named {self.monitor!r}; it reports "
            f"{names}; pass monitor= one of them"
        )

    def direction(self, name):
        """'max' or 'min' for the value called ``name``."""
        if self.mode != "auto":
            return self.mode
        return "min" if name.lower() in LOWER_IS_BETTER else "max"

    def _improves(self, name, value):
        if math.isnan(value):
            return False
        if self.best is None:
            return True
        if self.direction(name) == "max":
            return value > self.best + self.min_delta
        return value < self.best - self.min_delta

    def observe(self, epoch, metric):
        """Record ``metric`` at ``epoch``; returns ``(name, value, improved)``."""
        if self._last_epoch is not None and epoch < self._last_epoch:
            self.reset()
        self._last_epoch = epoch
        name, value = self.read(metric)
        improved = self._improves(name, value)
        if improved:
            self.best, self.best_epoch, self.since_best = value, epoch, 0
        else:
            self.since_best += 1
        return name, value, improved


class EarlyStopping:
    """Stop ``fit`` when a validation metric has stopped improving (rebind; not in MXNet).

    Use as ``eval_end_callback``. After each evaluation it compares the
    watched value with the best so far; a value improves when it beats the
    best by more than ``min_delta`` in the direction ``mode`` says. When
    ``patience`` evaluations in a row have not improved it raises
    ``StopTraining``, which ``fit`` turns into a clean stop (as Keras counts). NaN never
    improves. Attributes ``best``, ``best_epoch`` and ``stopped_epoch`` can be
    read afterwards.

    Args:
        monitor: the metric value to watch, by the name the metric reports
            (``'accuracy'``, ``'cross-entropy'``); None watches the first one.
        patience: evaluations in a row without improvement after which
            training stops; 0 and 1 both stop at the first.
        min_delta: the least change that counts as an improvement.
        mode: 'max' (higher is better), 'min', or 'auto': 'min' for the values
            MXNet's loss and error metrics report (cross-entropy, nll-loss,
            loss, mse, mae, rmse, perplexity, torch, caffe), 'max' for others.
    """

    def __init__(self, monitor=None, patience=3, min_delta=0.0, mode="auto"):
        if patience < 0:
            raise ValueError(f"EarlyStopping: patience must be >= 0, got {patience!r}")
        self.patience = int(patience)
        self._watch = _MetricWatch("EarlyStopping", monitor, mode, min_delta)
        self.stopped_epoch = None

    @property
    def best(self):
        return self._watch.best

    @property
    def best_epoch(self):
        return self._watch.best_epoch

    def __call__(self, param):
        """Record the validation metric of epoch ``param.epoch``; stop when patience runs out."""
        name, value, improved = self._watch.observe(param.epoch, param.eval_metric)
        if improved or self._watch.since_best < self.patience:
            return
        self.stopped_epoch = param.epoch
        raise StopTraining(self._message(param.epoch, name, value))

    def _message(self, epoch, name, value):
        watch = self._watch
        if watch.best is None:
            return (
                f"EarlyStopping: validation {name} has been NaN for {watch.since_best} "
                f"evaluations (patience={self.patience}); training stops after epoch {epoch}"
            )
        return (
            f"EarlyStopping: validation {name} has not improved on {watch.best:.6g} "
            f"(epoch {watch.best_epoch}) by more than min_delta={watch.min_delta:g} for "
            f"{watch.since_best} evaluations (patience={self.patience}; now {value:.6g}); "
            f"training stops after epoch {epoch}"
        )


class BestCheckpoint:
    """Keep the checkpoint of the epoch with the best validation metric (rebind; not in MXNet).

    Use as ``eval_end_callback``. Whenever the watched value improves it
    writes, each file atomically and in this order, ``prefix-best.params``
    (MXNet's format, ``arg:``/``aux:`` keys), ``prefix-best-symbol.json`` and
    ``prefix-best.json`` (``{"epoch", "monitor", "value", "mode"}``, epoch
    counted from 0 as ``fit`` logs it), replacing the previous best. Load it
    back with ``mx.sym.load(prefix + '-best-symbol.json')`` and
    ``mx.nd.load(prefix + '-best.params')``. The history starts fresh with
    each ``fit``; files left by an earlier run are overwritten at the first
    evaluation.

    Args:
        prefix: path prefix of the files.
        monitor, mode, min_delta: as for ``EarlyStopping``.
        module: the module to save; by default the one ``fit`` is training,
            taken from the callback record's ``locals['self']`` (MXNet's
            ``score`` passes its locals).
    """

    def __init__(self, prefix, monitor=None, mode="auto", min_delta=0.0, module=None):
        self.prefix = str(prefix)
        self.module = module
        self._watch = _MetricWatch("BestCheckpoint", monitor, mode, min_delta)

    @property
    def best(self):
        return self._watch.best

    @property
    def best_epoch(self):
        return self._watch.best_epoch

    def __call__(self, param):
        """Save the module when epoch ``param.epoch`` has the best validation value so far."""
        name, value, improved = self._watch.observe(param.epoch, param.eval_metric)
        if improved:
            self._save(self._module_of(param), param.epoch, name, value)

    def _module_of(self, param):
        if self.module is not None:
            return self.module
        found = (param.locals or {}).get("self")
        if found is None or not hasattr(found, "get_params"):
            raise ValueError(
                "BestCheckpoint: no module to save in the callback's locals; pass "
                "BestCheckpoint(prefix, module=mod) or use it as fit's eval_end_callback"
            )
        return found

    def _save(self, module, epoch, name, value):
        arg_params, aux_params = module.get_params()
        params = {f"arg:{k}": v for k, v in arg_params.items()}
        params.update({f"aux:{k}": v for k, v in aux_params.items()})
        ndarray.save(f"{self.prefix}-best.params", params)
        _saved_symbol(module).save(f"{self.prefix}-best-symbol.json")
        record = {
            "epoch": epoch,
            "monitor": name,
            "value": value,
            "mode": self._watch.direction(name),
        }
        write_atomic(f"{self.prefix}-best.json", json.dumps(record, indent=2).encode("utf-8"))


def _saved_symbol(module):
    """The symbol a checkpoint of ``module`` holds: a BucketingModule's default bucket's."""
    buckets = getattr(module, "_buckets", None)
    key = getattr(module, "_default_bucket_key", None)
    if buckets and key in buckets:
        return buckets[key].symbol
    return module.symbol


class StopOnNaN:
    """Stop ``fit`` when the training metric or a parameter becomes NaN/Inf (rebind).

    Use as ``batch_end_callback``. Every ``period`` batches it checks each
    value of the training metric (a metric with no instances since its last
    reset is skipped, so a ``Speedometer`` reset does not trip it) and, given
    ``module``, every parameter and auxiliary state from ``module.get_params()``.
    The ``StopTraining`` it raises names the metric or parameter, the epoch and
    the batch. Parameter checks copy the parameters to the host, so raise
    ``period`` for large models.

    Args:
        period: check every ``period`` batches (batch index divisible by it).
        module: the module whose parameters to check; None checks only the metric.
    """

    def __init__(self, period=1, module=None):
        self.period = int(max(1, period))
        self.module = module

    def __call__(self, param):
        """Check the metric (and parameters) after batch ``param.nbatch``."""
        if param.nbatch % self.period:
            return
        where = f"epoch {param.epoch}, batch {param.nbatch}"
        for name, value in _observed_values(param.eval_metric):
            if not _finite(value):
                raise StopTraining(
                    f"StopOnNaN: training metric {name!r} became {value} at {where}; training "
                    "stops. Lower the learning rate, clip gradients (clip_gradient=...) or "
                    "check the data for NaN/Inf"
                )
        if self.module is not None:
            self._check_params(where)

    def _check_params(self, where):
        arg_params, aux_params = self.module.get_params()
        for kind, params in (("parameter", arg_params), ("auxiliary state", aux_params)):
            for name, array in params.items():
                values = array.asnumpy()
                bad = values.size - int(numpy.count_nonzero(numpy.isfinite(values)))
                if bad:
                    raise StopTraining(
                        f"StopOnNaN: {kind} {name!r} has {bad} NaN/Inf value(s) of "
                        f"{values.size} at {where}; training stops. Lower the learning rate "
                        "or clip gradients (clip_gradient=...)"
                    )


def _observed_values(metric):
    """``(name, value)`` pairs of the metric parts that have seen instances."""
    if metric is None:
        return []
    children = getattr(metric, "metrics", None)
    if isinstance(children, list):
        return [pair for child in children for pair in _observed_values(child)]
    if getattr(metric, "num_inst", 1):
        return metric.get_name_value()
    if getattr(metric, "global_num_inst", 0):
        return metric.get_global_name_value()
    return []


def _finite(value):
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return True
