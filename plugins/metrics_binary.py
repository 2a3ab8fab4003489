"""Binary classification metrics: F1 and MCC (Matthews correlation coefficient).

Both count true/false positives/negatives of the class-1 argmax and support
MXNet's two ways of averaging over mini-batches:

- ``average='micro'``: one score from the counts of all batches so far.
- ``average='macro'`` (the default): the mean of one score per ``update``
  call. MXNet clears all counts after each call in this mode, the global ones
  included, so the global value is also a mean over batches (not the score of
  the pooled counts); rebind reproduces that.

MXNet's ``get_config`` leaves ``average`` out, so ``create(**config)`` rebuilds
a macro metric; rebind keeps that too.
"""

import math

import numpy

from rebind.hookspecs import hookimpl
from rebind.metric import EvalMetric, asnumpy, check_label_shapes

__all__ = ["F1", "MCC"]

_FIELDS = ("tp", "fp", "fn", "tn")


class _BinaryCounts:
    """True/false positive/negative counts, local and global, over mini-batches."""

    def __init__(self):
        self.local = dict.fromkeys(_FIELDS, 0)
        self.glob = dict.fromkeys(_FIELDS, 0)

    def update(self, label, pred, metric_name):
        """Count one (label, scores) pair; the predicted class is the argmax over axis 1."""
        scores = asnumpy(pred)
        label = asnumpy(label).astype(numpy.int32)
        predicted = numpy.argmax(scores, axis=1)
        check_label_shapes(label, scores)
        if numpy.unique(label).size > 2:
            raise ValueError(
                f"{metric_name} only supports binary classification; the labels hold "
                f"classes {numpy.unique(label).tolist()}"
            )
        pred_true = predicted == 1
        label_true = label == 1
        counts = {
            "tp": numpy.count_nonzero(pred_true & label_true),
            "fp": numpy.count_nonzero(pred_true & ~label_true),
            "fn": numpy.count_nonzero(~pred_true & label_true),
            "tn": numpy.count_nonzero(~pred_true & ~label_true),
        }
        for field, value in counts.items():
            self.local[field] += int(value)
            self.glob[field] += int(value)

    def reset_local(self):
        self.local = dict.fromkeys(_FIELDS, 0)

    def reset(self):
        self.reset_local()
        self.glob = dict.fromkeys(_FIELDS, 0)


def _total(counts):
    return sum(counts.values())


def _fscore(counts):
    tp, fp, fn = counts["tp"], counts["fp"], counts["fn"]
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0


def _matthews(counts):
    if not _total(counts):
        return 0.0
    tp, fp, fn, tn = (float(counts[field]) for field in _FIELDS)
    # MXNet drops the zero marginals from the denominator instead of returning 0
    denominator = 1.0
    for term in (tp + fp, tp + fn, tn + fp, tn + fn):
        if term != 0.0:
            denominator *= term
    return (tp * tn - fp * fn) / math.sqrt(denominator)


class _BinaryMetric(EvalMetric):
    """Shared update and reset logic of F1 and MCC; subclasses set ``_score``."""

    _score = None

    def __init__(self, name, output_names, label_names, average):
        if average not in ("macro", "micro"):
            raise ValueError(f"{name}: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        self._counts = _BinaryCounts()
        super().__init__(
            name, output_names=output_names, label_names=label_names, has_global_stats=True
        )

    def update(self, labels, preds):
        """Count the batch's outcomes, then fold them in as ``average`` asks."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            self._counts.update(label, pred, type(self).__name__)
        score = self._score
        if self.average == "macro":
            self.sum_metric += score(self._counts.local)
            self.global_sum_metric += score(self._counts.glob)
            self.num_inst += 1
            self.global_num_inst += 1
            self._counts.reset()
        else:
            self.num_inst = _total(self._counts.local)
            self.global_num_inst = _total(self._counts.glob)
            self.sum_metric = score(self._counts.local) * self.num_inst
            self.global_sum_metric = score(self._counts.glob) * self.global_num_inst

    def reset(self):
        """Clear all counts and statistics."""
        super().reset()
        self._counts.reset()

    def reset_local(self):
        """Clear the local counts and statistics."""
        super().reset_local()
        self._counts.reset_local()


class F1(_BinaryMetric):
    """The F1 score (harmonic mean of precision and recall) of class 1.

    Args:
        name, output_names, label_names: as ``EvalMetric``.
        average: 'macro' (mean of per-batch scores) or 'micro' (pooled counts).
    """

    _score = staticmethod(_fscore)

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)


class MCC(_BinaryMetric):
    """The Matthews correlation coefficient of a binary classifier.

    Args:
        name, output_names, label_names: as ``EvalMetric``.
        average: 'macro' (mean of per-batch scores) or 'micro' (pooled counts).
    """

    _score = staticmethod(_matthews)

    def __init__(self, name="mcc", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)


@hookimpl
def rebind_add_metrics(registry):
    """Register F1 and MCC under MXNet's names."""
    registry.add("F1", F1)
    registry.add("MCC", MCC)
