"""SGD-like optimizers: SGD (and ccSGD), NAG, Signum, LARS, DCASGD, SGLD.

Registered under MXNet's lower-cased class names. The arithmetic is the update
rules' of ``rebind.optimizer.rules``, shared with the ``sgd_mom_update`` family
of operators, and follows MXNet 1.9.1's kernels operation by operation. In these
optimizers the weight decay is added after the gradient is rescaled and
clipped, so it is never clipped itself. The momentum buffer of SGD, NAG and
LARS holds the step itself (``mom = momentum * mom - lr * (g + wd * w)``,
then ``w += mom``), as MXNet's does, so saved states carry the same values.
"""

import math
import os

import numpy as np

from rebind.backends import cupy_rule_kernels
from rebind.backends.cupy_kernels import fusable
from rebind.hookspecs import hookimpl
from rebind.ndarray import NDArray
from rebind.optimizer import Optimizer
from rebind.optimizer.rules import (
    lars_rate,
    nag_step,
    sgd_step,
    sgd_steps,
    signsgd_step,
    signum_step,
)
from rebind.optimizer.sparse_updates import LAZY_WHEN_SAME_STYPE, any_sparse, register_rule

__all__ = ["SGD", "ccSGD", "NAG", "Signum", "LARS", "DCASGD", "SGLD"]


def _clipping(optimizer):
    """Whether ``optimizer._clip`` clips (a positive ``clip_gradient``)."""
    bound = optimizer.clip_gradient
    return bound is not None and bound > 0


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum and weight decay.

    Without momentum: ``w = (1 - lr * wd) * w - lr * clip(rescale_grad * g)``.
    With momentum: ``mom = momentum * mom - lr * wd * w - lr * clip(rescale_grad * g)``
    and ``w += mom``.

    Args:
        momentum: the momentum factor (0: no momentum state).
        lazy_update: with a row_sparse gradient, update only the rows it holds
            (weight decay and momentum included), as MXNet's lazy update;
            False: the standard update of every row. The momentum of a
            row_sparse weight is row_sparse only with lazy_update.
    """

    _float32_settings = True  # a fused operator in MXNet

    _master_copy_first = False

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        # MXNet: a row_sparse momentum (lazy updates) only with lazy_update
        stype = getattr(weight, "stype", "default") if self.lazy_update else "default"
        return self._state_zeros(weight, stype=stype)

    def update(self, index, weight, grad, state):
        self._check_arrays(type(self).__name__, weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        mom = None if state is None else state._data
        momentum = max(self.momentum, 0.0)
        if _clipping(self):
            sgd_step(weight._data, self._clip(self._rescaled(grad)), mom, lr, wd, momentum)
        else:
            sgd_step(weight._data, grad._data, mom, lr, wd, momentum, self.rescale_grad)

    def update_many(self, indices, weights, grads, states):
        """All weights of a step in one call: counts and rates once, then one kernel each."""
        plain = type(self).update is SGD.update and not _clipping(self)
        plain = plain and not any_sparse(weights, grads, states)
        if not plain or (self.multi_precision and any(w.dtype == np.float16 for w in weights)):
            super().update_many(indices, weights, grads, states)
            return
        for weight, grad in zip(weights, grads, strict=True):
            if type(weight) is not NDArray or type(grad) is not NDArray:
                self._check_arrays(type(self).__name__, weight, grad)
        self._update_count(indices)
        sgd_steps(
            [w._data for w in weights],
            [g._data for g in grads],
            [None if s is None else s._data for s in states],
            self._get_lrs(indices),
            self._get_wds(indices),
            max(self.momentum, 0.0),
            self.rescale_grad,
        )


class ccSGD(SGD):  # noqa: N801 (MXNet's name)
    """Deprecated in MXNet: the same as ``SGD``."""


class NAG(Optimizer):
    """Nesterov accelerated gradient.

    With ``step = lr * (clip(rescale_grad * grad) + wd * w)``:
    ``w += momentum * (momentum * mom - step) - step``, then
    ``mom = momentum * mom - lr * (clip(rescale_grad * grad) + wd * w)`` with the
    *updated* ``w`` (MXNet 1.9.1's in-place kernel does so; with ``wd=0`` it is
    the textbook ``mom = momentum * mom - step``). Plain SGD without momentum.
    """

    _float32_settings = True  # a fused operator in MXNet

    _master_copy_first = False

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index, weight):
        return None if self.momentum == 0.0 else self._state_zeros(weight)

    def update(self, index, weight, grad, state):
        self._check_arrays("NAG", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        w, g = weight._data, self._clip(self._rescaled(grad))
        if state is None:
            sgd_step(w, g, None, lr, wd, 0.0)
            return
        # MXNet's kernel writes the weight first and, updating in place, reads
        # the new weight back for the momentum's decay term: kept for parity
        nag_step(w, g, state._data, lr, wd, max(self.momentum, 0.0))


class Signum(Optimizer):
    """Signum: step by the sign of a momentum of gradients (signSGD without momentum).

    With momentum: ``mom = momentum * mom - (1 - momentum) * (wd * w + clip(rescale_grad * g))``
    and ``w = (1 - lr * wd_lh) * w + lr * sign(mom)``. Without momentum (signSGD):
    ``w = (1 - lr * wd) * w - lr * sign(g)``, the sign of the raw gradient, as MXNet.

    Args:
        momentum: the momentum factor.
        wd_lh: decoupled weight decay (Loshchilov and Hutter); needs momentum.
    """

    _float32_settings = True  # a fused operator in MXNet

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        if wd_lh and not momentum > 0:
            raise ValueError(
                f"Signum: wd_lh={wd_lh} needs momentum > 0 (MXNet's signSGD update, used "
                "without momentum, has no decoupled weight decay)"
            )
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        return None if self.momentum == 0.0 else self._state_zeros(weight)

    def update(self, index, weight, grad, state):
        self._check_arrays("Signum", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        w, xp = weight._data, weight.context.backend.xp
        if state is None:
            signsgd_step(xp, w, grad._data, lr, wd)
            return
        g = self._clip(self._rescaled(grad))
        signum_step(xp, w, g, state._data, lr, wd, max(self.momentum, 0.0), self.wd_lh or 0.0)


class LARS(SGD):
    """Layer-wise adaptive rate scaling: SGD whose rate is scaled per layer.

    For parameters not named ``*gamma``/``*beta``/``*bias``, the rate becomes
    ``lr * eta * |w| / (|rescale_grad * g| + wd * |w| + eps)`` (when both norms
    are positive). With ``momentum_correction`` the momentum is scaled by
    ``cur_lr / last_lr``, the scheduled rate of this call over the previous
    call's. Like MXNet, LARS takes up to ``aggregate_num`` weights per call
    (``MXNET_OPTIMIZER_AGGREGATION_SIZE``, default 4), and the updater groups
    them so, which decides what "previous call" means. Weight decay defaults
    to 0 for every name not ending in ``_weight``.
    """

    def __init__(
        self, momentum=0.0, lazy_update=True, eta=0.001, eps=0, momentum_correction=True, **kwargs
    ):
        super().__init__(momentum=momentum, lazy_update=lazy_update, **kwargs)
        self.momentum_correction = momentum_correction
        self.aggregate_num = int(os.environ.get("MXNET_OPTIMIZER_AGGREGATION_SIZE", "4"))
        self.eta = eta
        self.eps = eps
        self.skip = 0
        self.last_lr = None
        self.cur_lr = None

    @staticmethod
    def _decays_by_default(name):
        return name.endswith("_weight")

    def _get_lrs(self, indices):
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        self.last_lr = lr if self.cur_lr is None else self.cur_lr
        self.cur_lr = lr
        return super()._get_lrs(indices)

    def _layer_lr(self, index, weight, grad, lr, wd):
        name = self.idx2name.get(index, str(index))
        if name.endswith(("gamma", "beta", "bias")):
            return lr
        xp = weight.context.backend.xp
        w_norm = float(xp.sqrt(xp.sum(xp.square(weight._data.astype("float32")))))
        g_sum = float(xp.sum(xp.square(grad._data.astype("float32"))))
        g_norm = math.sqrt(float(self.rescale_grad) ** 2 * g_sum)
        return lars_rate(None, lr, w_norm, g_norm, wd, self.eta, self.eps)

    def update(self, index, weight, grad, state):
        """Update one weight, or each of lists of indices, weights, grads and states."""
        self._update_group(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        """``update`` through float32 master copies of float16 weights when enabled."""
        first = weight[0] if isinstance(index, (list, tuple)) else weight
        mixed = self.multi_precision and first.dtype == np.float16
        self._update_group(index, weight, grad, state, multi_precision=mixed)

    def _update_group(self, index, weight, grad, state, multi_precision):
        group = [index, weight, grad, state]
        if not isinstance(index, (list, tuple)):
            group = [[part] for part in group]
        for w, g in zip(group[1], group[2], strict=True):
            self._check_arrays("LARS", w, g)
        self._update_count(list(group[0]))
        lrs, wds = self._get_lrs(group[0]), self._get_wds(group[0])
        momentum = max(self.momentum, 0.0)
        if momentum and self.momentum_correction and self.last_lr != 0:
            momentum = momentum * (self.cur_lr / self.last_lr)
        for i, w, g, s, lr, wd in zip(*group, lrs, wds, strict=True):
            lr = self._layer_lr(i, w, g, lr, wd)
            mom, target = (s[0], s[1]) if multi_precision else (s, w)
            values = g._data.astype(np.float32) if multi_precision else g._data
            values = self._clip(values * float(self.rescale_grad))
            sgd_step(target._data, values, None if mom is None else mom._data, lr, wd, momentum)
            if multi_precision:
                w._data[...] = target._data.astype(w._data.dtype)


class DCASGD(Optimizer):
    """Delay-compensated asynchronous SGD.

    ``step = -lr * (g + wd * w + lamda * g * g * (w - w_prev))`` with
    ``g = clip(rescale_grad * grad)``; with momentum ``mom = momentum * mom + step``
    is the step. The state is ``(momentum or None, previous weight)``.
    (MXNet 1.9.1 fails on the momentum case; rebind does what it describes.)
    """

    def __init__(self, momentum=0.0, lamda=0.04, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous = {}
        self.lamda = lamda

    def create_state(self, index, weight):
        mom = None if self.momentum == 0.0 else self._state_zeros(weight)
        return (mom, weight.copy())

    def update(self, index, weight, grad, state):
        self._check_arrays("DCASGD", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        w, g = weight._data, self._clip(self._rescaled(grad))
        mom, previous = state
        if fusable(w, g, previous._data, None if mom is None else mom._data, same_shape=True):
            kind = w.dtype.type  # one CuPy kernel, the same operations
            xp = weight.context.backend.xp
            cupy_rule_kernels.dcasgd_step(
                xp,
                w,
                g,
                None if mom is None else mom._data,
                previous._data,
                kind(-lr),
                kind(wd),
                kind(self.lamda),
                kind(self.momentum),
            )
            return
        step = (g + wd * w + (self.lamda * g) * g * (w - previous._data)) * -lr
        if mom is not None:
            mom._data *= self.momentum
            mom._data += step
            step = mom._data
        previous._data[...] = w
        w += step


class SGLD(Optimizer):
    """Stochastic gradient Langevin dynamics: half an SGD step plus Gaussian noise.

    ``w += -lr / 2 * (g + wd * w) + N(0, sqrt(lr))``, the noise drawn from the
    weight's backend random stream (seeded by ``mx.random.seed``).
    """

    def update(self, index, weight, grad, state):
        self._check_arrays("SGLD", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        w, g = weight._data, self._clip(self._rescaled(grad))
        ctx = weight.context
        if fusable(w, g, same_shape=True):  # the noise, then one CuPy kernel
            noise = ctx.backend.normal(0.0, math.sqrt(lr), w.shape, w.dtype, ctx.device_id)
            kind = w.dtype.type
            cupy_rule_kernels.sgld_step(ctx.backend.xp, w, g, noise, kind(-lr / 2), kind(wd))
            return
        w += (g + wd * w) * (-lr / 2)
        w += ctx.backend.normal(0.0, math.sqrt(lr), w.shape, w.dtype, ctx.device_id)


register_rule(SGD, LAZY_WHEN_SAME_STYPE)
register_rule(ccSGD, LAZY_WHEN_SAME_STYPE)


@hookimpl
def rebind_add_optimizers(registry):
    for cls in (SGD, ccSGD, NAG, Signum, LARS, DCASGD, SGLD):
        registry.add(cls.__name__.lower(), cls)
