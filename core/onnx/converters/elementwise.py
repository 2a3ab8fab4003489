"""Converters of the arithmetic on two operands: elemwise_*/broadcast_* (ONNX
broadcasts like NumPy, so both forms convert alike), the ``_*_scalar`` ops with
the number on either side, comparisons and logical ops, and add_n.

Each rule is a function ``(g, lhs, rhs, output, dtype)``. As in MXNet,
comparisons and logical ops give 1 or 0 in the operands' dtype (ONNX's bool
is cast back), ``mod`` takes the sign of the divisor, and a scalar takes the
output's dtype (integer arrays with a float scalar compute in float64).
One-operand math is in elementwise_unary.py.
"""

import numpy as np

from ..graph import tensor_type
from . import converter
from .tensor_helpers import cast, scalar

__all__ = ["RULES"]


def _simple(op_type):
    def build(g, lhs, rhs, output, dtype):
        return g.add_node(op_type, [lhs, rhs], [output])

    return build


def _as_dtype(g, boolean, output, dtype):
    return g.add_node("Cast", [boolean], [output], to=tensor_type(dtype))


def _compare(op_type, negate=False):
    def build(g, lhs, rhs, output, dtype):
        truth = g.add_node(op_type, [lhs, rhs], [g.fresh("truth")])
        if negate:
            truth = g.add_node("Not", [truth], [g.fresh("truth")])
        return _as_dtype(g, truth, output, dtype)

    return build


def _logical(op_type):
    def build(g, lhs, rhs, output, dtype):
        # non-zero is true (nan too, as C's and MXNet's)
        a, b = cast(g, lhs, "bool", hint="truth"), cast(g, rhs, "bool", hint="truth")
        return _as_dtype(g, g.add_node(op_type, [a, b], [g.fresh("truth")]), output, dtype)

    return build


def _mod(g, lhs, rhs, output, dtype):
    if np.dtype(dtype).kind in "iu":  # ONNX's integer Mod already follows the divisor
        return g.add_node("Mod", [lhs, rhs], [output], fmod=0)
    # floats: C's fmod, then moved into the divisor's sign where they differ
    rest = g.add_node("Mod", [lhs, rhs], [g.fresh("fmod")], fmod=1)
    product = g.add_node("Mul", [rest, rhs], [g.fresh("product")])
    zero = scalar(g, 0, dtype, "zero")
    wrong_sign = g.add_node("Less", [product, zero], [g.fresh("wrong_sign")])
    shifted = g.add_node("Add", [rest, rhs], [g.fresh("shifted")])
    return g.add_node("Where", [wrong_sign, shifted, rest], [output])


def _hypot(g, lhs, rhs, output, dtype):
    squares = [g.add_node("Mul", [v, v], [g.fresh("square")]) for v in (lhs, rhs)]
    total = g.add_node("Add", squares, [g.fresh("sum_of_squares")])
    return g.add_node("Sqrt", [total], [output])


RULES = {
    "add": _simple("Add"),
    "sub": _simple("Sub"),
    "mul": _simple("Mul"),
    "div": _simple("Div"),  # ONNX's integer Div truncates, as C does
    "power": _simple("Pow"),
    "maximum": _simple("Max"),
    "minimum": _simple("Min"),
    "hypot": _hypot,
    "mod": _mod,
    "equal": _compare("Equal"),
    "not_equal": _compare("Equal", negate=True),
    "greater": _compare("Greater"),
    "greater_equal": _compare("GreaterOrEqual"),
    "lesser": _compare("Less"),
    "lesser_equal": _compare("LessOrEqual"),
    "and": _logical("And"),
    "or": _logical("Or"),
    "xor": _logical("Xor"),
}

# rebind op name -> rule, for the two-array forms (equal shapes or broadcasting)
_COMPARISONS = ("equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal")
_NAMED_ALIKE = ("power", "maximum", "minimum", "hypot", "mod", *_COMPARISONS)
_LOGICAL = ("and", "or", "xor")
_ARRAY_OPS = {
    "elemwise_add": "add",
    "elemwise_sub": "sub",
    "elemwise_mul": "mul",
    "elemwise_div": "div",
    **{f"_{rule}": rule for rule in _NAMED_ALIKE},
    **{f"broadcast_{rule}": rule for rule in ("add", "sub", "mul", "div", *_NAMED_ALIKE)},
    **{f"_logical_{rule}": rule for rule in _LOGICAL},
    **{f"broadcast_logical_{rule}": rule for rule in _LOGICAL},
}


def _array_converter(rule):
    def convert(node, g):
        lhs, rhs = node.inputs
        RULES[rule](g, lhs, rhs, node.outputs[0], node.out_dtypes[0])

    return convert


for _name, _rule in _ARRAY_OPS.items():
    converter(_name)(_array_converter(_rule))


# -- array and number -------------------------------------------------------------------

# rebind op name -> (rule, whether the number is the left operand)
_SCALAR_OPS = {
    "_plus_scalar": ("add", False),
    "_minus_scalar": ("sub", False),
    "_rminus_scalar": ("sub", True),
    "_mul_scalar": ("mul", False),
    "_div_scalar": ("div", False),
    "_rdiv_scalar": ("div", True),
    "_power_scalar": ("power", False),
    "_rpower_scalar": ("power", True),
    "_maximum_scalar": ("maximum", False),
    "_minimum_scalar": ("minimum", False),
    "_hypot_scalar": ("hypot", False),
    "_mod_scalar": ("mod", False),
    "_rmod_scalar": ("mod", True),
    **{f"_logical_{rule}_scalar": (rule, False) for rule in _LOGICAL},
    **{f"_{rule}_scalar": (rule, False) for rule in _COMPARISONS},
}


def scalar_operand(g, node):
    """(the input in the output's dtype, the number as a 0-d constant of that dtype)."""
    dtype = node.out_dtypes[0]
    x = cast(g, node.inputs[0], dtype, have=node.in_dtypes[0], hint=f"{node.name}_wide")
    value = node.params.scalar
    # MXNet converts the number with DType(s): integer dtypes truncate it
    value = int(value) if np.dtype(dtype).kind in "iub" else value
    return x, scalar(g, value, dtype, f"{node.name}_scalar")


def _scalar_converter(rule, reflected):
    def convert(node, g):
        x, s = scalar_operand(g, node)
        lhs, rhs = (s, x) if reflected else (x, s)
        RULES[rule](g, lhs, rhs, node.outputs[0], node.out_dtypes[0])

    return convert


for _name, (_rule, _reflected) in _SCALAR_OPS.items():
    converter(_name)(_scalar_converter(_rule, _reflected))


# -- add_n --------------------------------------------------------------------------------


@converter("add_n")
def convert_add_n(node, g):
    g.add_node("Sum", list(node.inputs), [node.outputs[0]])
