"""MXNet's ``_multi_lamb_update`` arithmetic for one tensor, shared by the op and LAMB.

MXNet's LAMB optimizer, given several weights at once (always, through the
updater: ``aggregate_num`` is 45), runs ``multi_lamb_update`` rather than the
two ``lamb_update_phase`` operators, and that kernel differs from them in
where it rounds: the step ``g`` is kept in a float32 scratch buffer, and the
norms of weight and step are square roots of float32 sums that the CPU
kernel accumulates one element at a time.
"""

import math

import numpy as np

from . import rules

__all__ = ["lamb_tensor_step", "sum_of_squares"]


def sum_of_squares(xp, array):
    """``multi_sum_sq`` of one array on the CPU: squares in its dtype, added in order as float32."""
    if array.size == 0:
        return np.float32(0)
    squares = xp.square(array).reshape(-1)
    return np.float32(xp.cumsum(squares, dtype=np.float32)[-1])


def lamb_tensor_step(xp, p, weight, given, grad, mean, var, lr, wd, t):
    """Update ``weight`` (the float32 master copy in the mp_ variant) in place.

    Args:
        p: the shared settings: beta1, beta2, epsilon, rescale_grad,
            clip_gradient, lower_bound, upper_bound (negative: off) and
            bias_correction.
        given: the weight as passed to the operator (float16 in the mp_
            variant), whose norm the trust ratio takes.
        lr, wd, t: this tensor's rate, decay and step count.
    """
    kind = mean.dtype.type
    bound = None if p.clip_gradient < 0 else p.clip_gradient
    scaled = rules.clipped_gradient(grad.astype(kind, copy=False), p.rescale_grad, bound)
    step = rules.lamb_direction(
        xp, weight, scaled, mean, var, p.beta1, p.beta2, p.epsilon, t, wd, p.bias_correction
    )
    step = step.astype(np.float32, copy=False)  # MXNet's float scratch buffer
    r1 = np.float32(math.sqrt(sum_of_squares(xp, given)))
    r2 = np.float32(math.sqrt(sum_of_squares(xp, step)))
    lower = None if p.lower_bound < 0 else p.lower_bound
    upper = None if p.upper_bound < 0 else p.upper_bound
    ratio = rules.lamb_ratio(r1, r2, lower, upper, np.float32)
    weight -= (rules.setting(kind, lr) * kind(ratio)) * step
