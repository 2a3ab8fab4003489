"""Update rules shared by the optimizers (plugins/optimizers_*.py) and the update ops.

Each rule updates a weight and its states in place, on backend arrays, with
the float operations in one fixed order, so ``mx.optimizer.SGD`` and
``mx.nd.sgd_mom_update`` cannot drift apart. Callers decide what MXNet's
callers decide: the rescaled and clipped gradient (``clipped_gradient``,
``decayed_gradient``), the rate, whether clipping is on (``bound`` None when
off; the ops clip for any ``clip_gradient >= 0``, the optimizers for > 0).
Rules cast their scalars to the weight's dtype where MXNet's fused kernels
compute in it (``1 - beta2`` is a float32 subtraction for float32 weights),
after rounding each setting to float32 as the kernels' parameter structs
store them (``setting``): a float64 weight is updated with float32 rates.
"""

import math
import threading

import numpy as np

from rebind.backends import (  # their kernels import CuPy only when called
    cupy_kernels,
    cupy_multi_kernels,
    cupy_rule_kernels,
)

__all__ = [
    "setting",
    "clipped",
    "clipped_gradient",
    "decayed_gradient",
    "sgd_step",
    "sgd_steps",
    "nag_step",
    "signsgd_step",
    "signum_step",
    "moving_average",
    "moving_square_average",
    "adam_step",
    "adamw_step",
    "ftml_step",
    "lamb_direction",
    "lamb_ratio",
    "lamb_apply",
    "lars_rate",
    "rmsprop_step",
    "rmspropalex_step",
    "ftrl_step",
]

# elements per piece of a parameter: the passes of an SGD step then run on data in
# the cache (1 MiB of each of weight, gradient, momentum and scratch for float32)
# instead of streaming a large array through memory once per pass. Measured on the
# benchmarks' shapes (2 cores, 1 MiB L2 each, 32 MiB L3), 2**18 beat 2**16 by 10% on
# the LSTM LM's and the 784-512-512 MLP's weights, and by 5 µs on the small MLP's
_PIECE = 1 << 18


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def setting(kind, value):
    """A scalar setting as MXNet's fused kernels use it: its C ``float`` field cast to ``kind``.

    MXNet's update operators keep lr, wd, momentum, betas, epsilon, ... in
    float fields, so a float64 (or float16) weight sees them rounded to
    float32 first; for float32 weights that rounding is the cast itself.
    """
    if kind is np.float32:
        return kind(value)
    value = float(value)
    if abs(value) > _FLOAT32_MAX and math.isfinite(value):
        value = math.copysign(math.inf, value)  # what a float field holds for it
    return kind(np.float32(value))


def clipped(values, bound):
    """``values`` clipped into ``[-bound, bound]`` (a new array); ``values`` if bound is None."""
    if bound is None:
        return values
    bound = setting(values.dtype.type, bound)
    return values.clip(-bound, bound)


def clipped_gradient(grad, rescale, bound):
    """``clip(rescale * grad)`` as a new array (MXNet's gradient before the decay is added)."""
    return clipped(grad * setting(grad.dtype.type, rescale), bound)


def decayed_gradient(weight, grad, rescale, wd, bound):
    """``clip(rescale * grad + wd * weight)``: Adam's, RMSProp's and FTML's gradient."""
    kind = grad.dtype.type
    return clipped(grad * setting(kind, rescale) + weight * setting(kind, wd), bound)


# -- SGD family ---------------------------------------------------------------------


def sgd_step(weight, grad, mom, lr, wd, momentum, rescale=1.0):
    """One SGD step, in place, in the order of MXNet's kernels.

    ``mom = momentum * mom - (lr * wd) * weight - (lr * rescale) * grad``, then
    ``weight += mom``; without momentum (``mom`` None) ``weight = (1 - lr * wd)
    * weight - (lr * rescale) * grad``. MXNet folds ``rescale_grad`` into the
    rate that way; with clipping on, ``grad`` arrives rescaled and clipped and
    ``rescale`` is 1. Without weight decay the decay pass is skipped:
    subtracting ``0 * w`` changes nothing for finite weights.
    """
    kind = weight.dtype.type
    lr, momentum = setting(kind, lr), setting(kind, momentum)
    decay, rate = lr * setting(kind, wd), lr * setting(kind, rescale)
    if _fits_pieces(weight, grad, mom):
        _numpy_sgd_step(weight, grad, mom, decay, rate, momentum)
        return
    if cupy_kernels.fusable(weight, grad, mom, same_shape=True):
        cupy_kernels.sgd_step(_cupy(), weight, grad, mom, decay, rate, momentum)
        return
    if mom is None:
        if decay:
            weight *= kind(1) - decay
        weight -= rate * grad
        return
    mom *= momentum
    if decay:
        mom -= decay * weight
    mom -= rate * grad
    weight += mom


def sgd_steps(weights, grads, moms, lrs, wds, momentum, rescale=1.0):
    """``sgd_step`` for several weights (backend arrays), with the per-call work done once.

    The same float operations per weight as ``sgd_step``, so the same bits. A
    NumPy weight that fits one piece is updated through a scratch view of its
    shape, without the piece loop. CuPy weights sharing a dtype and whether
    they have a momentum are updated in one launch, each with its own rates
    (``cupy_multi_kernels``). Others go through ``sgd_step``. The float32 (or
    float64) rates are made once per distinct ``(dtype, lr, wd)``.
    """
    rates = {}  # (dtype, lr, wd) -> (decay, rate, momentum) in that dtype
    scratch = None
    groups = {}  # CuPy weights: (dtype, device, decay, rate, has momentum) -> their arrays
    for weight, grad, mom, lr, wd in zip(weights, grads, moms, lrs, wds, strict=True):
        numpy_piece = weight.size <= _PIECE and _fits_pieces(weight, grad, mom)
        if not numpy_piece and not _batched(weight, grad, mom):
            sgd_step(weight, grad, mom, lr, wd, momentum, rescale)
            continue
        dtype = weight.dtype
        key = (dtype, lr, wd)
        scalars = rates.get(key)
        if scalars is None:
            kind = dtype.type
            lr_ = setting(kind, lr)
            scalars = rates[key] = (
                lr_ * setting(kind, wd),
                lr_ * setting(kind, rescale),
                setting(kind, momentum),
            )
        if not numpy_piece:  # one launch per dtype and device, each weight its rates
            group = (dtype, _device_of(weight), mom is None)
            groups.setdefault(group, []).append((weight, grad, mom, *scalars[:2]))
            continue
        if scratch is None or scratch.dtype != dtype:
            scratch = _scratch(dtype, _PIECE)
        product = scratch[: weight.size].reshape(weight.shape)
        _sgd_piece(weight, grad, mom, product, *scalars)
    for (dtype, _, plain), members in groups.items():
        weights_, grads_, moms_, decays, rates_ = (list(c) for c in zip(*members, strict=True))
        momentum_ = dtype.type(momentum)
        if len(members) == 1:
            cupy_kernels.sgd_step(_cupy(), *members[0], momentum_)
        else:
            moms_ = None if plain else moms_
            cupy_multi_kernels.sgd_steps(
                _cupy(), weights_, grads_, moms_, decays, rates_, momentum_
            )


def _batched(weight, grad, mom):
    """Whether a weight's step may join a multi-weight CuPy launch."""
    return cupy_kernels.fusable(weight, grad, mom, same_shape=True, contiguous=True)


def _device_of(array):
    data = array.data
    return getattr(data, "device_id", None)


def _cupy():
    import cupy

    return cupy


def _fits_pieces(weight, grad, mom):
    """Whether the arrays are NumPy arrays of one dtype, contiguous, so views of pieces work."""
    ndarray, dtype = np.ndarray, weight.dtype
    if type(weight) is not ndarray or type(grad) is not ndarray or grad.dtype != dtype:
        return False
    if not (weight.flags.c_contiguous and grad.flags.c_contiguous):
        return False
    if mom is None:
        return True
    return type(mom) is ndarray and mom.dtype == dtype and mom.flags.c_contiguous


# one scratch piece per thread and dtype, reused by every step (kvstores update from threads)
_SCRATCH = threading.local()


def _scratch(dtype, size):
    pieces = _SCRATCH.__dict__.setdefault("pieces", {})
    buffer = pieces.get(dtype)
    if buffer is None:
        buffer = pieces[dtype] = np.empty(_PIECE, dtype)
    return buffer[:size]


def _numpy_sgd_step(weight, grad, mom, decay, rate, momentum):
    """``sgd_step`` on NumPy arrays: piece by piece, products into one scratch buffer.

    The same float operations as the whole-array form, so the same results,
    without a temporary array per product.
    """
    flat_w, flat_g = weight.reshape(-1), grad.reshape(-1)
    flat_m = None if mom is None else mom.reshape(-1)
    scratch = _scratch(weight.dtype, min(weight.size, _PIECE))
    for start in range(0, weight.size, _PIECE):
        piece = slice(start, start + _PIECE)
        w, m = flat_w[piece], None if flat_m is None else flat_m[piece]
        _sgd_piece(w, flat_g[piece], m, scratch[: w.size], decay, rate, momentum)


def _sgd_piece(w, g, m, product, decay, rate, momentum):
    """One SGD step on NumPy arrays of one shape, products written into ``product``."""
    if m is None:
        if decay:
            w *= w.dtype.type(1) - decay
        w -= np.multiply(g, rate, out=product)
        return
    m *= momentum
    if decay:
        m -= np.multiply(w, decay, out=product)
    m -= np.multiply(g, rate, out=product)
    w += m


def nag_step(weight, grad, mom, lr, wd, momentum, decay_weight=None):
    """Nesterov momentum, in place; ``grad`` rescaled and clipped.

    With ``step = lr * (grad + wd * w)``: ``w += momentum * (momentum * mom -
    step) - step``, then ``mom = momentum * mom - lr * (grad + wd * w')``. MXNet's
    kernel reads ``w'`` back from its output: the updated weight when the
    output is the weight (the optimizer's ``out=weight``), the old one
    otherwise; ``decay_weight`` gives the old weight for the latter.
    """
    kind = weight.dtype.type
    lr, wd, momentum = (setting(kind, v) for v in (lr, wd, momentum))
    if cupy_kernels.fusable(weight, grad, mom, decay_weight, same_shape=True):
        old = decay_weight is not None  # the old weight: the one the kernel reads first
        cupy_rule_kernels.nag_step(_cupy(), weight, grad, mom, lr, wd, momentum, old)
        return
    step = lr * (grad + wd * weight)
    weight += momentum * (momentum * mom - step) - step
    mom *= momentum
    mom -= lr * (grad + wd * (weight if decay_weight is None else decay_weight))


def signsgd_step(xp, weight, grad, lr, wd):
    """signSGD: ``w = (1 - lr * wd) * w - lr * sign(grad)`` (the raw gradient, as MXNet)."""
    kind = weight.dtype.type
    lr, wd = setting(kind, lr), setting(kind, wd)
    if cupy_kernels.fusable(weight, grad, same_shape=True):
        cupy_rule_kernels.signsgd_step(xp, weight, grad, lr, wd)
        return
    weight *= kind(1) - lr * wd
    weight -= lr * xp.sign(grad)


def signum_step(xp, weight, grad, mom, lr, wd, momentum, wd_lh):
    """Signum, in place; ``grad`` rescaled and clipped.

    ``mom = momentum * mom - (1 - momentum) * (wd * w + grad)`` and
    ``w = (1 - lr * wd_lh) * w + lr * sign(mom)``.
    """
    kind = weight.dtype.type
    one = kind(1)
    lr, wd, momentum, wd_lh = (setting(kind, v) for v in (lr, wd, momentum, wd_lh))
    if cupy_kernels.fusable(weight, grad, mom, same_shape=True):
        cupy_rule_kernels.signum_step(xp, weight, grad, mom, lr, wd, momentum, wd_lh)
        return
    mom *= momentum
    mom -= ((one - momentum) * wd) * weight
    mom -= (one - momentum) * grad
    weight *= one - lr * wd_lh
    weight += lr * xp.sign(mom)


# -- Adam family --------------------------------------------------------------------


def moving_average(average, value, beta, one):
    """``average = beta * average + (1 - beta) * value``, in place (``beta``, ``one`` typed)."""
    average *= beta
    average += (one - beta) * value


def moving_square_average(average, value, beta, one):
    """``average = beta * average + (1 - beta) * value * value``, in place."""
    average *= beta
    average += (one - beta) * value * value


def adam_step(xp, weight, grad, mean, var, lr, beta1, beta2, epsilon):
    """Adam, in place; ``grad`` decayed and clipped, ``lr`` with any bias correction folded in.

    ``w -= lr * m / (sqrt(v) + epsilon)`` after the moment updates.
    """
    kind = weight.dtype.type
    one = kind(1)
    lr, beta1, beta2, epsilon = (setting(kind, v) for v in (lr, beta1, beta2, epsilon))
    if cupy_kernels.fusable(weight, grad, mean, var, same_shape=True):
        cupy_kernels.adam_step(xp, weight, grad, mean, var, lr, beta1, beta2, epsilon)
        return
    moving_average(mean, grad, beta1, one)
    moving_square_average(var, grad, beta2, one)
    weight -= lr * mean / (xp.sqrt(var) + epsilon)


def adamw_step(xp, weight, grad, mean, var, lr, eta, wd, beta1, beta2, epsilon):
    """AdamW (decoupled decay), in place; ``grad`` rescaled and clipped.

    ``w -= eta * (lr * m / (sqrt(v) + epsilon) + wd * w)`` after the moment updates.
    """
    kind = weight.dtype.type
    one = kind(1)
    beta1, beta2, epsilon = (setting(kind, v) for v in (beta1, beta2, epsilon))
    lr, eta, wd = (setting(kind, v) for v in (lr, eta, wd))
    if cupy_kernels.fusable(weight, grad, mean, var, same_shape=True):
        cupy_rule_kernels.adamw_step(
            xp, weight, grad, mean, var, lr, eta, wd, beta1, beta2, epsilon
        )
        return
    moving_average(mean, grad, beta1, one)
    moving_square_average(var, grad, beta2, one)
    weight -= eta * (lr * mean / (xp.sqrt(var) + epsilon) + wd * weight)


def ftml_step(xp, weight, grad, prev_d, var, z, lr, beta1, beta2, epsilon, t):
    """Follow the moving leader, in place; ``grad`` decayed and clipped.

    ``v = beta2 * v + (1 - beta2) * g^2``,
    ``d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon)``,
    ``z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * w``, ``d = d_t``, ``w = -z / d_t``.
    """
    kind = weight.dtype.type
    one, epsilon, t = kind(1), kind(epsilon), kind(t)  # epsilon: a C double in MXNet
    beta1, beta2, lr = (setting(kind, v) for v in (beta1, beta2, lr))
    if cupy_kernels.fusable(weight, grad, prev_d, var, z, same_shape=True):
        first, second = one - beta1**t, one - beta2**t
        cupy_rule_kernels.ftml_step(
            xp, weight, grad, prev_d, var, z, lr, beta1, beta2, epsilon, first, second
        )
        return
    var *= beta2
    var += (one - beta2) * (grad * grad)
    d_t = (one - beta1**t) / lr * (xp.sqrt(var / (one - beta2**t)) + epsilon)
    z *= beta1
    z += (one - beta1) * grad
    z -= (d_t - beta1 * prev_d) * weight
    prev_d[...] = d_t
    weight[...] = -z / d_t


def lamb_direction(xp, weight, grad, mean, var, beta1, beta2, epsilon, t, wd, bias_correction):
    """LAMB's phase one: moments in place; returns the step ``r = m / (sqrt(v) + eps) + wd * w``.

    ``grad`` is rescaled and clipped; with ``bias_correction`` the moments
    are divided by ``1 - beta^t`` first. ``weight`` is only read.
    """
    kind = mean.dtype.type
    one, t, wd = kind(1), kind(t), setting(kind, wd)
    beta1, beta2, epsilon = (setting(kind, v) for v in (beta1, beta2, epsilon))
    if cupy_kernels.fusable(weight, grad, mean, var, same_shape=True):
        first, second = (one - beta1**t, one - beta2**t) if bias_correction else (None, None)
        return cupy_rule_kernels.lamb_direction(
            xp, weight, grad, mean, var, beta1, beta2, epsilon, first, second, wd
        )
    moving_average(mean, grad, beta1, one)
    moving_square_average(var, grad, beta2, one)
    if bias_correction:
        mean_hat = mean / (one - beta1**t)
        var_hat = var / (one - beta2**t)
        step = mean_hat / (xp.sqrt(var_hat) + epsilon)
    else:
        step = mean / (xp.sqrt(var) + epsilon)
    step += wd * weight
    return step


def lamb_ratio(r1, r2, lower_bound, upper_bound, kind):
    """LAMB's trust ratio ``r1 / r2`` from the norms of weight and step, as a ``kind`` scalar.

    ``r1`` is bounded by ``lower_bound``/``upper_bound`` when given (not None);
    the ratio is 1 when either norm is 0.
    """
    r1, r2 = kind(r1), kind(r2)
    if lower_bound is not None:
        r1 = max(r1, setting(kind, lower_bound))
    if upper_bound is not None:
        r1 = min(r1, setting(kind, upper_bound))
    return kind(1) if r1 == 0 or r2 == 0 else r1 / r2


def lamb_apply(weight, step, lr, ratio):
    """LAMB's phase two, in place: ``w -= (lr * ratio) * step``."""
    weight -= (setting(weight.dtype.type, lr) * ratio) * step


def lars_rate(xp, lr, w_norm, g_norm, wd, eta, eps):
    """LARS's layer rate ``lr * eta * |w| / (|g| + wd * |w| + eps)``; ``lr`` where a norm is 0.

    Works on Python scalars (the optimizer) and on arrays of norms (multi_lars).
    """
    if xp is None:
        if w_norm > 0.0 and g_norm > 0.0:
            return lr * (eta * w_norm / (g_norm + wd * w_norm + eps))
        return lr
    valid = (w_norm > 0) & (g_norm > 0)
    scaled = lr * (eta * w_norm / (g_norm + wd * w_norm + eps))
    return xp.where(valid, scaled, lr)


# -- accumulating rules -------------------------------------------------------------


def rmsprop_step(xp, weight, grad, n, lr, gamma1, epsilon, clip_weights):
    """RMSProp (Tieleman and Hinton), in place; ``grad`` decayed and clipped.

    ``n = (1 - gamma1) * g^2 + gamma1 * n`` and ``w -= lr * g / sqrt(n + epsilon)``,
    then ``w`` clipped into ``[-clip_weights, clip_weights]`` unless that is None.
    """
    kind = weight.dtype.type
    one = kind(1)
    lr, gamma1, epsilon = (setting(kind, v) for v in (lr, gamma1, epsilon))
    if cupy_kernels.fusable(weight, grad, n, same_shape=True):
        bound = None if clip_weights is None else setting(kind, clip_weights)
        cupy_rule_kernels.rmsprop_step(xp, weight, grad, n, lr, gamma1, epsilon, bound)
        return
    n[...] = (one - gamma1) * grad * grad + gamma1 * n
    weight -= lr * (grad / xp.sqrt(n + epsilon))
    _clip_weight(weight, clip_weights)


def rmspropalex_step(xp, weight, grad, n, mean, delta, lr, gamma1, gamma2, epsilon, clip_weights):
    """Centered RMSProp (Graves), in place; ``grad`` decayed and clipped.

    ``n`` and ``mean`` average ``g^2`` and ``g`` with ``gamma1``;
    ``delta = gamma2 * delta - lr * g / sqrt(n - mean^2 + epsilon)`` and ``w += delta``.
    """
    kind = weight.dtype.type
    one = kind(1)
    lr, gamma1, gamma2, epsilon = (setting(kind, v) for v in (lr, gamma1, gamma2, epsilon))
    if cupy_kernels.fusable(weight, grad, n, mean, delta, same_shape=True):
        bound = None if clip_weights is None else setting(kind, clip_weights)
        cupy_rule_kernels.rmspropalex_step(
            xp, weight, grad, n, mean, delta, lr, gamma1, gamma2, epsilon, bound
        )
        return
    n[...] = (one - gamma1) * grad * grad + gamma1 * n
    mean[...] = (one - gamma1) * grad + gamma1 * mean
    spread = xp.sqrt(n - mean * mean + epsilon)
    delta[...] = gamma2 * delta - lr * (grad / spread)
    weight += delta
    _clip_weight(weight, clip_weights)


def _clip_weight(weight, bound):
    if bound is not None:
        bound = setting(weight.dtype.type, bound)
        weight[...] = weight.clip(-bound, bound)


def ftrl_step(xp, weight, grad, z, n, lr, lamda1, beta, wd):
    """Follow the regularized leader, in place; ``grad`` rescaled and clipped.

    ``z += g - (sqrt(n + g^2) - sqrt(n)) * w / lr``, ``n += g^2`` and
    ``w = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd)`` where
    ``|z| > lamda1``, else 0.
    """
    kind = weight.dtype.type
    lr, wd, lamda1, beta = (setting(kind, v) for v in (lr, wd, lamda1, beta))
    if cupy_kernels.fusable(weight, grad, z, n, same_shape=True):
        cupy_rule_kernels.ftrl_step(xp, weight, grad, z, n, lr, lamda1, beta, wd)
        return
    squared = xp.square(grad)
    z += grad - (xp.sqrt(n + squared) - xp.sqrt(n)) * weight / lr
    n += squared
    shrunk = (xp.sign(z) * lamda1 - z) / ((beta + xp.sqrt(n)) / lr + wd)
    weight[...] = shrunk * (xp.abs(z) > lamda1)
