"""``mx.lr_scheduler``: learning rate as a function of the update count.

A scheduler is called with ``num_update``, the largest number of updates any
weight has received, and returns the learning rate for that update. The
arithmetic follows MXNet 1.9.1 operation for operation, so schedules match it
to the last bit.

Schedulers keep state, as MXNet's do: ``FactorScheduler`` and
``MultiFactorScheduler`` move ``base_lr`` forward as counts pass their steps,
and ``PolyScheduler``/``CosineScheduler`` keep the last rate in ``base_lr``
once ``max_update`` is passed. Call them with non-decreasing counts.

An optimizer given both a ``learning_rate`` and a scheduler overwrites the
scheduler's ``base_lr``, but not the rate warmup ends at (``warmup_final_lr``)
nor the starting rate of the polynomial and cosine decays (``base_lr_orig``):
both keep the value the scheduler was built with, as in MXNet.
"""

import logging
import math

__all__ = [
    "LRScheduler",
    "FactorScheduler",
    "MultiFactorScheduler",
    "PolyScheduler",
    "CosineScheduler",
]

_log = logging.getLogger(__name__)
WARMUP_MODES = ("linear", "constant")


class LRScheduler:
    """Base class: a learning rate per update count, with an optional warmup.

    Args:
        base_lr: the learning rate once warmup is over.
        warmup_steps: number of updates spent warming up (0: none).
        warmup_begin_lr: the rate warmup starts from.
        warmup_mode: ``'linear'`` (equal increments up to ``base_lr``) or
            ``'constant'`` (``warmup_begin_lr`` throughout warmup).
    """

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"):
        if not isinstance(warmup_steps, int):
            raise TypeError(
                f"{type(self).__name__}: warmup_steps must be an int, got {warmup_steps!r}"
            )
        if warmup_begin_lr > base_lr:
            raise ValueError(
                f"{type(self).__name__}: base_lr ({base_lr}) has to be higher than "
                f"warmup_begin_lr ({warmup_begin_lr})"
            )
        if warmup_steps < 0:
            raise ValueError(
                f"{type(self).__name__}: warmup_steps has to be positive or 0, got {warmup_steps}"
            )
        if warmup_mode not in WARMUP_MODES:
            raise ValueError(
                f"{type(self).__name__}: warmup_mode must be one of {WARMUP_MODES}, "
                f"got {warmup_mode!r}"
            )
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        """The rate during warmup (``num_update < warmup_steps``)."""
        if num_update >= self.warmup_steps:
            raise ValueError(
                f"{type(self).__name__}: update {num_update} is past warmup "
                f"({self.warmup_steps} steps)"
            )
        if self.warmup_mode == "constant":
            return self.warmup_begin_lr
        span = self.warmup_final_lr - self.warmup_begin_lr
        return self.warmup_begin_lr + span * float(num_update) / float(self.warmup_steps)

    def __call__(self, num_update):
        """The learning rate for update ``num_update``; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} must override __call__")

    def __repr__(self):
        return f"<{type(self).__name__} base_lr={self.base_lr}>"


def _check_factor(owner, factor):
    if factor > 1.0:
        raise ValueError(f"{owner}: factor must be no more than 1 to reduce the rate, got {factor}")


def _check_max_update(owner, max_update):
    if not isinstance(max_update, int):
        raise TypeError(f"{owner}: max_update must be an int, got {max_update!r}")
    if max_update < 1:
        raise ValueError(f"{owner}: max_update must be strictly positive, got {max_update}")


class FactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` every ``step`` updates, down to ``stop_factor_lr``.

    The rate for update ``n`` (after warmup) is
    ``base_lr * factor ** ((n - 1) // step)``, floored at ``stop_factor_lr``.
    """

    def __init__(
        self,
        step,
        factor=1,
        stop_factor_lr=1e-8,
        base_lr=0.01,
        warmup_steps=0,
        warmup_begin_lr=0,
        warmup_mode="linear",
    ):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError(f"FactorScheduler: step must be at least 1, got {step}")
        _check_factor("FactorScheduler", factor)
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        # a loop, not one step: training resumed at a later epoch jumps several steps
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                _log.info(
                    "Update[%d]: now learning rate arrived at %0.5e, will not change in the future",
                    num_update,
                    self.base_lr,
                )
            else:
                _log.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` each time the count passes one of ``step``.

    ``step`` is an increasing list of update counts; past ``step[k]`` the rate
    is ``base_lr * factor ** (k + 1)``.
    """

    def __init__(
        self, step, factor=1, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"
    ):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or not step:
            raise TypeError(f"MultiFactorScheduler: step must be a non-empty list, got {step!r}")
        for i, value in enumerate(step):
            if i and value <= step[i - 1]:
                raise ValueError(f"MultiFactorScheduler: step must be increasing, got {step}")
            if value < 1:
                raise ValueError(f"MultiFactorScheduler: steps must be at least 1, got {step}")
        _check_factor("MultiFactorScheduler", factor)
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            _log.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class PolyScheduler(LRScheduler):
    """Polynomial decay from ``base_lr`` to ``final_lr`` over ``max_update`` updates.

    After warmup: ``final_lr + (base_lr - final_lr) * (1 - t / T) ** pwr`` with
    ``t = n - warmup_steps`` and ``T = max_update - warmup_steps``; past
    ``max_update`` the rate stays where it ended.
    """

    def __init__(
        self,
        max_update,
        base_lr=0.01,
        pwr=2,
        final_lr=0,
        warmup_steps=0,
        warmup_begin_lr=0,
        warmup_mode="linear",
    ):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        _check_max_update("PolyScheduler", max_update)
        self.power = pwr
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            remaining = 1 - float(num_update - self.warmup_steps) / float(self.max_steps)
            span = self.base_lr_orig - self.final_lr
            self.base_lr = self.final_lr + span * pow(remaining, self.power)
        return self.base_lr


class CosineScheduler(LRScheduler):
    """Cosine decay from ``base_lr`` to ``final_lr`` over ``max_update`` updates.

    After warmup: ``final_lr + (base_lr - final_lr) * (1 + cos(pi * t / T)) / 2``
    with ``t`` and ``T`` as in ``PolyScheduler``.
    """

    def __init__(
        self,
        max_update,
        base_lr=0.01,
        final_lr=0,
        warmup_steps=0,
        warmup_begin_lr=0,
        warmup_mode="linear",
    ):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        _check_max_update("CosineScheduler", max_update)
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            angle = math.pi * (num_update - self.warmup_steps) / self.max_steps
            span = self.base_lr_orig - self.final_lr
            self.base_lr = self.final_lr + span * (1 + math.cos(angle)) / 2
        return self.base_lr
