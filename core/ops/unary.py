"""Element-wise unary math (exp, log, sqrt, erf, rounding, trigonometry, ...) and
the identity-like ops ``_copy``, ``BlockGrad`` and ``Cast``.

Every math op is one row of ``_MATH``: a forward ``f(xp, x)`` and the local
derivative ``d(xp, x, out)`` (None for piecewise-constant functions, whose
gradient MXNet defines as zero). Results keep the input dtype, as in MXNet.
Scalar-argument ops live in ``scalar.py``, two-input ops in ``binary.py``.
"""

import math

import attrs

from .base import OpDef
from .params import param
from .special import erf

__all__ = ["OPS", "round_half_away", "round_half_down"]

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def round_half_away(xp, x):
    """Round to the nearest integer, halves away from zero (C ``round``, not NumPy's)."""
    whole = xp.trunc(x)
    # x - trunc(x) is exact in floating point, so the half test is exact too
    return whole + xp.where(xp.abs(x - whole) >= 0.5, xp.sign(x), 0).astype(x.dtype)


def round_half_down(xp, x):
    """MXNet's rint: the nearer of floor and ceil, the floor on a tie (-2.5 -> -3, 2.5 -> 2)."""
    if x.dtype.kind != "f":
        return x
    below, above = xp.floor(x), xp.ceil(x)
    # NaN and +-inf fail the test and keep ceil's value, which is themselves
    return xp.where(x - below <= above - x, below, above)


def _sign(xp, x):
    """-1, 0 or 1; MXNet's sign of NaN is 0 (its kernel tests < 0 and > 0 only)."""
    return xp.where(x != x, 0, xp.sign(x)).astype(x.dtype, copy=False)


def _relu_derivative(xp, x, y):
    """1 where the output is positive, else 0; MXNet's relu_grad of NaN is NaN."""
    return xp.where(y != y, y, y > 0)


def _sigmoid(xp, x):
    # exp of a non-positive number never overflows
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _erf(xp, x):
    return erf(xp, x)


def _rcbrt(xp, x):
    return 1 / xp.cbrt(x)


# name -> (forward, derivative or None, doc)
_MATH = {
    "abs": (lambda xp, x: xp.abs(x), lambda xp, x, y: _sign(xp, x), "|x|"),
    "negative": (lambda xp, x: -x, lambda xp, x, y: -1, "-x"),
    "reciprocal": (lambda xp, x: 1 / x, lambda xp, x, y: -y * y, "1/x"),
    "square": (lambda xp, x: x * x, lambda xp, x, y: 2 * x, "x^2"),
    "sqrt": (lambda xp, x: xp.sqrt(x), lambda xp, x, y: 0.5 / y, "sqrt(x)"),
    "rsqrt": (lambda xp, x: 1 / xp.sqrt(x), lambda xp, x, y: -0.5 * y * y * y, "1/sqrt(x)"),
    "cbrt": (lambda xp, x: xp.cbrt(x), lambda xp, x, y: 1 / (3 * y * y), "x^(1/3)"),
    "rcbrt": (_rcbrt, lambda xp, x, y: -y / (3 * x), "1/x^(1/3)"),
    "exp": (lambda xp, x: xp.exp(x), lambda xp, x, y: y, "e^x"),
    "expm1": (lambda xp, x: xp.expm1(x), lambda xp, x, y: xp.exp(x), "e^x - 1"),
    "log": (lambda xp, x: xp.log(x), lambda xp, x, y: 1 / x, "natural logarithm"),
    "log10": (lambda xp, x: xp.log10(x), lambda xp, x, y: 1 / (x * _LN10), "log base 10"),
    "log2": (lambda xp, x: xp.log2(x), lambda xp, x, y: 1 / (x * _LN2), "log base 2"),
    "log1p": (lambda xp, x: xp.log1p(x), lambda xp, x, y: 1 / (1 + x), "log(1 + x)"),
    "erf": (_erf, lambda xp, x, y: _TWO_OVER_SQRT_PI * xp.exp(-x * x), "the error function"),
    "relu": (lambda xp, x: xp.maximum(x, 0), _relu_derivative, "max(x, 0)"),
    "sigmoid": (_sigmoid, lambda xp, x, y: y * (1 - y), "1/(1 + e^-x)"),
    "softsign": (
        lambda xp, x: x / (1 + xp.abs(x)),
        lambda xp, x, y: 1 / ((1 + xp.abs(x)) * (1 + xp.abs(x))),
        "x/(1 + |x|)",
    ),
    "tanh": (lambda xp, x: xp.tanh(x), lambda xp, x, y: 1 - y * y, "hyperbolic tangent"),
    "sinh": (lambda xp, x: xp.sinh(x), lambda xp, x, y: xp.cosh(x), "hyperbolic sine"),
    "cosh": (lambda xp, x: xp.cosh(x), lambda xp, x, y: xp.sinh(x), "hyperbolic cosine"),
    "arcsinh": (
        lambda xp, x: xp.arcsinh(x),
        lambda xp, x, y: 1 / xp.sqrt(x * x + 1),
        "inverse sinh",
    ),
    "arccosh": (
        lambda xp, x: xp.arccosh(x),
        lambda xp, x, y: 1 / xp.sqrt(x * x - 1),
        "inverse cosh",
    ),
    "arctanh": (lambda xp, x: xp.arctanh(x), lambda xp, x, y: 1 / (1 - x * x), "inverse tanh"),
    "sin": (lambda xp, x: xp.sin(x), lambda xp, x, y: xp.cos(x), "sine"),
    "cos": (lambda xp, x: xp.cos(x), lambda xp, x, y: -xp.sin(x), "cosine"),
    "tan": (lambda xp, x: xp.tan(x), lambda xp, x, y: 1 + y * y, "tangent"),
    "arcsin": (lambda xp, x: xp.arcsin(x), lambda xp, x, y: 1 / xp.sqrt(1 - x * x), "inverse sine"),
    "arccos": (
        lambda xp, x: xp.arccos(x),
        lambda xp, x, y: -1 / xp.sqrt(1 - x * x),
        "inverse cosine",
    ),
    "arctan": (lambda xp, x: xp.arctan(x), lambda xp, x, y: 1 / (1 + x * x), "inverse tangent"),
    "degrees": (lambda xp, x: xp.degrees(x), lambda xp, x, y: 180 / math.pi, "radians to degrees"),
    "radians": (lambda xp, x: xp.radians(x), lambda xp, x, y: math.pi / 180, "degrees to radians"),
    # piecewise constant: MXNet gives them a zero gradient
    "sign": (_sign, None, "-1, 0 or 1"),
    "floor": (lambda xp, x: xp.floor(x), None, "round towards -inf"),
    "ceil": (lambda xp, x: xp.ceil(x), None, "round towards +inf"),
    "trunc": (lambda xp, x: xp.trunc(x), None, "round towards zero"),
    "fix": (lambda xp, x: xp.trunc(x), None, "round towards zero"),
    "rint": (round_half_down, None, "round to nearest, halves towards -inf"),
    "round": (round_half_away, None, "round to nearest, halves away from zero"),
}


def _math_op(name, forward, derivative, doc):
    def run_forward(ctx, p, inputs, aux):
        x = inputs[0]
        out = forward(ctx.xp, x).astype(x.dtype, copy=False)
        return [out], (x, out)

    def run_backward(ctx, p, saved, out_grads, need_grad):
        if not need_grad[0]:
            return [None]
        x, out = saved
        if derivative is None:
            return [ctx.xp.zeros_like(x)]
        local = derivative(ctx.xp, x, out)
        return [(out_grads[0] * local).astype(x.dtype, copy=False)]

    return OpDef(name=name, forward=run_forward, backward=run_backward, doc=f"Element-wise {doc}.")


# -- identity-like ------------------------------------------------------------


def _copy_forward(ctx, p, inputs, aux):
    return [inputs[0].copy()], None


def _copy_backward(ctx, p, saved, out_grads, need_grad):
    # a fresh array: the caller may accumulate into a gradient in place
    return [out_grads[0].copy() if need_grad[0] else None]


def _block_backward(ctx, p, saved, out_grads, need_grad):
    return [ctx.xp.zeros_like(out_grads[0]) if need_grad[0] else None]


CAST_DTYPES = ("float16", "float32", "float64", "uint8", "int8", "int32", "int64", "bool")


@attrs.frozen
class CastParams:
    dtype: str = param("dtype", choices=CAST_DTYPES)


def _cast_type(p, in_types, out_types, aux_types):
    # the input keeps its own dtype; only the output is fixed by the parameter
    return in_types, [p.dtype], aux_types


def _cast_forward(ctx, p, inputs, aux):
    x = inputs[0]
    return [x.astype(p.dtype)], x.dtype


def _cast_backward(ctx, p, in_dtype, out_grads, need_grad):
    return [out_grads[0].astype(in_dtype) if need_grad[0] else None]


IDENTITY_OPS = [
    OpDef(
        name="_copy",
        aliases=("identity",),
        forward=_copy_forward,
        backward=_copy_backward,
        doc="A copy of the input; the gradient passes through.",
    ),
    OpDef(
        name="BlockGrad",
        aliases=("stop_gradient",),
        forward=_copy_forward,
        backward=_block_backward,
        doc="A copy of the input whose gradient is zero (stops backpropagation).",
    ),
    OpDef(
        name="Cast",
        aliases=("cast",),
        params=CastParams,
        infer_type=_cast_type,
        forward=_cast_forward,
        backward=_cast_backward,
        doc="The input converted to dtype; the gradient is converted back.",
    ),
]

OPS = [_math_op(name, *row) for name, row in _MATH.items()] + IDENTITY_OPS
