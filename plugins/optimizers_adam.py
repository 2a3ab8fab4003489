"""Adam-like optimizers: Adam, Adamax, Nadam, FTML, LAMB.

Registered under MXNet's lower-cased class names; Adam, FTML and LAMB use the
update rules of ``rebind.optimizer.rules``, shared with ``adam_update``,
``ftml_update`` and ``lamb_update_phase1/2``; the arithmetic follows MXNet
1.9.1 operation by operation. Adam, Adamax, Nadam and FTML add the
weight decay to the rescaled gradient before clipping (so the decay is
clipped too); LAMB clips the gradient alone and adds the decay to the
normalised step. ``t`` is the number of updates of the weight's index so far,
counted from ``begin_num_update``. LAMB given lists of weights (as the updater
gives them: its ``aggregate_num`` is 45) follows ``_multi_lamb_update``.
"""

import math
import os
from types import SimpleNamespace

import numpy as np

from rebind.backends import cupy_multi_kernels, cupy_rule_kernels
from rebind.backends.cupy_kernels import fusable
from rebind.hookspecs import hookimpl
from rebind.optimizer import Optimizer
from rebind.optimizer.multi_lamb import lamb_tensor_step
from rebind.optimizer.rules import (
    adam_step,
    ftml_step,
    lamb_apply,
    lamb_direction,
    lamb_ratio,
    moving_average,
    moving_square_average,
)
from rebind.optimizer.sparse_updates import LAZY_WHEN_SAME_STYPE, any_sparse, register_rule

__all__ = ["Adam", "Adamax", "Nadam", "FTML", "LAMB"]


class _MomentOptimizer(Optimizer):
    """Shared parts: two zero moment arrays per weight, gradient with decay then clipped."""

    def create_state(self, index, weight):
        return (self._state_zeros(weight), self._state_zeros(weight))

    def _begin(self, index, weight, grad):
        """Count the update; return (lr, wd, t, clipped gradient with decay)."""
        self._check_arrays(type(self).__name__, weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        decayed = self._rescaled(grad) + weight._data * self._setting(weight._data, wd)
        return lr, wd, t, self._clip(decayed)


class Adam(_MomentOptimizer):
    """Adam; its bias correction is folded into the step size, as MXNet does.

    ``lr_t = lr * sqrt(1 - beta2 ** t) / (1 - beta1 ** t)`` and
    ``w -= lr_t * m / (sqrt(v) + epsilon)``.

    Args:
        beta1, beta2: decay rates of the first and second moments.
        epsilon: added to ``sqrt(v)``.
        lazy_update: with a row_sparse gradient, update only the rows it holds
            (moments included), as MXNet's lazy update; False: every row. The
            moments of a row_sparse weight are row_sparse only with lazy_update.
    """

    _float32_settings = True  # a fused operator in MXNet

    def __init__(
        self,
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-8,
        lazy_update=True,
        **kwargs,
    ):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        stype = getattr(weight, "stype", "default") if self.lazy_update else "default"
        return (self._state_zeros(weight, stype=stype), self._state_zeros(weight, stype=stype))

    def update(self, index, weight, grad, state):
        if _on_device([weight], [grad], [state]):  # one CuPy kernel, the gradient made in it
            self._update_on_device([index], [weight], [grad], [state])
            return
        lr, _wd, t, g = self._begin(index, weight, grad)
        lr *= math.sqrt(1.0 - self.beta2**t) / (1.0 - self.beta1**t)
        mean, var, xp = state[0]._data, state[1]._data, weight.context.backend.xp
        adam_step(xp, weight._data, g, mean, var, lr, self.beta1, self.beta2, self.epsilon)

    def update_many(self, indices, weights, grads, states):
        """On a GPU, the weights sharing their rates in one launch (``cupy_multi_kernels``)."""
        dense = not any_sparse(weights, grads, states)
        if type(self).update is Adam.update and dense and _on_device(weights, grads, states):
            self._update_on_device(indices, weights, grads, states)
            return
        super().update_many(indices, weights, grads, states)

    def _update_on_device(self, indices, weights, grads, states):
        """``update``'s arithmetic, each element's gradient made in the kernel."""
        for weight, grad in zip(weights, grads, strict=True):
            self._check_arrays(type(self).__name__, weight, grad)
        self._update_count(indices)
        bound = self.clip_gradient if self.clip_gradient and self.clip_gradient > 0 else 0.0
        groups = {}
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        for index, weight, grad, state, lr, wd in zip(
            indices, weights, grads, states, lrs, wds, strict=True
        ):
            t = self._index_update_count[index]
            lr *= math.sqrt(1.0 - self.beta2**t) / (1.0 - self.beta1**t)
            dtype = weight._data.dtype
            scalars = (self.rescale_grad, wd, bound, lr, self.beta1, self.beta2, self.epsilon)
            key = (weight.context, dtype, tuple(dtype.type(v) for v in scalars))
            arrays = (weight._data, grad._data, state[0]._data, state[1]._data)
            groups.setdefault(key, []).append(arrays)
        for (context, _, scalars), members in groups.items():
            columns = [list(column) for column in zip(*members, strict=True)]
            cupy_multi_kernels.adam_steps(context.backend.xp, *columns, scalars)


def _on_device(weights, grads, states):
    """Whether Adam's kernel takes these: CuPy float arrays of one shape each, contiguous."""
    return all(
        fusable(w._data, g._data, s[0]._data, s[1]._data, same_shape=True, contiguous=True)
        for w, g, s in zip(weights, grads, states, strict=True)
    )


class Adamax(_MomentOptimizer):
    """AdaMax: Adam with the infinity norm.

    ``u = max(beta2 * u, |g|)`` and ``w -= lr / (1 - beta1 ** t) * m / u``.
    """

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def update(self, index, weight, grad, state):
        lr, _wd, t, g = self._begin(index, weight, grad)
        lr /= 1.0 - self.beta1**t
        mean, peak = state[0]._data, state[1]._data
        xp = weight.context.backend.xp
        if fusable(weight._data, g, mean, peak, same_shape=True):  # one CuPy kernel
            kind = weight._data.dtype.type
            b1, rest1, b2 = kind(self.beta1), kind(1.0 - self.beta1), kind(self.beta2)
            cupy_rule_kernels.adamax_step(xp, weight._data, g, mean, peak, kind(lr), b1, rest1, b2)
            return
        moving_average(mean, g, self.beta1, 1.0)
        xp.maximum(self.beta2 * peak, xp.abs(g), out=peak)
        weight._data -= lr * mean / peak


class Nadam(_MomentOptimizer):
    """Adam with Nesterov momentum and a warming momentum schedule.

    ``mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * schedule_decay))``; the product of
    the ``mu`` so far (``m_schedule``) is one number for the whole optimizer,
    not one per weight: MXNet's behaviour, kept, so that with several weights
    each update advances it.
    """

    def __init__(
        self,
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-8,
        schedule_decay=0.004,
        **kwargs,
    ):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.0

    def update(self, index, weight, grad, state):
        lr, _wd, t, g = self._begin(index, weight, grad)
        momentum_t = self.beta1 * (1.0 - 0.5 * pow(0.96, t * self.schedule_decay))
        momentum_next = self.beta1 * (1.0 - 0.5 * pow(0.96, (t + 1) * self.schedule_decay))
        self.m_schedule = self.m_schedule * momentum_t
        schedule_next = self.m_schedule * momentum_next
        mean, var = state[0]._data, state[1]._data
        if fusable(weight._data, g, mean, var, same_shape=True):  # one CuPy kernel
            kind = weight._data.dtype.type
            scalars = (
                lr,
                self.beta1,
                1.0 - self.beta1,
                self.beta2,
                1.0 - self.beta2,
                1.0 - self.m_schedule,
                1.0 - schedule_next,
                1.0 - pow(self.beta2, t),
                1.0 - momentum_t,
                momentum_next,
                self.epsilon,
            )
            xp = weight.context.backend.xp
            cupy_rule_kernels.nadam_step(
                xp, weight._data, g, mean, var, tuple(kind(v) for v in scalars)
            )
            return
        moving_average(mean, g, self.beta1, 1.0)
        moving_square_average(var, g, self.beta2, 1.0)
        grad_prime = g / (1.0 - self.m_schedule)
        mean_prime = mean / (1.0 - schedule_next)
        var_prime = var / (1.0 - pow(self.beta2, t))
        mean_bar = (1.0 - momentum_t) * grad_prime + momentum_next * mean_prime
        xp = weight.context.backend.xp
        weight._data -= lr * mean_bar / (xp.sqrt(var_prime) + self.epsilon)


class FTML(_MomentOptimizer):
    """Follow the moving leader.

    ``v = beta2 * v + (1 - beta2) * g^2``,
    ``d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon)``,
    ``z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * w`` and ``w = -z / d_t``.
    The state is ``(d, v, z)``.
    """

    _float32_settings = True  # a fused operator in MXNet

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return tuple(self._state_zeros(weight) for _ in range(3))

    def update(self, index, weight, grad, state):
        lr, _wd, t, g = self._begin(index, weight, grad)
        prev_d, var, z = (s._data for s in state)
        xp = weight.context.backend.xp
        ftml_step(xp, weight._data, g, prev_d, var, z, lr, self.beta1, self.beta2, self.epsilon, t)


class LAMB(_MomentOptimizer):
    """Layer-wise adaptive moments (LAMB).

    ``g = clip(rescale_grad * grad)``; Adam moments; with ``bias_correction``
    ``r = m_hat / (sqrt(v_hat) + epsilon) + wd * w``; then
    ``w -= lr * |w| / |r| * r``, ``|w|`` bounded by ``lower_bound``/``upper_bound``
    when given, and a ratio of 1 when either norm is 0.
    """

    _float32_settings = True  # a fused operator in MXNet

    def __init__(
        self,
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-6,
        lower_bound=None,
        upper_bound=None,
        bias_correction=True,
        **kwargs,
    ):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction
        size = int(os.environ.get("MXNET_OPTIMIZER_AGGREGATION_SIZE", "45"))
        self.aggregate_num = max(1, min(45, size))

    def update(self, index, weight, grad, state):
        """Update one weight, or lists of them as ``multi_lamb_update`` does (see below)."""
        if isinstance(index, (list, tuple)):
            self._update_aggregated(index, weight, grad, state, multi_precision=False)
            return
        self._update_one(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        """``update``; lists of weights through their float32 master copies when enabled."""
        if not isinstance(index, (list, tuple)):
            super().update_multi_precision(index, weight, grad, state)
            return
        mixed = self.multi_precision and weight[0].dtype == np.float16
        self._update_aggregated(index, weight, grad, state, multi_precision=mixed)

    def _update_aggregated(self, indices, weights, grads, states, multi_precision):
        """Lists of weights, as MXNet's LAMB runs them: ``multi_lamb_update``'s arithmetic.

        With ``aggregate_num`` 1 MXNet takes the single-weight path instead
        (``lamb_update_phase1``/``2``), for a list of one weight.
        """
        if self.aggregate_num <= 1:
            if multi_precision:
                super().update_multi_precision(indices[0], weights[0], grads[0], states[0])
            else:
                self._update_one(indices[0], weights[0], grads[0], states[0])
            return
        for weight, grad in zip(weights, grads, strict=True):
            self._check_arrays("LAMB", weight, grad)
        self._update_count(list(indices))
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        settings = SimpleNamespace(
            beta1=self.beta1,
            beta2=self.beta2,
            epsilon=self.epsilon,
            rescale_grad=self.rescale_grad,
            clip_gradient=self.clip_gradient if self.clip_gradient else -1.0,
            lower_bound=self.lower_bound if self.lower_bound else -1.0,
            upper_bound=self.upper_bound if self.upper_bound else -1.0,
            bias_correction=self.bias_correction,
        )
        for index, weight, grad, state, lr, wd in zip(
            indices, weights, grads, states, lrs, wds, strict=True
        ):
            target, (mean, var) = (state[0], state[1]) if multi_precision else (weight, state)
            t = self._index_update_count[index]
            xp = weight.context.backend.xp
            lamb_tensor_step(
                xp, settings, target._data, weight._data, grad._data, mean._data, var._data,
                lr, wd, t,
            )  # fmt: skip
            if multi_precision:
                weight._data[...] = target._data.astype(weight._data.dtype)

    def _update_one(self, index, weight, grad, state):
        self._check_arrays("LAMB", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        g = self._clip(self._rescaled(grad))
        w, xp = weight._data, weight.context.backend.xp
        mean, var = state[0]._data, state[1]._data
        step = lamb_direction(
            xp, w, g, mean, var, self.beta1, self.beta2, self.epsilon, t, wd, self.bias_correction
        )
        kind = w.dtype.type
        r1 = float(xp.sqrt(xp.sum(xp.square(w))))
        r2 = float(xp.sqrt(xp.sum(xp.square(step))))
        ratio = lamb_ratio(r1, r2, self.lower_bound or None, self.upper_bound or None, kind)
        lamb_apply(w, step, lr, ratio)


register_rule(Adam, LAZY_WHEN_SAME_STYPE)


@hookimpl
def rebind_add_optimizers(registry):
    for cls in (Adam, Adamax, Nadam, FTML, LAMB):
        registry.add(cls.__name__.lower(), cls)
