"""Regression and likelihood metrics: MAE, MSE, RMSE, CrossEntropy, NegativeLogLikelihood.

Registered under MXNet 1.9's names: ``mae``, ``mse``, ``rmse``,
``crossentropy``/``ce`` and ``negativeloglikelihood``/``nll_loss``. Values are
computed in the arrays' own dtype (float32 for float32 inputs), as MXNet's
NumPy code does, and accumulated as Python floats.
"""

import numpy

from rebind.hookspecs import hookimpl
from rebind.metric import EvalMetric, asnumpy, batch_value, check_label_shapes, device_values

__all__ = ["MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood"]


def _as_columns(array):
    """A 1-D array as one column, so labels (N,) line up with predictions (N, 1)."""
    return array.reshape(array.shape[0], 1) if array.ndim == 1 else array


class _PerBatchError(EvalMetric):
    """Mean over update pairs of an error computed on one (label, prediction) pair."""

    def __init__(self, name, output_names, label_names):
        super().__init__(
            name, output_names=output_names, label_names=label_names, has_global_stats=True
        )

    @staticmethod
    def _error(difference):
        raise NotImplementedError

    def update(self, labels, preds):
        """Add the error of each (label, prediction) pair; each counts once."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            difference = _as_columns(asnumpy(label)) - _as_columns(asnumpy(pred))
            error = float(self._error(difference))
            self.sum_metric += error
            self.global_sum_metric += error
            self.num_inst += 1
            self.global_num_inst += 1


class MAE(_PerBatchError):
    """Mean absolute error, averaged over (label, prediction) pairs.

    Args:
        name, output_names, label_names: as ``EvalMetric``.
    """

    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(difference):
        return numpy.abs(difference).mean()


class MSE(_PerBatchError):
    """Mean squared error, averaged over (label, prediction) pairs.

    Args:
        name, output_names, label_names: as ``EvalMetric``.
    """

    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(difference):
        return (difference**2.0).mean()


class RMSE(_PerBatchError):
    """Root mean squared error of each pair, averaged over (label, prediction) pairs.

    Args:
        name, output_names, label_names: as ``EvalMetric``.
    """

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(difference):
        return numpy.sqrt((difference**2.0).mean())


def _label_probabilities(label, pred, metric_name):
    """``(xp, p)``: the probability each row of ``pred`` gives to its label, where pred is."""
    xp, label, pred = device_values(label, pred)
    label = label.ravel()
    if label.shape[0] != pred.shape[0]:
        raise ValueError(
            f"{metric_name}: {label.shape[0]} labels for {pred.shape[0]} prediction rows "
            f"(label shape {label.shape}, prediction shape {pred.shape})"
        )
    return xp, pred[xp.arange(label.shape[0]), label.astype(numpy.int64)]


class _LogLoss(EvalMetric):
    """Sum of -log(p + eps) of the labels' probabilities, averaged over samples."""

    reads_labels_on_device = True  # device_values

    def __init__(self, eps, name, output_names, label_names):
        super().__init__(
            name,
            eps=eps,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )
        self.eps = eps

    def update(self, labels, preds):
        """Add the negative log-probabilities of every pair's labels."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            xp, prob = _label_probabilities(label, pred, self.name)
            # on a GPU the sum stays there until the metric is read
            self._add_sums(batch_value((-xp.log(prob + self.eps)).sum()))
            self.num_inst += prob.shape[0]
            self.global_num_inst += prob.shape[0]


class CrossEntropy(_LogLoss):
    """Cross-entropy of predicted class probabilities against integer labels.

    Args:
        eps: added to each probability before the log (default 1e-12).
        name, output_names, label_names: as ``EvalMetric``.
    """

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


class NegativeLogLikelihood(_LogLoss):
    """Negative log-likelihood of integer labels under predicted class probabilities.

    Args:
        eps: added to each probability before the log (default 1e-12).
        name, output_names, label_names: as ``EvalMetric``.
    """

    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


@hookimpl
def rebind_add_metrics(registry):
    """Register the regression and likelihood metrics under MXNet's names and aliases."""
    registry.add("MAE", MAE)
    registry.add("MSE", MSE)
    registry.add("RMSE", RMSE)
    registry.add("CrossEntropy", CrossEntropy)
    registry.add("ce", CrossEntropy)
    registry.add("NegativeLogLikelihood", NegativeLogLikelihood)
    registry.add("nll_loss", NegativeLogLikelihood)
