"""Large-batch SGD (LBSGD) and MXNet's ``Test`` optimizer.

LBSGD is SGD with momentum whose rate is multiplied per step by a warm-up
factor (``linear``, ``power2``, ``sqrt`` up to ``batch_scale`` over
``warmup_epochs * updates_per_epoch`` updates) or by LARS (the layer's
``sqrt(|w|^2 / (|g|^2 + wd |w|^2))`` clipped to [0.01, 100]); with
``batch_scale`` above 1 it accumulates that many gradients and steps once with
their mean, as MXNet 1.9.1's does. rebind keeps a copy of each accumulated
gradient (MXNet kept a reference to the first one, which the next backward
overwrote).
"""

import logging
import math
import warnings

import numpy as np

from rebind.hookspecs import hookimpl
from rebind.optimizer import Optimizer
from rebind.optimizer.rules import sgd_step

__all__ = ["LBSGD", "Test"]

_log = logging.getLogger("rebind.optimizer")


class LBSGD(Optimizer):
    """Large-batch SGD with momentum, warm-up strategies and LARS.

    Args:
        momentum: the momentum factor (0: no momentum state).
        warmup_strategy: ``'linear'``, ``'power2'``, ``'sqrt'`` or ``'lars'``.
        warmup_epochs: epochs over which the warm-up factor grows to ``batch_scale``.
        batch_scale: gradients accumulated per step (and the warm-up's final factor).
        updates_per_epoch: updates that make an epoch, for the warm-up.
        begin_epoch: the epoch training starts at (counts as done updates).
        num_epochs: kept for MXNet's signature.
    """

    _float32_settings = True  # a fused operator in MXNet

    def __init__(
        self,
        momentum=0.0,
        multi_precision=False,
        warmup_strategy="linear",
        warmup_epochs=5,
        batch_scale=1,
        updates_per_epoch=32,
        begin_epoch=0,
        num_epochs=60,
        **kwargs,
    ):
        super().__init__(multi_precision=multi_precision, **kwargs)
        _log.info(
            "Running Large-Batch SGD Algorithm (batch_scale=%s, warmup_epochs=%s, "
            "warmup_strategy=%s, updates_per_epoch=%s)",
            batch_scale,
            warmup_epochs,
            warmup_strategy,
            updates_per_epoch,
        )
        self.momentum = momentum
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.cumgrads = {}

    def create_state(self, index, weight):
        if weight.dtype == np.float16 and not self.multi_precision:
            warnings.warn(
                "Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                "convergence; consider multi_precision=True",
                stacklevel=2,
            )
        return None if self.momentum == 0.0 else self._state_zeros(weight)

    def _get_lbmult(self, nup):
        """The warm-up factor after ``nup`` updates."""
        nwup = self.warmup_epochs * self.updates_per_epoch
        most = float(self.batch_scale)
        if nup >= nwup:
            return most
        if nwup <= 1:
            return 1.0
        fraction = nup / nwup
        growth = {"linear": fraction, "power2": fraction * fraction, "sqrt": math.sqrt(fraction)}
        return 1.0 + (most - 1) * growth.get(self.warmup_strategy, 0.0)

    @staticmethod
    def _get_lars(weight, grad, wd):
        """LARS's factor for one layer, clipped to [0.01, 100]."""
        weight2 = float((weight * weight).sum())
        grad2 = float((grad * grad).sum())
        lars = math.sqrt(weight2 / (grad2 + wd * weight2 + 1e-18))
        return min(max(lars, 0.01), 100.0)

    def _cumulate(self, index, grad):
        """Add ``grad`` to ``index``'s running sum; returns (sum, updates counted)."""
        held = self.cumgrads.get(index)
        if held and held["num_cums"] > 0:
            total = grad.copy() if held["cum_grad"] is None else held["cum_grad"] + grad
            count = held["num_cums"] + 1
        else:
            total, count = grad.copy(), self.init_updates + 1
        self.cumgrads[index] = {"cum_grad": total, "num_cums": count}
        return total, count

    def update(self, index, weight, grad, state):
        self._check_arrays("LBSGD", weight, grad)
        lr, wd = self._get_lr(index), self._get_wd(index)
        self._update_count(index)
        total, count = self._cumulate(index, grad._data)
        if count % self.batch_scale != 0:
            return  # MXNet runs an SGD step with rate 0 here: the weight stays as it is
        mean = total / self.batch_scale
        if self.warmup_strategy == "lars":
            lr *= self._get_lars(weight._data, mean, wd)
        else:
            lr *= self._get_lbmult(count)
        mom = None if state is None else state._data
        momentum = max(self.momentum, 0.0)
        clip = self.clip_gradient is not None and self.clip_gradient > 0
        if clip:
            sgd_step(
                weight._data, self._clip(mean * float(self.rescale_grad)), mom, lr, wd, momentum
            )
        else:
            sgd_step(weight._data, mean, mom, lr, wd, momentum, self.rescale_grad)
        self.cumgrads[index]["cum_grad"] = None


class Test(Optimizer):
    """MXNet's test optimizer: ``w += rescale_grad * grad``; the state holds the new weight."""

    def create_state(self, index, weight):
        return self._state_zeros(weight)

    def update(self, index, weight, grad, state):
        self._check_arrays("Test", weight, grad)
        weight._data += grad._data * self.rescale_grad
        state._data[...] = weight._data


@hookimpl
def rebind_add_optimizers(registry):
    for cls in (LBSGD, Test):
        registry.add(cls.__name__.lower(), cls)
