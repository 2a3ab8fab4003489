"""CuPy kernels of the optimizer rules beyond SGD and Adam (those are in ``cupy_kernels``).

Each is ``rebind.optimizer.rules``' rule of the same name as one fused kernel:
every array read and written once, no temporaries, the rule's float
operations in its order (the GPU may contract a product and a sum into a
fused multiply-add). Scalars arrive in the weight's dtype; powers such as
``1 - beta^t`` are computed by the caller, as the rule computes them (the
plugins' own rules, AdaGrad to Nadam, compute theirs in Python floats, which
NumPy then rounds to the weight's dtype: so do their callers here).
``sign`` is NumPy's (0 for +-0, NaN for NaN) and clipping keeps NaN, as
``ndarray.clip`` does. Parameter names avoid ``n`` and ``i`` (CuPy's).
Importing this module does not import CuPy.
"""

from .cupy_kernels import _kernel

__all__ = [
    "adadelta_step",
    "adagrad_step",
    "adamax_step",
    "adamw_step",
    "dcasgd_step",
    "group_adagrad_step",
    "ftml_step",
    "ftrl_step",
    "lamb_direction",
    "nadam_step",
    "nag_step",
    "rmsprop_step",
    "rmspropalex_step",
    "sgld_step",
    "signsgd_step",
    "signum_step",
]

_SIGN = "(({0}) > T(0) ? T(1) : (({0}) < T(0) ? T(-1) : (({0}) == T(0) ? T(0) : ({0}))))"
_CLIP = """
    if (clip && w == w) {
        w = w < -bound ? -bound : w;
        w = w > bound ? bound : w;
    }
"""


def nag_step(cupy, weight, grad, mom, lr, wd, momentum, old_weight_decays):
    """Nesterov momentum; the momentum's decay reads the old weight when asked (see the rule)."""
    body = """
    const T w0 = weight;
    const T step = lr * (grad + wd * w0);
    const T w1 = w0 + (momentum * (momentum * mom - step) - step);
    weight = w1;
    const T m = mom * momentum;
    mom = m - lr * (grad + wd * (old ? w0 : w1));
"""
    kernel = _kernel(
        cupy, "rebind_nag", "T grad, T lr, T wd, T momentum, bool old", "T weight, T mom", body
    )
    kernel(grad, lr, wd, momentum, old_weight_decays, weight, mom)


def signsgd_step(cupy, weight, grad, lr, wd):
    body = f"weight = weight * (T(1) - lr * wd) - lr * {_SIGN.format('grad')};"
    kernel = _kernel(cupy, "rebind_signsgd", "T grad, T lr, T wd", "T weight", body)
    kernel(grad, lr, wd, weight)


def signum_step(cupy, weight, grad, mom, lr, wd, momentum, wd_lh):
    body = f"""
    const T rest = T(1) - momentum;
    T m = mom * momentum;
    m = m - (rest * wd) * weight;
    m = m - rest * grad;
    mom = m;
    weight = weight * (T(1) - lr * wd_lh) + lr * {_SIGN.format("m")};
"""
    kernel = _kernel(
        cupy,
        "rebind_signum",
        "T grad, T lr, T wd, T momentum, T wd_lh",
        "T weight, T mom",
        body,
    )
    kernel(grad, lr, wd, momentum, wd_lh, weight, mom)


def rmsprop_step(cupy, weight, grad, acc, lr, gamma1, epsilon, bound):
    """RMSProp; ``bound`` None: no weight clipping."""
    body = (
        """
    const T total = ((T(1) - gamma1) * grad) * grad + gamma1 * acc;
    acc = total;
    T w = weight - lr * (grad / sqrt(total + epsilon));
"""
        + _CLIP
        + "    weight = w;\n"
    )
    kernel = _kernel(
        cupy,
        "rebind_rmsprop",
        "T grad, T lr, T gamma1, T epsilon, bool clip, T bound",
        "T weight, T acc",
        body,
    )
    clip = bound is not None
    kernel(grad, lr, gamma1, epsilon, clip, bound if clip else 0, weight, acc)


def rmspropalex_step(cupy, weight, grad, acc, mean, delta, lr, gamma1, gamma2, epsilon, bound):
    """Centered RMSProp; ``bound`` None: no weight clipping."""
    body = (
        """
    const T rest = T(1) - gamma1;
    const T total = (rest * grad) * grad + gamma1 * acc;
    const T average = rest * grad + gamma1 * mean;
    acc = total;
    mean = average;
    const T spread = sqrt((total - average * average) + epsilon);
    const T moved = gamma2 * delta - lr * (grad / spread);
    delta = moved;
    T w = weight + moved;
"""
        + _CLIP
        + "    weight = w;\n"
    )
    kernel = _kernel(
        cupy,
        "rebind_rmspropalex",
        "T grad, T lr, T gamma1, T gamma2, T epsilon, bool clip, T bound",
        "T weight, T acc, T mean, T delta",
        body,
    )
    clip = bound is not None
    kernel(grad, lr, gamma1, gamma2, epsilon, clip, bound if clip else 0, weight, acc, mean, delta)


def ftrl_step(cupy, weight, grad, z, acc, lr, lamda1, beta, wd):
    body = f"""
    const T squared = grad * grad;
    const T old = acc;
    const T moved = z + (grad - ((sqrt(old + squared) - sqrt(old)) * weight) / lr);
    z = moved;
    const T total = old + squared;
    acc = total;
    const T shrunk = ({_SIGN.format("moved")} * lamda1 - moved) / ((beta + sqrt(total)) / lr + wd);
    weight = shrunk * (abs(moved) > lamda1 ? T(1) : T(0));
"""
    kernel = _kernel(
        cupy, "rebind_ftrl", "T grad, T lr, T lamda1, T beta, T wd", "T weight, T z, T acc", body
    )
    kernel(grad, lr, lamda1, beta, wd, weight, z, acc)


def ftml_step(cupy, weight, grad, prev_d, var, z, lr, beta1, beta2, epsilon, first, second):
    """FTML; ``first`` and ``second`` are ``1 - beta1^t`` and ``1 - beta2^t``."""
    body = """
    const T v = var * beta2 + (T(1) - beta2) * (grad * grad);
    var = v;
    const T d_t = first / lr * (sqrt(v / second) + epsilon);
    T zz = z * beta1;
    zz = zz + (T(1) - beta1) * grad;
    zz = zz - (d_t - beta1 * prev_d) * weight;
    z = zz;
    prev_d = d_t;
    weight = -zz / d_t;
"""
    kernel = _kernel(
        cupy,
        "rebind_ftml",
        "T grad, T lr, T beta1, T beta2, T epsilon, T first, T second",
        "T weight, T prev_d, T var, T z",
        body,
    )
    kernel(grad, lr, beta1, beta2, epsilon, first, second, weight, prev_d, var, z)


def adamw_step(cupy, weight, grad, mean, var, lr, eta, wd, beta1, beta2, epsilon):
    body = """
    const T m = mean * beta1 + (T(1) - beta1) * grad;
    const T v = var * beta2 + ((T(1) - beta2) * grad) * grad;
    mean = m;
    var = v;
    weight = weight - eta * ((lr * m) / (sqrt(v) + epsilon) + wd * weight);
"""
    kernel = _kernel(
        cupy,
        "rebind_adamw",
        "T grad, T lr, T eta, T wd, T beta1, T beta2, T epsilon",
        "T weight, T mean, T var",
        body,
    )
    kernel(grad, lr, eta, wd, beta1, beta2, epsilon, weight, mean, var)


def lamb_direction(cupy, weight, grad, mean, var, beta1, beta2, epsilon, first, second, wd):
    """LAMB's phase one: moments in place, returns the step; ``first``/``second`` are
    ``1 - beta1^t``/``1 - beta2^t``, or None without bias correction."""
    body = """
    const T m = mean * beta1 + (T(1) - beta1) * grad;
    const T v = var * beta2 + ((T(1) - beta2) * grad) * grad;
    mean = m;
    var = v;
    const T s = corrected ? (m / first) / (sqrt(v / second) + epsilon) : m / (sqrt(v) + epsilon);
    step = s + wd * weight;
"""
    kernel = _kernel(
        cupy,
        "rebind_lamb_direction",
        "T grad, T weight, T beta1, T beta2, T epsilon, T first, T second, T wd, bool corrected",
        "T mean, T var, T step",
        body,
    )
    corrected = first is not None
    one = weight.dtype.type(1)
    step = cupy.empty_like(weight)
    kernel(
        grad,
        weight,
        beta1,
        beta2,
        epsilon,
        first if corrected else one,
        second if corrected else one,
        wd,
        corrected,
        mean,
        var,
        step,
    )
    return step


def adagrad_step(cupy, weight, grad, history, neg_lr, wd, eps):
    """AdaGrad: ``h += g^2`` and ``w += (g / sqrt(h + eps) + w * wd) * -lr``."""
    body = """
    const T h = history + grad * grad;
    history = h;
    weight = weight + (grad / sqrt(h + eps) + weight * wd) * neg_lr;
"""
    kernel = _kernel(
        cupy, "rebind_adagrad", "T grad, T neg_lr, T wd, T eps", "T weight, T history", body
    )
    kernel(grad, neg_lr, wd, eps, weight, history)


def adadelta_step(cupy, weight, grad, acc_g, acc_delta, rho, rest, eps, wd):
    """AdaDelta; ``rest`` is ``1 - rho`` as the plugin rounds it."""
    body = """
    const T ag = acc_g * rho + (rest * grad) * grad;
    acc_g = ag;
    const T delta = sqrt(acc_delta + eps) / sqrt(ag + eps) * grad;
    acc_delta = acc_delta * rho + (rest * delta) * delta;
    weight = weight - (delta + wd * weight);
"""
    kernel = _kernel(
        cupy,
        "rebind_adadelta",
        "T grad, T rho, T rest, T eps, T wd",
        "T weight, T acc_g, T acc_delta",
        body,
    )
    kernel(grad, rho, rest, eps, wd, weight, acc_g, acc_delta)


def adamax_step(cupy, weight, grad, mean, peak, lr, beta1, rest1, beta2):
    """AdaMax: ``m`` averaged, ``u = maximum(beta2 * u, |g|)`` (NumPy's), ``w -= lr * m / u``."""
    body = """
    const T m = mean * beta1 + rest1 * grad;
    mean = m;
    const T scaled = beta2 * peak;
    const T magnitude = abs(grad);
    const T u = (scaled > magnitude || scaled != scaled) ? scaled : magnitude;
    peak = u;
    weight = weight - (lr * m) / u;
"""
    kernel = _kernel(
        cupy,
        "rebind_adamax",
        "T grad, T lr, T beta1, T rest1, T beta2",
        "T weight, T mean, T peak",
        body,
    )
    kernel(grad, lr, beta1, rest1, beta2, weight, mean, peak)


def nadam_step(cupy, weight, grad, mean, var, scalars):
    """Nadam; ``scalars`` are the plugin's, each rounded to the weight's dtype:
    ``(lr, beta1, rest1, beta2, rest2, grad_scale, mean_scale, var_scale, now, next, eps)``
    where the scales are the denominators ``1 - schedule``, ``1 - schedule_next``,
    ``1 - beta2^t`` and ``now``/``next`` are ``1 - momentum_t`` and ``momentum_next``."""
    body = """
    const T m = mean * beta1 + rest1 * grad;
    const T v = var * beta2 + (rest2 * grad) * grad;
    mean = m;
    var = v;
    const T bar = now * (grad / grad_scale) + next_m * (m / mean_scale);
    weight = weight - (lr * bar) / (sqrt(v / var_scale) + eps);
"""
    kernel = _kernel(
        cupy,
        "rebind_nadam",
        "T grad, T lr, T beta1, T rest1, T beta2, T rest2, T grad_scale, T mean_scale, "
        "T var_scale, T now, T next_m, T eps",
        "T weight, T mean, T var",
        body,
    )
    kernel(grad, *scalars, weight, mean, var)


def dcasgd_step(cupy, weight, grad, mom, previous, neg_lr, wd, lamda, momentum):
    """DCASGD: the delay-compensated step, through the momentum when there is one (``mom``)."""
    step = "((grad + wd * w0) + ((lamda * grad) * grad) * (w0 - previous)) * neg_lr"
    if mom is None:
        body = f"const T w0 = weight; const T s = {step}; previous = w0; weight = w0 + s;"
        kernel = _kernel(
            cupy, "rebind_dcasgd", "T grad, T neg_lr, T wd, T lamda", "T weight, T previous", body
        )
        kernel(grad, neg_lr, wd, lamda, weight, previous)
        return
    body = (
        f"const T w0 = weight; const T m = mom * momentum + {step}; "
        "mom = m; previous = w0; weight = w0 + m;"
    )
    kernel = _kernel(
        cupy,
        "rebind_dcasgd_momentum",
        "T grad, T neg_lr, T wd, T lamda, T momentum",
        "T weight, T mom, T previous",
        body,
    )
    kernel(grad, neg_lr, wd, lamda, momentum, weight, mom, previous)


def sgld_step(cupy, weight, grad, noise, half_neg_lr, wd):
    """SGLD: ``w += (g + wd * w) * (-lr / 2)``, then ``w += noise`` (drawn by the caller)."""
    body = "weight = (weight + (grad + wd * weight) * half_neg_lr) + noise;"
    kernel = _kernel(cupy, "rebind_sgld", "T grad, T noise, T half_neg_lr, T wd", "T weight", body)
    kernel(grad, noise, half_neg_lr, wd, weight)


def group_adagrad_step(cupy, weight, grad, history, lr, eps):
    """GroupAdaGrad's weight step ``w -= lr * g / sqrt(h + eps)``, ``h`` one value per row."""
    body = "weight = weight - (lr * grad) / sqrt(history + eps);"
    kernel = _kernel(
        cupy, "rebind_group_adagrad", "T grad, T history, T lr, T eps", "T weight", body
    )
    kernel(grad, history, lr, eps, weight)
