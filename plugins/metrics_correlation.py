"""Correlation metrics: PearsonCorrelation and PCC (multiclass Matthews correlation).

Registered under MXNet 1.9's names: ``pearsoncorrelation``/``pearsonr`` and ``pcc``.
"""

import numpy

from rebind.hookspecs import hookimpl
from rebind.metric import EvalMetric, asnumpy, check_label_shapes

__all__ = ["PearsonCorrelation", "PCC"]


class _RunningMoments:
    """Count, mean and sum of squared deviations, updated a batch at a time.

    The batch update is the one MXNet uses (Welford's step applied to a whole
    batch at once: exact for the mean, approximate for the squared deviations);
    it is reproduced so that 'micro' Pearson values match MXNet's.
    """

    def __init__(self):
        self.count = 0
        self.mean = 0.0
        self.sq_dev = 0.0

    def add(self, values):
        self.count += values.size
        before = values - self.mean
        self.mean += float(numpy.sum(before / self.count))
        self.sq_dev += float(numpy.sum(before * (values - self.mean)))


class PearsonCorrelation(EvalMetric):
    """Pearson's correlation between predictions and labels (flattened).

    Args:
        name, output_names, label_names: as ``EvalMetric``.
        average: 'macro' averages the correlation of each (label, prediction)
            pair; 'micro' computes one correlation over every value seen since
            ``reset`` (``reset_local`` does not clear it, as in MXNet).

    In 'micro' mode MXNet's ``get_global`` returns 0.0 (its global sum is
    never filled); rebind reproduces that, so use ``get`` for the value.
    """

    def __init__(self, name="pearsonr", output_names=None, label_names=None, average="macro"):
        if average not in ("macro", "micro"):
            raise ValueError(f"{name}: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        super().__init__(
            name, output_names=output_names, label_names=label_names, has_global_stats=True
        )

    def reset(self):
        """Clear all statistics, the running moments of 'micro' mode included."""
        super().reset()
        self._labels = _RunningMoments()
        self._preds = _RunningMoments()
        self._co_moment = 0.0

    def update(self, labels, preds):
        """Add each (label, prediction) pair, which must have the same shape."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            check_label_shapes(label, pred, False, True)
            label = asnumpy(label).ravel().astype(numpy.float64)
            pred = asnumpy(pred).ravel().astype(numpy.float64)
            self.num_inst += 1
            self.global_num_inst += 1
            if self.average == "macro":
                corr = float(numpy.corrcoef(pred, label)[0, 1])
                self.sum_metric += corr
                self.global_sum_metric += corr
            else:
                self._add_micro(label, pred)

    def _add_micro(self, label, pred):
        # the co-moment pairs the label's new mean with the prediction's old one,
        # in this order, exactly as MXNet updates it
        self._labels.add(label)
        self._co_moment += float(numpy.sum((label - self._labels.mean) * (pred - self._preds.mean)))
        self._preds.add(pred)

    def get(self):
        """``(name, correlation)``: mean per pair ('macro') or pooled ('micro')."""
        if self.num_inst == 0:
            return self.name, float("nan")
        if self.average == "macro":
            return self.name, self.sum_metric / self.num_inst
        n = self._labels.count
        if n < 2:
            return self.name, float("nan")
        spread = numpy.sqrt(self._preds.sq_dev / (n - 1)) * numpy.sqrt(
            self._labels.sq_dev / (n - 1)
        )
        return self.name, float(self._co_moment / ((n - 1) * spread))


def _matthews_multiclass(confusion):
    """Matthews correlation of a (predicted, true) confusion matrix; NaN when undefined."""
    total = confusion.sum()
    predicted = confusion.sum(axis=1)
    actual = confusion.sum(axis=0)
    cov_pred = numpy.sum(predicted * (total - predicted))
    cov_true = numpy.sum(actual * (total - actual))
    if cov_pred == 0 or cov_true == 0:
        return float("nan")
    cov_both = numpy.sum(confusion.diagonal() * total - predicted * actual)
    return float(cov_both / (cov_pred * cov_true) ** 0.5)


class PCC(EvalMetric):
    """Multiclass Matthews correlation from a confusion matrix accumulated over batches.

    The matrix grows when a larger class index appears. ``num_inst`` counts
    ``update`` calls; ``sum_metric`` is the coefficient times that count, so
    ``get`` gives the coefficient of everything since ``reset_local``.

    Args:
        name, output_names, label_names: as ``EvalMetric``.
        has_global_stats: keep the global matrix (default True).
    """

    def __init__(self, name="pcc", output_names=None, label_names=None, has_global_stats=True):
        self.k = 2
        super().__init__(
            name,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=has_global_stats,
        )

    @property
    def sum_metric(self):
        return _matthews_multiclass(self.lcm) * self.num_inst

    @property
    def global_sum_metric(self):
        return _matthews_multiclass(self.gcm) * self.global_num_inst

    def reset(self):
        """Clear both confusion matrices (their size is kept)."""
        self.global_num_inst = 0.0
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self):
        """Clear the local confusion matrix."""
        self.num_inst = 0.0
        self.lcm = numpy.zeros((self.k, self.k))

    def _grow(self, extra):
        widths = ((0, extra), (0, extra))
        self.lcm = numpy.pad(self.lcm, widths, "constant")
        self.gcm = numpy.pad(self.gcm, widths, "constant")
        self.k += extra

    def update(self, labels, preds):
        """Add every pair to the confusion matrices; one instance per call."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            label = asnumpy(label).astype(numpy.int32)
            pred = asnumpy(pred)
            pred = pred.argmax(axis=1) if pred.shape != label.shape else pred.astype(numpy.int32)
            label, pred = label.ravel(), pred.ravel()
            largest = int(max(pred.max(), label.max()))
            if largest >= self.k:
                self._grow(largest + 1 - self.k)
            flat = numpy.bincount(pred * self.k + label, minlength=self.k * self.k)
            batch = flat.reshape(self.k, self.k).astype(numpy.float64)
            self.lcm += batch
            self.gcm += batch
        self.num_inst += 1
        self.global_num_inst += 1

    def get(self):
        """``(name, coefficient)`` since ``reset_local``; NaN before any update."""
        if self.num_inst == 0:
            return self.name, float("nan")
        return self.name, _matthews_multiclass(self.lcm)

    def get_global(self):
        """``(name, coefficient)`` since ``reset``."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return self.name, float("nan")
        return self.name, _matthews_multiclass(self.gcm)


@hookimpl
def rebind_add_metrics(registry):
    """Register the correlation metrics under MXNet's names and aliases."""
    registry.add("PearsonCorrelation", PearsonCorrelation)
    registry.add("pearsonr", PearsonCorrelation)
    registry.add("PCC", PCC)
