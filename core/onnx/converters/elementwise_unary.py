"""Converters of one-operand math and of the ops that are the identity (or a cast)
at inference: unary math, clip, smooth_l1, hard_sigmoid, logical_not, Cast,
amp_cast, amp_multicast, _copy, BlockGrad, MakeLoss, make_loss, the regression
outputs, SVMOutput and IdentityAttachKLSparseReg.

Functions ONNX lacks are composed from its operators where exact (cbrt, trunc,
MXNet's round with halves away from zero, its rint with halves down); gamma,
gammaln and erfinv have no ONNX form and are refused.
"""

import math

import numpy as np

from ..graph import tensor_type
from . import converter, refuse
from .tensor_helpers import cast, scalar

__all__ = ["UNARY"]


def _op(op_type):
    def build(g, x, output, dtype):
        return g.add_node(op_type, [x], [output])

    return build


def _fresh(g):
    return g.fresh("unary")


def _scaled(factor):
    def build(g, x, output, dtype):
        return g.add_node("Mul", [x, scalar(g, factor, dtype, "factor")], [output])

    return build


def _log_base(base):
    def build(g, x, output, dtype):
        natural = g.add_node("Log", [x], [_fresh(g)])
        return g.add_node("Div", [natural, scalar(g, math.log(base), dtype, "ln_base")], [output])

    return build


def _square(g, x, output, dtype):
    return g.add_node("Mul", [x, x], [output])


def _rsqrt(g, x, output, dtype):
    return g.add_node("Reciprocal", [g.add_node("Sqrt", [x], [_fresh(g)])], [output])


def _cbrt(g, x, output, dtype):
    # Pow of a negative base to 1/3 is nan: the root of |x|, given x's sign
    magnitude = g.add_node("Abs", [x], [_fresh(g)])
    root = g.add_node("Pow", [magnitude, scalar(g, 1 / 3, dtype, "third")], [_fresh(g)])
    return g.add_node("Mul", [g.add_node("Sign", [x], [_fresh(g)]), root], [output])


def _rcbrt(g, x, output, dtype):
    return g.add_node("Reciprocal", [_cbrt(g, x, _fresh(g), dtype)], [output])


def _expm1(g, x, output, dtype):
    return g.add_node("Sub", [g.add_node("Exp", [x], [_fresh(g)]), scalar(g, 1, dtype)], [output])


def _log1p(g, x, output, dtype):
    return g.add_node("Log", [g.add_node("Add", [x, scalar(g, 1, dtype)], [_fresh(g)])], [output])


def _trunc(g, x, output, dtype):
    floor = g.add_node("Floor", [g.add_node("Abs", [x], [_fresh(g)])], [_fresh(g)])
    return g.add_node("Mul", [g.add_node("Sign", [x], [_fresh(g)]), floor], [output])


def _round_half_away(g, x, output, dtype):
    # ONNX Round sends halves to even; MXNet's round sends them away from zero
    whole = _trunc(g, x, _fresh(g), dtype)
    fraction = g.add_node("Abs", [g.add_node("Sub", [x, whole], [_fresh(g)])], [_fresh(g)])
    half = g.add_node("GreaterOrEqual", [fraction, scalar(g, 0.5, dtype, "half")], [_fresh(g)])
    step = g.add_node("Cast", [half], [_fresh(g)], to=tensor_type(dtype))
    signed = g.add_node("Mul", [step, g.add_node("Sign", [x], [_fresh(g)])], [_fresh(g)])
    return g.add_node("Add", [whole, signed], [output])


def _rint_half_down(g, x, output, dtype):
    # MXNet's rint takes the floor on a tie (x - floor <= ceil - x), not ONNX Round's even
    below = g.add_node("Floor", [x], [_fresh(g)])
    above = g.add_node("Ceil", [x], [_fresh(g)])
    down = g.add_node("Sub", [x, below], [_fresh(g)])
    up = g.add_node("Sub", [above, x], [_fresh(g)])
    nearer_below = g.add_node("LessOrEqual", [down, up], [_fresh(g)])
    return g.add_node("Where", [nearer_below, below, above], [output])


UNARY = {
    "abs": _op("Abs"),
    "negative": _op("Neg"),
    "reciprocal": _op("Reciprocal"),
    "square": _square,
    "sqrt": _op("Sqrt"),
    "rsqrt": _rsqrt,
    "cbrt": _cbrt,
    "rcbrt": _rcbrt,
    "exp": _op("Exp"),
    "expm1": _expm1,
    "log": _op("Log"),
    "log10": _log_base(10.0),
    "log2": _log_base(2.0),
    "log1p": _log1p,
    "erf": _op("Erf"),
    "relu": _op("Relu"),
    "sigmoid": _op("Sigmoid"),
    "softsign": _op("Softsign"),
    "tanh": _op("Tanh"),
    "sinh": _op("Sinh"),
    "cosh": _op("Cosh"),
    "arcsinh": _op("Asinh"),
    "arccosh": _op("Acosh"),
    "arctanh": _op("Atanh"),
    "sin": _op("Sin"),
    "cos": _op("Cos"),
    "tan": _op("Tan"),
    "arcsin": _op("Asin"),
    "arccos": _op("Acos"),
    "arctan": _op("Atan"),
    "degrees": _scaled(180 / math.pi),
    "radians": _scaled(math.pi / 180),
    "sign": _op("Sign"),
    "floor": _op("Floor"),
    "ceil": _op("Ceil"),
    "trunc": _trunc,
    "fix": _trunc,
    "rint": _rint_half_down,
    "round": _round_half_away,
}


def _unary_converter(build):
    def convert(node, g):
        build(g, node.inputs[0], node.outputs[0], node.out_dtypes[0])

    return convert


for _name, _build in UNARY.items():
    converter(_name)(_unary_converter(_build))

for _name in ("gamma", "gammaln", "erfinv"):
    refuse(_name, f"ONNX has no {_name} operator (nor one it could be composed from exactly)")


# -- inference identities and casts ------------------------------------------------------


@converter(
    "_copy",
    "BlockGrad",
    "MakeLoss",
    "make_loss",
    "LinearRegressionOutput",
    "MAERegressionOutput",
    "SVMOutput",
    "IdentityAttachKLSparseReg",
    "_CrossDeviceCopy",
    "_identity_with_attr_like_rhs",
)
def convert_identity(node, g):
    """The forward of these is the identity; their labels and gradients do not export."""
    g.add_node("Identity", [node.inputs[0]], [node.outputs[0]])


@converter("LogisticRegressionOutput")
def convert_logistic_regression(node, g):
    g.add_node("Sigmoid", [node.inputs[0]], [node.outputs[0]])


@converter("Cast", "amp_cast", "amp_multicast")
def convert_cast(node, g):
    """Each output is its input in the output's dtype (amp ops leave some dtypes alone)."""
    pairs = zip(node.inputs, node.in_dtypes, node.outputs, node.out_dtypes, strict=False)
    for value, have, output, want in pairs:
        if np.dtype(have) == np.dtype(want):
            g.add_node("Identity", [value], [output])
        else:
            g.add_node("Cast", [value], [output], to=tensor_type(want))


# -- math with parameters ---------------------------------------------------------------------


@converter("clip")
def convert_clip(node, g):
    p, dtype = node.params, node.out_dtypes[0]
    # MXNet holds the bounds as float32, then converts them to the data's dtype
    low, high = np.float32(p.a_min), np.float32(p.a_max)
    if np.dtype(dtype).kind in "iu":
        low, high = int(low), int(high)
    low, high = scalar(g, low, dtype, "a_min"), scalar(g, high, dtype, "a_max")
    if p.a_min <= p.a_max:
        g.add_node("Clip", [node.inputs[0], low, high], [node.outputs[0]])
        return
    # crossed bounds: MXNet tests the upper one first, so everything else becomes a_min
    above = g.add_node("Greater", [node.inputs[0], high], [g.fresh(f"{node.name}_above")])
    g.add_node("Where", [above, high, low], [node.outputs[0]])


@converter("smooth_l1")
def convert_smooth_l1(node, g):
    x, dtype = node.inputs[0], node.out_dtypes[0]
    sigma2 = np.asarray(node.params.scalar**2).astype(dtype)
    inner = 1 / sigma2
    magnitude = g.add_node("Abs", [x], [_fresh(g)])
    outside = g.add_node("Greater", [magnitude, scalar(g, inner, dtype)], [_fresh(g)])
    linear = g.add_node("Sub", [magnitude, scalar(g, 0.5 * inner, dtype)], [_fresh(g)])
    squared = g.add_node("Mul", [x, x], [_fresh(g)])
    quadratic = g.add_node("Mul", [squared, scalar(g, 0.5 * sigma2, dtype)], [_fresh(g)])
    g.add_node("Where", [outside, linear, quadratic], [node.outputs[0]])


@converter("hard_sigmoid")
def convert_hard_sigmoid(node, g):
    p = node.params
    g.add_node(
        "HardSigmoid", [node.inputs[0]], [node.outputs[0]], alpha=float(p.alpha), beta=float(p.beta)
    )


@converter("logical_not")
def convert_logical_not(node, g):
    truth = cast(g, node.inputs[0], "bool", hint=f"{node.name}_truth")
    negated = g.add_node("Not", [truth], [g.fresh(f"{node.name}_not")])
    g.add_node("Cast", [negated], [node.outputs[0]], to=tensor_type(node.out_dtypes[0]))
