"""Accumulating optimizers: AdaGrad, GroupAdaGrad, RMSProp, AdaDelta, Ftrl.

Registered under MXNet's lower-cased class names; RMSProp and Ftrl use the
update rules of ``rebind.optimizer.rules``, shared with ``rmsprop_update``,
``rmspropalex_update`` and ``ftrl_update``; the arithmetic follows MXNet 1.9.1
operation by operation. Their states are float32 whatever the
weight's dtype, as in MXNet. RMSProp adds the weight decay to the gradient
before clipping; AdaGrad and AdaDelta apply it to the weight in the step;
Ftrl puts it in the denominator of its closed-form weight; GroupAdaGrad
refuses it.
"""

from rebind.backends import cupy_rule_kernels
from rebind.backends.cupy_kernels import fusable
from rebind.hookspecs import hookimpl
from rebind.optimizer import Optimizer
from rebind.optimizer.rules import ftrl_step, rmsprop_step, rmspropalex_step
from rebind.optimizer.sparse_updates import (
    ALWAYS_LAZY,
    LAZY_FOR_ROW_SPARSE_WEIGHT,
    register_rule,
)

__all__ = ["AdaGrad", "GroupAdaGrad", "RMSProp", "AdaDelta", "Ftrl"]

FLOAT32 = "float32"


class AdaGrad(Optimizer):
    """AdaGrad: per-coordinate rates from the sum of squared gradients.

    ``g = clip(rescale_grad * grad)``, ``h += g^2`` and
    ``w += (g / sqrt(h + eps) + wd * w) * -lr``.

    Args:
        eps: added to the history under the square root.
    """

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return self._state_zeros(weight, dtype=FLOAT32, stype=_stype(weight))

    def update(self, index, weight, grad, state):
        self._check_arrays("AdaGrad", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        w, g, history = weight._data, self._clip(self._rescaled(grad)), state._data
        xp = weight.context.backend.xp
        if fusable(w, g, history, same_shape=True):  # one CuPy kernel, the same operations
            kind = w.dtype.type
            eps = kind(self.float_stable_eps)
            cupy_rule_kernels.adagrad_step(xp, w, g, history, kind(-lr), kind(wd), eps)
            return
        history += xp.square(g)
        ratio = g / xp.sqrt(history + self.float_stable_eps)
        w += (ratio + w * wd) * -lr


class GroupAdaGrad(Optimizer):
    """AdaGrad with one rate per row of a 2-D weight (MXNet's contrib optimizer).

    ``h += mean(g^2, axis=1)`` (a column) and ``w -= lr * g / sqrt(h + eps)``.
    Weight decay is not supported.
    """

    _float32_settings = True  # a fused operator in MXNet

    def __init__(self, eps=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        if len(weight.shape) != 2:
            raise ValueError(
                f"GroupAdaGrad: weight {index!r} must be 2-D (one rate per row), "
                f"got shape {weight.shape}"
            )
        shape = (weight.shape[0], 1)
        return self._state_zeros(weight, shape=shape, dtype=FLOAT32, stype=_stype(weight))

    def update(self, index, weight, grad, state):
        self._check_arrays("GroupAdaGrad", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        if wd != 0:
            raise ValueError(
                f"GroupAdaGrad: weight decay is not supported, got wd={wd} for index {index!r}"
            )
        g, history = self._clip(self._rescaled(grad)), state._data
        xp = weight.context.backend.xp
        history += xp.mean(xp.square(g), axis=1, keepdims=True)
        w = weight._data
        if fusable(w, g, history):  # the step in one CuPy kernel, history broadcast
            kind = w.dtype.type
            eps = kind(self.float_stable_eps)
            cupy_rule_kernels.group_adagrad_step(xp, w, g, history, kind(lr), eps)
            return
        weight._data -= lr * g / xp.sqrt(history + self.float_stable_eps)


class RMSProp(Optimizer):
    """RMSProp: Tieleman and Hinton's, or Graves's ``centered`` variant.

    With ``g = clip(rescale_grad * grad + wd * w)``: ``n = (1 - gamma1) * g^2 + gamma1 * n``
    and ``w -= lr * g / sqrt(n + epsilon)``. Centered, with also
    ``m = (1 - gamma1) * g + gamma1 * m``:
    ``delta = gamma2 * delta - lr * g / sqrt(n - m^2 + epsilon)`` and ``w += delta``.
    ``clip_weights`` then clips the weight into ``[-clip_weights, clip_weights]``.
    The state is ``(n,)``, or ``(n, m, delta)`` when centered.
    """

    _float32_settings = True  # a fused operator in MXNet

    def __init__(
        self,
        learning_rate=0.001,
        gamma1=0.9,
        gamma2=0.9,
        epsilon=1e-8,
        centered=False,
        clip_weights=None,
        **kwargs,
    ):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        count = 3 if self.centered else 1
        return tuple(self._state_zeros(weight, dtype=FLOAT32) for _ in range(count))

    def update(self, index, weight, grad, state):
        self._check_arrays("RMSProp", weight, grad)
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        w, xp = weight._data, weight.context.backend.xp
        g = self._clip(self._rescaled(grad) + self._typed(weight, wd)[0] * w)
        bound = self.clip_weights or None
        if not self.centered:
            rmsprop_step(xp, w, g, state[0]._data, lr, self.gamma1, self.epsilon, bound)
            return
        n, mean, delta = (s._data for s in state)
        rmspropalex_step(
            xp, w, g, n, mean, delta, lr, self.gamma1, self.gamma2, self.epsilon, bound
        )


class AdaDelta(Optimizer):
    """AdaDelta: steps scaled by the ratio of accumulated updates to gradients.

    ``g = clip(rescale_grad * grad)``, ``acc_g = rho * acc_g + (1 - rho) * g^2``,
    ``delta = sqrt(acc_delta + eps) / sqrt(acc_g + eps) * g``,
    ``acc_delta = rho * acc_delta + (1 - rho) * delta^2`` and
    ``w -= delta + wd * w``. The learning rate is not used (as in MXNet), and
    the caller's gradient array is left as it is (MXNet rescales it in place).
    """

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return (self._state_zeros(weight, dtype=FLOAT32), self._state_zeros(weight, dtype=FLOAT32))

    def update(self, index, weight, grad, state):
        self._check_arrays("AdaDelta", weight, grad)
        wd = self._get_wd(index)
        self._update_count(index)
        w, g, xp = weight._data, self._clip(self._rescaled(grad)), weight.context.backend.xp
        acc_g, acc_delta = state[0]._data, state[1]._data
        if fusable(w, g, acc_g, acc_delta, same_shape=True):  # one CuPy kernel
            kind = w.dtype.type
            rho, rest, eps = kind(self.rho), kind(1.0 - self.rho), kind(self.epsilon)
            cupy_rule_kernels.adadelta_step(xp, w, g, acc_g, acc_delta, rho, rest, eps, kind(wd))
            return
        acc_g *= self.rho
        acc_g += (1.0 - self.rho) * g * g
        delta = xp.sqrt(acc_delta + self.epsilon) / xp.sqrt(acc_g + self.epsilon) * g
        acc_delta *= self.rho
        acc_delta += (1.0 - self.rho) * delta * delta
        w -= delta + wd * w


class Ftrl(Optimizer):
    """Follow the regularized leader (McMahan et al.), with L1 ``lamda1`` and L2 ``wd``.

    With ``g = clip(rescale_grad * grad)``:
    ``z += g - (sqrt(n + g^2) - sqrt(n)) * w / lr``, ``n += g^2`` and
    ``w = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd)`` where
    ``|z| > lamda1``, else 0. The state is ``(z, n)``.
    """

    _float32_settings = True  # a fused operator in MXNet

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        # MXNet sets the rate after the base constructor, so a scheduler's
        # base_lr is not overwritten by it
        super().__init__(**kwargs)
        self.lamda1 = lamda1
        self.beta = beta
        self.lr = learning_rate

    def create_state(self, index, weight):
        stype = _stype(weight)
        return tuple(self._state_zeros(weight, dtype=FLOAT32, stype=stype) for _ in "zn")

    def update(self, index, weight, grad, state):
        self._check_arrays("Ftrl", weight, grad)
        self._update_count(index)
        wd, lr = self._get_wd(index), self._get_lr(index)
        w, g, xp = weight._data, self._clip(self._rescaled(grad)), weight.context.backend.xp
        z, n = state[0]._data, state[1]._data
        ftrl_step(xp, w, g, z, n, lr, self.lamda1, self.beta, wd)


def _stype(weight):
    """The weight's storage type: MXNet makes these optimizers' states of the same one."""
    return getattr(weight, "stype", "default")


def _adagrad_refusal(optimizer, index):
    """MXNet's sparse AdaGrad has no weight decay: its dispatch finds no kernel."""
    wd = optimizer._get_wd(index)
    if wd != 0:
        return (
            "Operator not implemented: operator = _sparse_adagrad_update (AdaGrad with a "
            f"row_sparse gradient has no weight decay, got wd={wd} for index {index!r}); "
            "set wd=0 or use a dense gradient"
        )
    return None


register_rule(AdaGrad, ALWAYS_LAZY, refuse=_adagrad_refusal)
register_rule(GroupAdaGrad, ALWAYS_LAZY)
register_rule(Ftrl, LAZY_FOR_ROW_SPARSE_WEIGHT)


@hookimpl
def rebind_add_optimizers(registry):
    for cls in (AdaGrad, GroupAdaGrad, RMSProp, AdaDelta, Ftrl):
        registry.add(cls.__name__.lower(), cls)
