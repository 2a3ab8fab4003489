"""``mx.metric``: online evaluation metrics, their registry and ``create``.

This module owns the metric contract (``EvalMetric``), the helpers every metric
uses (``check_label_shapes``, ``asnumpy``), MXNet's ``register``/``alias``
decorators and ``create``, plus the two metrics ``create`` itself builds:
``CompositeEvalMetric`` (a list of metrics) and ``CustomMetric`` (a function).
The built-in metrics (Accuracy, F1, MAE, ...) live in ``rebind.plugins.metrics_*``
and are found through the registry, exactly as a third-party metric is; they
are still reachable as ``mx.metric.Accuracy`` and so on (see ``__getattr__``).

Metrics compute with MXNet's semantics: labels and predictions arrive as
lists of NDArrays of any backend. Most copy them to the host with ``asnumpy``;
Accuracy, Perplexity, CrossEntropy, NegativeLogLikelihood and Loss (fit's usual
metrics) read them where they are (``device_values``; Loss, which has no
labels, reads its outputs' arrays directly): on a GPU the batch's scores
never cross to the host, on the CPU they are not copied. On a GPU their sums
also stay there until the metric is read (``metric_sums``), so training never
waits for the device to count a batch.
"""

import json
from collections import OrderedDict

import numpy

from . import registry
from .errors import ShapeError
from .metric_sums import RunningSum, add_to_sum, batch_value

__all__ = [
    "EvalMetric",
    "CompositeEvalMetric",
    "CustomMetric",
    "alias",
    "asnumpy",
    "check_label_shapes",
    "create",
    "batch_value",
    "device_values",
    "np",
    "register",
]

FAMILY = "metrics"


def asnumpy(array):
    """The values of ``array`` (an NDArray, or anything NumPy accepts) as a NumPy array."""
    if hasattr(array, "asnumpy"):
        return array.asnumpy()
    if hasattr(array, "get") and type(array).__module__.startswith("cupy"):
        return array.get()
    return numpy.asarray(array)


def device_values(label, pred):
    """``(xp, label, pred)``: the arrays where the prediction lives, for metrics that read them.

    When both are NDArrays, the prediction's backend array (no copy), the label
    moved to its context (labels are small; a GPU's scores stay there) and that
    backend's array module; otherwise NumPy arrays (``asnumpy``). The arrays
    must not be written: they are the module's outputs and the batch.
    """
    pred_ctx, data = getattr(pred, "context", None), getattr(pred, "_data", None)
    label_ctx = getattr(label, "context", None)
    if pred_ctx is None or data is None or label_ctx is None:
        return numpy, asnumpy(label), asnumpy(pred)
    if label_ctx is not pred_ctx and label_ctx != pred_ctx:
        label = label.as_in_context(pred_ctx)
    if type(data) is numpy.ndarray and type(label._data) is numpy.ndarray:
        return numpy, label._data, data
    return pred_ctx.backend.xp, label._data, data


def _is_single_array(value):
    return hasattr(value, "asnumpy") or isinstance(value, numpy.ndarray)


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Check that labels and predictions agree, as MXNet's helper of the same name does.

    Args:
        labels, preds: two lists (their lengths are compared) or, with
            ``shape=True``, two arrays (their shapes are compared).
        wrap: return a single array wrapped in a one-element list.
        shape: compare ``.shape`` rather than ``len()``.

    Returns:
        ``(labels, preds)``, wrapped when asked.

    Raises:
        ShapeError: (a ValueError) naming both shapes.
    """
    if shape:
        label_shape, pred_shape = tuple(labels.shape), tuple(preds.shape)
        what = "shape"
    else:
        label_shape, pred_shape = len(labels), len(preds)
        what = "number"
    if label_shape != pred_shape:
        raise ShapeError(
            f"Shape of labels {label_shape} does not match shape of predictions {pred_shape} "
            f"(the {what} of labels and of predictions must be equal)"
        )
    if wrap:
        labels = [labels] if _is_single_array(labels) else labels
        preds = [preds] if _is_single_array(preds) else preds
    return labels, preds


def _nan_or_ratio(total, count):
    # a user metric may keep arrays in its sums: only NumPy scalars become floats
    return float("nan") if count == 0 else _plain(total / count)


def _as_pairs(name, value):
    names = name if isinstance(name, list) else [name]
    values = value if isinstance(value, list) else [value]
    return list(zip(names, values, strict=True))


class EvalMetric:
    """Base class of the evaluation metrics: accumulate over batches, report a value.

    A metric keeps a local sum and count (``sum_metric``/``num_inst``, cleared by
    ``reset_local``, e.g. every few batches for logging) and, when created with
    ``has_global_stats=True``, a global pair (``global_sum_metric``/
    ``global_num_inst``, cleared only by ``reset``). ``get`` returns
    ``(name, sum_metric / num_inst)``, NaN before any instance.

    Args:
        name: the name shown with the value.
        output_names: prediction names ``update_dict`` picks (all when None).
        label_names: label names ``update_dict`` picks (all when None).
        **kwargs: the metric's own settings, kept for ``get_config``;
            ``has_global_stats`` (default False) is taken out of them.
    """

    # read from a GPU only when read (see metric_sums); add device numbers with _add_sums
    sum_metric = RunningSum()
    global_sum_metric = RunningSum()
    # the metric reads labels where the outputs are (device_values): within fit and score
    # a GPU group may give it the labels the forward put there (module/copy_ahead.py)
    reads_labels_on_device = False

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self):
        """The settings that rebuild this metric through ``create(**config)``."""
        config = self._kwargs.copy()
        config.update(
            {
                "metric": type(self).__name__,
                "name": self.name,
                "output_names": self.output_names,
                "label_names": self.label_names,
            }
        )
        return config

    def update_dict(self, label, pred):
        """Update from name -> array mappings, picking ``label_names``/``output_names``."""
        preds = _pick(pred, self.output_names, "output", self.name)
        labels = _pick(label, self.label_names, "label", self.name)
        self.update(labels, preds)

    def update(self, labels, preds):
        """Accumulate one batch: ``labels`` and ``preds`` are lists of NDArrays."""
        raise NotImplementedError(f"{type(self).__name__} must implement update(labels, preds)")

    def _add_sums(self, value):
        """Add one batch's ``value`` to the local and the global sum.

        ``value`` is a host number, or a 0-d array on a GPU, which is added
        there and read when a sum is (no wait for the device per batch).
        """
        add_to_sum(self, "sum_metric", value)
        add_to_sum(self, "global_sum_metric", value)

    def reset(self):
        """Clear the local and the global statistics."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Clear the local statistics only; the global ones keep accumulating."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self):
        """``(name, value)`` over the batches since the last ``reset_local``."""
        return self.name, _nan_or_ratio(self.sum_metric, self.num_inst)

    def get_global(self):
        """``(name, value)`` since the last ``reset``; ``get()`` without global statistics."""
        if not self._has_global_stats:
            return self.get()
        return self.name, _nan_or_ratio(self.global_sum_metric, self.global_num_inst)

    def get_name_value(self):
        """``get()`` as a list of ``(name, value)`` pairs."""
        return _as_pairs(*self.get())

    def get_global_name_value(self):
        """``get_global()`` as a list of ``(name, value)`` pairs."""
        if not self._has_global_stats:
            return self.get_name_value()
        return _as_pairs(*self.get_global())


def _pick(arrays, names, role, metric_name):
    if names is None:
        return list(arrays.values())
    missing = [name for name in names if name not in arrays]
    if missing:
        raise KeyError(
            f"metric {metric_name!r}: {role} names {missing} not among the {role}s given "
            f"({list(arrays)}); pass {role}_names that match them"
        )
    return [arrays[name] for name in names]


# -- registration and creation ------------------------------------------------------------


def register(klass, name=None):
    """Register an ``EvalMetric`` subclass under ``name`` (its class name by default).

    Usable as a decorator (``@mx.metric.register``); names are case-insensitive.
    A name registered before is replaced with a warning, as MXNet does.
    """
    if not (isinstance(klass, type) and issubclass(klass, EvalMetric)):
        raise TypeError(f"can only register subclasses of EvalMetric, got {klass!r}")
    registry.add_runtime(FAMILY, name or klass.__name__, klass, owner=klass.__module__)
    return klass


def alias(*aliases):
    """Decorator registering an ``EvalMetric`` subclass under extra names."""

    def add_aliases(klass):
        for name in aliases:
            register(klass, name)
        return klass

    return add_aliases


def create(metric, *args, **kwargs):
    """Create an evaluation metric from a name, a list, a function or an instance.

    Args:
        metric: a registered name (case-insensitive, e.g. ``'acc'``); a list of
            names, metrics or functions (a ``CompositeEvalMetric``); a function
            ``feval(label, pred)`` (a ``CustomMetric``); an ``EvalMetric``
            instance (returned as is); a config dict or its JSON text (as
            ``get_config`` writes); an ``EvalMetric`` subclass (instantiated).
        *args, **kwargs: passed to the metric's constructor (to each child's
            for a list).
    """
    if isinstance(metric, EvalMetric):
        if args or kwargs:
            raise ValueError(
                f"metric {metric.name!r} is already an instance; extra arguments "
                f"{args or ''}{kwargs or ''} cannot be applied to it"
            )
        return metric
    if isinstance(metric, type) and issubclass(metric, EvalMetric):
        return metric(*args, **kwargs)
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    if isinstance(metric, dict):
        return create(**metric, **kwargs)
    if isinstance(metric, str):
        return _create_from_text(metric, args, kwargs)
    raise TypeError(
        "metric must be a name, a list, a function, a dict or an EvalMetric; "
        f"got {type(metric).__name__} {metric!r}"
    )


def _create_from_text(text, args, kwargs):
    stripped = text.strip()
    if stripped.startswith(("[", "{")):
        if args or kwargs:
            raise ValueError(f"a metric given as JSON takes no extra arguments: {text!r}")
        decoded = json.loads(stripped)
        if isinstance(decoded, list):
            name, settings = decoded
            return create(name, **settings)
        return create(**decoded)
    return registry.lookup(FAMILY, text)(*args, **kwargs)


def __getattr__(name):
    """``mx.metric.Accuracy`` and friends: registered classes by their class name."""
    if name.startswith("_"):
        raise AttributeError(name)
    names = registry.get_registry(FAMILY)
    if name in names:
        implementation = names.get(name)
        if getattr(implementation, "__name__", None) == name:
            return implementation
    raise AttributeError(f"module 'rebind.metric' has no attribute {name!r}")


# -- the metrics create() builds itself -------------------------------------------------


class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get`` returns a list of names and of values.

    Args:
        metrics: child metrics, or anything ``create`` accepts for each.
        name: the name of the group (MXNet always uses 'composite').
        output_names, label_names: as ``EvalMetric``; ``update_dict`` filters
            the mappings by them before handing them to every child.
    """

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        self.metrics = [create(child) for child in (metrics or [])]
        super().__init__(
            name, output_names=output_names, label_names=label_names, has_global_stats=True
        )

    def add(self, metric):
        """Add a child metric (anything ``create`` accepts)."""
        self.metrics.append(create(metric))

    @property
    def reads_labels_on_device(self):
        """Whether every child reads its labels on the device (none: no)."""
        return bool(self.metrics) and all(m.reads_labels_on_device for m in self.metrics)

    def get_metric(self, index):
        """The child metric at ``index``."""
        if not -len(self.metrics) <= index < len(self.metrics):
            raise ValueError(
                f"Metric index {index} is out of range 0 and {len(self.metrics)} "
                f"(composite {self.name!r} has {len(self.metrics)} metrics)"
            )
        return self.metrics[index]

    def update_dict(self, labels, preds):
        """Filter by ``label_names``/``output_names``, then let every child pick its own."""
        if self.label_names is not None:
            labels = OrderedDict((k, v) for k, v in labels.items() if k in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict((k, v) for k, v in preds.items() if k in self.output_names)
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        """Update every child with the same batch."""
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        """Reset every child."""
        super().reset()
        for metric in self.metrics:
            metric.reset()

    def reset_local(self):
        """Reset every child's local statistics."""
        super().reset_local()
        for metric in self.metrics:
            metric.reset_local()

    def get(self):
        """``([names], [values])`` of the children, flattened."""
        return self._collect(lambda metric: metric.get())

    def get_global(self):
        """``([names], [values])`` of the children's global results."""
        return self._collect(lambda metric: metric.get_global())

    def _collect(self, result_of):
        names, values = [], []
        for metric in self.metrics:
            name, value = result_of(metric)
            names.extend(name if isinstance(name, list) else [name])
            values.extend(value if isinstance(value, list) else [value])
        return names, values

    def get_config(self):
        """The group's config with each child's under ``'metrics'``."""
        config = super().get_config()
        config["metrics"] = [metric.get_config() for metric in self.metrics]
        return config


class CustomMetric(EvalMetric):
    """A metric from a function ``feval(label, pred)`` on NumPy arrays.

    ``feval`` returns either a value (averaged over the calls) or a pair
    ``(sum_metric, num_inst)`` added to the statistics as is.

    Args:
        feval: the function, called once per (label, prediction) pair.
        name: the metric's name; by default the function's name
            (``custom(<lambda>)`` for a lambda).
        allow_extra_outputs: accept more predictions than labels (the extra
            predictions are ignored) instead of raising.
    """

    def __init__(
        self, feval, name=None, allow_extra_outputs=False, output_names=None, label_names=None
    ):
        if name is None:
            name = getattr(feval, "__name__", type(feval).__name__)
            if "<" in name:
                name = f"custom({name})"
        super().__init__(
            name,
            feval=feval,
            allow_extra_outputs=allow_extra_outputs,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        """Call ``feval`` on each (label, prediction) pair, as NumPy arrays."""
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels, strict=False):
            result = self._feval(asnumpy(label), asnumpy(pred))
            total, count = result if isinstance(result, tuple) else (result, 1)
            total, count = _plain(total), _plain(count)
            self.sum_metric += total
            self.global_sum_metric += total
            self.num_inst += count
            self.global_num_inst += count

    def get_config(self):
        """Refused: a function cannot be written into a config."""
        raise NotImplementedError(
            f"CustomMetric {self.name!r} cannot be serialized: its function has no config form"
        )


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """Make a ``CustomMetric`` from a NumPy function ``feval(label, pred)``; also a decorator."""

    def feval(label, pred):
        return numpy_feval(label, pred)

    feval.__name__ = getattr(numpy_feval, "__name__", "feval")
    return CustomMetric(feval, name, allow_extra_outputs)


def _plain(value):
    """A NumPy scalar as the Python number it holds (sums then stay in float64)."""
    return value.item() if isinstance(value, numpy.generic) else value
