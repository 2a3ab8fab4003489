"""Classification metrics: Accuracy, TopKAccuracy and Perplexity.

Registered under MXNet 1.9's names: ``accuracy``/``acc``,
``topkaccuracy``/``top_k_accuracy``/``top_k_acc`` and ``perplexity``.
"""

import math

import numpy

from rebind.backends import cupy_row_kernels
from rebind.backends.cupy_kernels import fusable, is_cupy_array
from rebind.hookspecs import hookimpl
from rebind.metric import EvalMetric, asnumpy, batch_value, check_label_shapes, device_values
from rebind.metric_sums import device_total

__all__ = ["Accuracy", "TopKAccuracy", "Perplexity"]


class Accuracy(EvalMetric):
    """The fraction of predictions equal to the label.

    A prediction with the label's shape holds class indices; any other shape
    holds scores, and the class is their argmax along ``axis``.

    Args:
        axis: the axis of the class scores (default 1).
        name, output_names, label_names: as ``EvalMetric``.
    """

    reads_labels_on_device = True  # device_values

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super().__init__(
            name,
            axis=axis,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )
        self.axis = axis

    def update(self, labels, preds):
        """Count the correct predictions of each (label, prediction) pair."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            # on the device of the outputs: only the labels move there
            xp, label, pred = device_values(label, pred)
            if self._one_kernel(pred, label):
                # a GPU's scores: one kernel adds the correct rows to both running sums,
                # which stay on the device until read
                cupy_row_kernels.add_correct_rows(xp, pred, label, *self._device_totals(xp))
                self.num_inst += label.size
                self.global_num_inst += label.size
                continue
            if pred.shape != label.shape:
                pred = pred.argmax(axis=self.axis)
            if _counted_on_device(pred, label):
                # on a GPU: one kernel compares (as int32) and adds to both running sums
                cupy_row_kernels.add_equal(xp, pred, label, *self._device_totals(xp))
                self.num_inst += pred.size
                self.global_num_inst += pred.size
                continue
            # indices are compared as int32, so float scores 2.7 and labels 2.0 both read 2
            pred = pred.astype(numpy.int32).ravel()
            label = label.astype(numpy.int32).ravel()
            check_label_shapes(label, pred)
            # a count on the GPU stays there until the metric is read (see _add_sums)
            self._add_sums(xp.count_nonzero(pred == label))
            self.num_inst += pred.size
            self.global_num_inst += pred.size

    def _device_totals(self, xp):
        """The local and the global sum as device arrays the counting kernels add into."""
        return device_total(self, "sum_metric", xp), device_total(self, "global_sum_metric", xp)

    def _one_kernel(self, pred, label):
        return (
            fusable(pred, contiguous=True)  # first: on the CPU the answer comes here
            and pred.ndim == 2
            and self.axis in (1, -1)
            and pred.shape != label.shape
            and label.size == pred.shape[0]
            and 0 < pred.shape[1] <= cupy_row_kernels.MAX_WARP_WIDTH
            and _castable(label)
        )


# what the counting kernel casts to int32 as astype does (float16's cast is CuPy's own)
_CAST_KINDS = ("i", "u", "b")
_CAST_FLOATS = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float64))


def _castable(array):
    return array.dtype.kind in _CAST_KINDS or array.dtype in _CAST_FLOATS


def _counted_on_device(pred, label):
    """Whether one kernel compares these GPU class indices (``add_equal``)."""
    return (
        is_cupy_array(pred)
        and is_cupy_array(label)
        and pred.size == label.size
        and _castable(pred)
        and _castable(label)
    )


class TopKAccuracy(EvalMetric):
    """The fraction of samples whose label is among the ``top_k`` highest scores.

    The name gets ``_<top_k>`` appended (``top_k_accuracy_3``), as in MXNet;
    so does a name given explicitly.

    Args:
        top_k: how many of the best classes count (more than 1; use
            ``Accuracy`` for 1).
        name, output_names, label_names: as ``EvalMetric``.
    """

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        super().__init__(
            name,
            top_k=top_k,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )
        self.top_k = top_k
        if self.top_k <= 1:
            raise ValueError(
                f"TopKAccuracy needs top_k > 1, got top_k={top_k}; use Accuracy for top_k=1"
            )
        self.name += f"_{self.top_k}"

    def update(self, labels, preds):
        """Count the samples whose label is within the top ``top_k`` scores."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            pred = asnumpy(pred).astype(numpy.float32)
            if pred.ndim > 2:
                raise ValueError(
                    f"{self.name}: predictions must have at most 2 dimensions "
                    f"(samples, classes), got shape {pred.shape}"
                )
            label = asnumpy(label).astype(numpy.int32)
            check_label_shapes(label, pred)
            correct = self._count_correct(label, pred)
            self.sum_metric += correct
            self.global_sum_metric += correct
            self.num_inst += pred.shape[0]
            self.global_num_inst += pred.shape[0]

    def _count_correct(self, label, pred):
        if pred.ndim == 1:
            # MXNet compares the partition order of a 1-D score vector with the
            # labels; kept for parity, although such input has no classes to rank
            order = numpy.argpartition(pred, -min(self.top_k, pred.size))
            return int(numpy.count_nonzero(order == label.ravel()))
        num_classes = pred.shape[1]
        top_k = min(num_classes, self.top_k)
        best = numpy.argpartition(pred, num_classes - top_k, axis=1)[:, num_classes - top_k :]
        return int(numpy.count_nonzero(best == label.reshape(-1, 1)))


class Perplexity(EvalMetric):
    """exp of the mean negative log-probability given to the labels.

    Args:
        ignore_label: a label value whose positions are left out (padding),
            or None.
        axis: the axis of the class probabilities (default -1).
        name, output_names, label_names: as ``EvalMetric``.
    """

    reads_labels_on_device = True  # device_values

    def __init__(
        self, ignore_label, axis=-1, name="perplexity", output_names=None, label_names=None
    ):
        super().__init__(
            name,
            ignore_label=ignore_label,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        """Add the negative log-probabilities of the labels of every pair."""
        if len(labels) != len(preds):
            raise ValueError(f"{self.name}: got {len(labels)} labels but {len(preds)} predictions")
        loss, count = 0.0, 0
        for label, pred in zip(labels, preds, strict=True):
            pair_loss, pair_count = self._pair_loss(*device_values(label, pred))
            loss = loss + pair_loss  # a float, or a float64 number on the GPU
            count += pair_count
        self._add_sums(loss)
        self.num_inst += count
        self.global_num_inst += count

    def _pair_loss(self, xp, label, pred):
        classes = pred.shape[self.axis]
        if label.size * classes != pred.size:
            raise ValueError(
                f"{self.name}: shape mismatch: label {label.shape} vs. prediction {pred.shape} "
                f"(one label per row of {classes} class probabilities on axis {self.axis})"
            )
        rows = xp.moveaxis(pred, self.axis, -1).reshape(-1, classes)
        # MXNet's pick clips out-of-range indices to the nearest class
        index = xp.clip(label.reshape(-1).astype(numpy.int32), 0, classes - 1)
        prob = rows[xp.arange(rows.shape[0]), index]
        count = prob.size
        if self.ignore_label is not None:
            ignored = label.reshape(-1) == self.ignore_label
            prob = xp.where(ignored, xp.ones_like(prob), prob)
            count -= int(xp.count_nonzero(ignored))
        floor = prob.dtype.type(1e-10)  # a scalar: on a GPU no host -> device copy
        total = xp.sum(xp.log(xp.maximum(floor, prob)))
        return -batch_value(total), count  # on a GPU it stays there

    def get(self):
        """``(name, exp(mean negative log-probability))`` since ``reset_local``."""
        if self.num_inst == 0:
            return self.name, float("nan")
        return self.name, math.exp(self.sum_metric / self.num_inst)

    def get_global(self):
        """``(name, exp(mean negative log-probability))`` since ``reset``."""
        if self.global_num_inst == 0:
            return self.name, float("nan")
        return self.name, math.exp(self.global_sum_metric / self.global_num_inst)


@hookimpl
def rebind_add_metrics(registry):
    """Register the classification metrics under MXNet's names and aliases."""
    registry.add("Accuracy", Accuracy)
    registry.add("acc", Accuracy)
    registry.add("TopKAccuracy", TopKAccuracy)
    registry.add("top_k_accuracy", TopKAccuracy)
    registry.add("top_k_acc", TopKAccuracy)
    registry.add("Perplexity", Perplexity)
