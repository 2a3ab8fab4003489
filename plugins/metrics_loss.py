"""Loss-as-metric: Loss (the mean of the outputs), and its MXNet aliases Torch and Caffe.

Registered under MXNet 1.9's names: ``loss``, ``torch`` and ``caffe``. They
ignore the labels: a network whose outputs are losses is scored by their mean.
"""

from rebind.hookspecs import hookimpl
from rebind.metric import EvalMetric, asnumpy, batch_value

__all__ = ["Loss", "Torch", "Caffe"]


class Loss(EvalMetric):
    """The mean of every element of the predictions (loss outputs); labels are ignored.

    Args:
        name, output_names, label_names: as ``EvalMetric``.
    """

    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(
            name, output_names=output_names, label_names=label_names, has_global_stats=True
        )

    def update(self, _, preds):
        """Add the sum and the element count of each prediction."""
        if hasattr(preds, "asnumpy"):
            preds = [preds]
        for pred in preds:
            data = getattr(pred, "_data", None)  # where it is (no copy to the host)
            values = asnumpy(pred) if data is None else data
            self._add_sums(batch_value(values.sum()))  # on a GPU it stays there until read
            self.num_inst += values.size
            self.global_num_inst += values.size


class Torch(Loss):
    """``Loss`` under the name MXNet gave it for Torch criteria ('torch')."""

    def __init__(self, name="torch", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


class Caffe(Loss):
    """``Loss`` under the name MXNet gave it for Caffe losses ('caffe')."""

    def __init__(self, name="caffe", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@hookimpl
def rebind_add_metrics(registry):
    """Register Loss, Torch and Caffe under MXNet's names."""
    registry.add("Loss", Loss)
    registry.add("Torch", Torch)
    registry.add("Caffe", Caffe)
