"""The plugin module the entry point names: each ``rebind_add_*`` hook adds one thing.

rebind calls these hooks when it first needs a family (optimizers, metrics, ...);
``registry.add(name, implementation)`` makes the name usable wherever MXNet takes
one: ``fit(optimizer="clippedsgd")``, ``mx.metric.create("maxerror")``,
``mx.init.create("halfones")``, ``mx.kv.create("summing")``.
"""

import logging

import rebind as mx
from rebind.hookspecs import hookimpl


class ClippedSGD(mx.optimizer.Optimizer):
    """SGD whose every gradient element is clipped to [-limit, limit] before the step."""

    def __init__(self, limit=1.0, **kwargs):
        super().__init__(**kwargs)
        self.limit = limit

    def create_state(self, index, weight):
        """No state: plain SGD."""
        return None

    def update(self, index, weight, grad, state):
        """w -= lr * (clip(rescale_grad * g) + wd * w)."""
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        step = mx.nd.clip(grad * self.rescale_grad, -self.limit, self.limit)
        weight[:] = weight - lr * (step + wd * weight)


class MaxError(mx.metric.EvalMetric):
    """The largest absolute error seen (lower is better)."""

    def __init__(self, name="max-error", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    def update(self, labels, preds):
        """Keep the largest |label - prediction| over every pair."""
        for label, pred in zip(labels, preds, strict=True):
            error = abs(label.asnumpy().reshape(pred.shape) - pred.asnumpy()).max()
            self.sum_metric = max(self.sum_metric, float(error))
            self.num_inst = 1


class HalfOnes(mx.init.Initializer):
    """Every weight 0.5 (biases stay 0, as MXNet's initializers leave them)."""

    def _init_weight(self, name, arr):
        arr[:] = 0.5


class SummingStore(mx.kv.KVStoreBase):
    """A one-worker store: ``pushpull`` sums a list of arrays, ``broadcast`` copies."""

    def broadcast(self, key, value, out, priority=0):
        """Copy ``value`` into every array of ``out``."""
        for target in out if isinstance(out, list | tuple) else [out]:
            target[:] = value

    def pushpull(self, key, value, out=None, priority=0):
        """Sum ``value`` (one array per device) into ``out`` (or back into ``value``)."""
        values = value if isinstance(value, list | tuple) else [value]
        total = values[0].copy()
        for array in values[1:]:
            total += array.as_in_context(total.context)
        targets = values if out is None else out
        for target in targets if isinstance(targets, list | tuple) else [targets]:
            target[:] = total

    @staticmethod
    def is_capable(capability):
        """It cannot run the optimizer: the module updates on its devices."""
        return False

    @property
    def type(self):
        return "summing"

    @property
    def rank(self):
        return 0

    @property
    def num_workers(self):
        return 1


@hookimpl
def rebind_add_optimizers(registry):
    registry.add("ClippedSGD", ClippedSGD)


@hookimpl
def rebind_add_metrics(registry):
    registry.add("MaxError", MaxError)


@hookimpl
def rebind_add_initializers(registry):
    registry.add("HalfOnes", HalfOnes)


@hookimpl
def rebind_add_kvstores(registry):
    registry.add("summing", SummingStore)


@hookimpl
def rebind_epoch_end(module, epoch, eval_metric, validation_metric, seconds):
    """A training-event hook: called by every fit at each epoch's end."""
    logging.getLogger("rebind_extras").info("epoch %d took %.3f s", epoch, seconds)
