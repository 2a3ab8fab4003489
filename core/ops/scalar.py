"""Ops of one array and one number: ``x + s``, ``s - x``, ``x ** s``, ...,
``clip`` and ``smooth_l1``.

The ``_*_scalar`` ops are what MXNet's symbol arithmetic with Python numbers
creates (``x * 2`` -> ``_mul_scalar(scalar=2)``). As in MXNet the scalar is
converted to the array's dtype before the operation, so an integer array stays
integer (``is_int`` false, i.e. a float scalar, turns integer input into
float64, as MXNet's type rule says).
"""

import math

import attrs
import numpy as np

from .base import OpDef, elementwise_shape
from .binary import float_only, mxnet_mod
from .params import param

__all__ = ["OPS", "scalar_operands"]


@attrs.frozen
class ScalarParams:
    scalar: float = param("float", 1.0)
    is_int: bool = param("bool", True)


def _result_dtype(p, dtype):
    """MXNet's output dtype for an input of ``dtype`` (a NumPy dtype name)."""
    kind = _kind(dtype)
    if kind == "b":
        return "int64" if p.is_int else "float64"
    if kind in "iu" and not p.is_int:
        return "float64"
    return dtype


def _kind(dtype):
    return np.dtype(dtype).kind


def _scalar_type(p, in_types, out_types, aux_types):
    if in_types[0] is not None:
        return in_types, [_result_dtype(p, in_types[0])], aux_types
    if out_types[0] is not None and _kind(out_types[0]) == "f":
        # a floating output came from an input of the same dtype (MXNet assigns it back)
        return [out_types[0]], out_types, aux_types
    return in_types, out_types, aux_types


def scalar_operands(p, x):
    """``x`` in the result dtype, and the scalar converted to that dtype (as MXNet's DType(s))."""
    target = _result_dtype(p, x.dtype.name)
    if target != x.dtype.name:
        x = x.astype(target)
    return x, c_cast(p.scalar, x.dtype)


def c_cast(value, dtype):
    """``value`` as C's ``DType(value)`` gives it: truncated, out-of-range integers wrapped.

    MXNet converts its double scalar with a C cast, so ``uint8 + -1`` adds 255
    where NumPy would refuse the Python integer; NumPy's float-to-int cast is
    the same C conversion.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        return np.array(float(value), np.float64).astype(dtype)[()]


def _divide_by_scalar(xp, x, s):
    """x / s; for integers truncated towards zero as C division is, and 0 where s is 0.

    MXNet's integer division by zero ends the process (SIGFPE); we give 0, as
    its own modulo by zero and NumPy's integer division do.
    """
    if x.dtype.kind not in "iu":
        return xp.true_divide(x, s)
    if s == 0:
        return xp.zeros_like(x)
    return xp.trunc(xp.true_divide(x, s)).astype(x.dtype)


def _divide_scalar_by(xp, s, x):
    """s / x, with _divide_by_scalar's integer rules.

    xp's functions rather than operators: a NumPy scalar on the left of a CuPy
    array must not try to convert the array.
    """
    if x.dtype.kind not in "iu":
        return xp.true_divide(s, x)
    zero = x == 0
    quotient = xp.trunc(xp.true_divide(s, xp.where(zero, xp.ones_like(x), x)))
    return xp.where(zero, 0, quotient).astype(x.dtype)


def _power(xp, base, exponent, dtype):
    """base ** exponent; integers go through double as MXNet's pow does (2 ** -1 is 0)."""
    if np.dtype(dtype).kind not in "iu":
        return xp.power(base, exponent)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        return xp.power(xp.asarray(base, "float64"), xp.asarray(exponent, "float64")).astype(dtype)


def _log_of(s):
    """log(s) of a scalar, with the inf/nan NumPy and C give where math.log raises."""
    s = float(s)
    return math.log(s) if s > 0 else (-math.inf if s == 0 else math.nan)


def _passed(xp, g, x, y, s):
    return g.copy()  # a fresh array: callers may accumulate into gradients in place


# name -> (aliases, forward f(xp, x, s), gradient g(xp, head_grad, x, out, s))
_TABLE = {
    "_plus_scalar": (("_PlusScalar",), lambda xp, x, s: x + s, _passed),
    "_minus_scalar": (("_MinusScalar",), lambda xp, x, s: x - s, _passed),
    "_rminus_scalar": (
        ("_RMinusScalar",),
        lambda xp, x, s: xp.subtract(s, x),
        lambda xp, g, x, y, s: -g,
    ),
    "_mul_scalar": (("_MulScalar",), lambda xp, x, s: x * s, lambda xp, g, x, y, s: g * s),
    "_div_scalar": (
        ("_DivScalar",),
        lambda xp, x, s: _divide_by_scalar(xp, x, s),
        lambda xp, g, x, y, s: g / s,
    ),
    "_rdiv_scalar": (
        ("_RDivScalar",),
        lambda xp, x, s: _divide_scalar_by(xp, s, x),
        lambda xp, g, x, y, s: -(g * s) / (x * x),
    ),
    "_power_scalar": (
        ("_PowerScalar",),
        lambda xp, x, s: _power(xp, x, s, x.dtype),
        lambda xp, g, x, y, s: g * x ** (s - 1) * s,
    ),
    "_rpower_scalar": (
        ("_RPowerScalar",),
        lambda xp, x, s: _power(xp, s, x, x.dtype),
        lambda xp, g, x, y, s: g * (y * _log_of(s)),
    ),
    "_maximum_scalar": (
        ("_MaximumScalar",),
        lambda xp, x, s: xp.maximum(x, s),
        lambda xp, g, x, y, s: g * (x >= s),
    ),
    "_minimum_scalar": (
        ("_MinimumScalar",),
        lambda xp, x, s: xp.minimum(x, s),
        lambda xp, g, x, y, s: g * (x <= s),
    ),
    "_hypot_scalar": (
        ("_HypotScalar",),
        lambda xp, x, s: xp.hypot(x, s),
        lambda xp, g, x, y, s: g * (x / y),
    ),
}


def _zero_gradient(xp, g, x, y, s):
    """Comparisons are piecewise constant: MXNet gives their input a zero gradient."""
    return xp.zeros_like(g)


# comparisons with a number give 1 or 0 in the input's dtype
_TABLE.update(
    {
        "_equal_scalar": (("_EqualScalar",), lambda xp, x, s: x == s, _zero_gradient),
        "_not_equal_scalar": (("_NotEqualScalar",), lambda xp, x, s: x != s, _zero_gradient),
        "_greater_scalar": (("_GreaterScalar",), lambda xp, x, s: x > s, _zero_gradient),
        "_greater_equal_scalar": (
            ("_GreaterEqualScalar",),
            lambda xp, x, s: x >= s,
            _zero_gradient,
        ),
        "_lesser_scalar": (("_LesserScalar",), lambda xp, x, s: x < s, _zero_gradient),
        "_lesser_equal_scalar": (("_LesserEqualScalar",), lambda xp, x, s: x <= s, _zero_gradient),
        # MXNet's mod has no gradient for integer operands, and gives 0 for a zero divisor
        "_mod_scalar": (
            ("_ModScalar",),
            lambda xp, x, s: xp.zeros_like(x) if s == 0 else xp.mod(x, s),
            lambda xp, g, x, y, s: float_only(xp, x, g, _passed(xp, g, x, y, s)),
        ),
        "_rmod_scalar": (
            ("_RModScalar",),
            lambda xp, x, s: mxnet_mod(xp, s, x),
            lambda xp, g, x, y, s: float_only(xp, x, g, -g * xp.floor(s / x)),
        ),
    }
)


# the ops whose gradient reads the input's values, the output's; the others (plus,
# minus, mul, div, the comparisons) read only the head gradient and the number, so
# their training pass keeps no array alive for backward
_READS_INPUT = frozenset(
    {
        "_rdiv_scalar",
        "_power_scalar",
        "_maximum_scalar",
        "_minimum_scalar",
        "_hypot_scalar",
        "_mod_scalar",
        "_rmod_scalar",
    }
)
_READS_OUTPUT = frozenset({"_rpower_scalar", "_hypot_scalar"})


def _scalar_op(name, aliases, forward, gradient):
    reads_input, reads_output = name in _READS_INPUT, name in _READS_OUTPUT

    def run_forward(ctx, p, inputs, aux):
        x, s = scalar_operands(p, inputs[0])
        out = forward(ctx.xp, x, s).astype(x.dtype, copy=False)
        kept_x, kept_out = x if reads_input else None, out if reads_output else None
        return [out], (kept_x, kept_out, s, inputs[0].dtype)

    def run_backward(ctx, p, saved, out_grads, need_grad):
        if not need_grad[0]:
            return [None]
        x, out, s, in_dtype = saved
        grad = gradient(ctx.xp, out_grads[0], x, out, s)
        return [grad.astype(in_dtype, copy=False)]

    return OpDef(
        name=name,
        aliases=aliases,
        params=ScalarParams,
        infer_type=_scalar_type,
        forward=run_forward,
        backward=run_backward,
        doc=f"Element-wise {name[1:-7]} of the input and the number `scalar`.",
    )


# -- smooth_l1 ----------------------------------------------------------------


@attrs.frozen
class SmoothL1Params:
    scalar: float = param("float", 1.0)


def _smooth_l1_forward(ctx, p, inputs, aux):
    xp, x = ctx.xp, inputs[0]
    sigma2 = x.dtype.type(p.scalar * p.scalar)
    inner = 1 / sigma2
    quadratic = 0.5 * x * x * sigma2
    out = xp.where(xp.abs(x) > inner, xp.abs(x) - 0.5 * inner, quadratic)
    return [out.astype(x.dtype, copy=False)], (x, sigma2)


def _smooth_l1_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    xp, (x, sigma2) = ctx.xp, saved
    inner = 1 / sigma2
    local = xp.where(xp.abs(x) > inner, xp.sign(x), x * sigma2)
    return [(out_grads[0] * local).astype(x.dtype, copy=False)]


SMOOTH_L1 = OpDef(
    name="smooth_l1",
    params=SmoothL1Params,
    forward=_smooth_l1_forward,
    backward=_smooth_l1_backward,
    doc="0.5 (sigma x)^2 where |x| <= 1/sigma^2, else |x| - 0.5/sigma^2 (sigma = scalar).",
)


# -- clip ---------------------------------------------------------------------


@attrs.frozen
class ClipParams:
    a_min: float = param("float")
    a_max: float = param("float")


def _clip_forward(ctx, p, inputs, aux):
    xp, x = ctx.xp, inputs[0]
    # MXNet keeps the bounds as 32-bit floats and compares the data with them there;
    # only a bound written out is converted to the data's dtype (C's cast)
    low, high = np.float32(p.a_min), np.float32(p.a_max)
    # MXNet tests the upper bound first, which matters only when a_min > a_max
    out = xp.where(x > high, c_cast(high, x.dtype), xp.where(x < low, c_cast(low, x.dtype), x))
    return [out.astype(x.dtype, copy=False)], (x, low, high)


def _clip_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    x, low, high = saved
    # MXNet zeroes only what is above or below the bounds: NaN passes its gradient
    inside = ~((x > high) | (x < low))
    return [(out_grads[0] * inside).astype(x.dtype, copy=False)]


CLIP = OpDef(
    name="clip",
    params=ClipParams,
    infer_shape=elementwise_shape,
    forward=_clip_forward,
    backward=_clip_backward,
    doc="Values limited to [a_min, a_max]; the gradient is zero outside.",
)

OPS = [_scalar_op(name, *row) for name, row in _TABLE.items()] + [SMOOTH_L1, CLIP]
