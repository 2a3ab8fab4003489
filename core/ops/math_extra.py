"""Element-wise special functions and the small unary ops around them:
``gamma``, ``gammaln``, ``erfinv``, ``hard_sigmoid`` and ``logical_not``.

The special functions themselves (gamma, log-gamma, digamma, erfinv) live in
``special.py``, written against ``xp`` in float64; the operators cast the
results back to the input dtype. Gradients use digamma.
"""

import attrs
import numpy as np

from .base import OpDef
from .params import param
from .special import HALF_SQRT_PI, _quiet, digamma, erfinv, gamma, lgamma

__all__ = ["OPS"]

# -- the operators ------------------------------------------------------------


def _unary_op(name, forward, derivative, doc, use_output=False):
    """An op computing ``forward`` in float64; the gradient is ``head * derivative``.

    ``derivative(xp, v)`` takes the input (or, with ``use_output``, the output as
    MXNet's ElemwiseGradUseOut does) in float64.
    """

    def run_forward(ctx, p, inputs, aux):
        x = inputs[0]
        with _quiet(ctx.xp):
            out = forward(ctx.xp, x).astype(x.dtype, copy=False)
        return [out], out if use_output else x

    def run_backward(ctx, p, saved, out_grads, need_grad):
        if not need_grad[0]:
            return [None]
        with _quiet(ctx.xp):
            local = derivative(ctx.xp, saved.astype("float64"))
        return [(out_grads[0] * local).astype(saved.dtype, copy=False)]

    return OpDef(name=name, forward=run_forward, backward=run_backward, doc=doc)


def _gamma_derivative(xp, x):
    return gamma(xp, x) * digamma(xp, x)


def _erfinv_derivative(xp, out):
    return HALF_SQRT_PI * xp.exp(out * out)


# -- hard_sigmoid -------------------------------------------------------------


@attrs.frozen
class HardSigmoidParams:
    alpha: float = param("float", 0.2)
    beta: float = param("float", 0.5)


def _coefficients(p, dtype):
    """alpha and beta as MXNet holds them: 32-bit floats, widened for float64 data."""
    wide = np.result_type(dtype, np.float32)
    return wide, wide.type(np.float32(p.alpha)), wide.type(np.float32(p.beta))


def _hard_sigmoid_forward(ctx, p, inputs, aux):
    x = inputs[0]
    wide, alpha, beta = _coefficients(p, x.dtype)
    linear = x.astype(wide, copy=False) * alpha + beta
    out = ctx.xp.clip(linear, 0, 1).astype(x.dtype, copy=False)
    return [out], x


def _hard_sigmoid_backward(ctx, p, x, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    # MXNet's backward tests the slope region in the data's own dtype
    alpha, beta = x.dtype.type(np.float32(p.alpha)), x.dtype.type(np.float32(p.beta))
    linear = x * alpha + beta  # the array first: a NumPy scalar must not convert a CuPy array
    inside = (linear > 0) & (linear < 1)
    return [ctx.xp.where(inside, out_grads[0] * alpha, x.dtype.type(0))]


HARD_SIGMOID = OpDef(
    name="hard_sigmoid",
    params=HardSigmoidParams,
    forward=_hard_sigmoid_forward,
    backward=_hard_sigmoid_backward,
    doc="max(0, min(1, alpha x + beta)) element-wise; the gradient is alpha inside (0, 1).",
)


# -- logical_not --------------------------------------------------------------


def _logical_not_forward(ctx, p, inputs, aux):
    x = inputs[0]
    return [(x == 0).astype(x.dtype)], None


def _zero_backward(ctx, p, saved, out_grads, need_grad):
    # piecewise constant: MXNet gives the input a zero gradient
    return [ctx.xp.zeros_like(out_grads[0]) if need_grad[0] else None]


LOGICAL_NOT = OpDef(
    name="logical_not",
    forward=_logical_not_forward,
    backward=_zero_backward,
    doc="1 where the input is zero, else 0, in the input's dtype.",
)

OPS = [
    _unary_op(
        "gamma", gamma, _gamma_derivative, "The gamma function, element-wise (float64 inside)."
    ),
    _unary_op("gammaln", lgamma, digamma, "log |Gamma(x)|, element-wise (float64 inside)."),
    _unary_op(
        "erfinv",
        erfinv,
        _erfinv_derivative,
        "The inverse error function, element-wise; +-inf at +-1, nan outside.",
        use_output=True,
    ),
    HARD_SIGMOID,
    LOGICAL_NOT,
]
