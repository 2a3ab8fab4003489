"""Logical and, or and xor of two arrays or of an array and a number.

Three forms per rule, as in MXNet: ``_logical_<rule>`` (inputs of equal
shapes), ``broadcast_logical_<rule>`` (NumPy broadcasting) and
``_logical_<rule>_scalar`` (the number ``scalar``). A value is true when it is
non-zero (nan included, as in C); results are 1 or 0 in the inputs' dtype and
the gradient is zero. Shapes and the scalar's dtype rules are those of the
other comparisons, reused from ``binary.py`` and ``scalar.py``; ``logical_not``
is a unary op (``math_extra.py``).
"""

from .base import OpDef
from .binary import _broadcast_shapes, _equal_shapes
from .scalar import _scalar_op

__all__ = ["OPS"]

_OPERANDS = ("lhs", "rhs")

# rule -> (truth function of two boolean arrays, legacy alias of the elemwise op,
#          legacy alias of the scalar op)
_RULES = {
    "and": (lambda xp, a, b: xp.logical_and(a, b), "_Logical_And", "_LogicalAndScalar"),
    "or": (lambda xp, a, b: xp.logical_or(a, b), "_Logical_Or", "_LogicalOrScalar"),
    "xor": (lambda xp, a, b: xp.logical_xor(a, b), "_Logical_Xor", "_LogicalXorScalar"),
}


def _zero_gradients(ctx, p, inputs, out_grads, need_grad):
    return [
        ctx.xp.zeros_like(x) if needed else None
        for x, needed in zip(inputs, need_grad, strict=True)
    ]


def _array_op(rule, broadcast):
    truth, elemwise_alias, _ = _RULES[rule]

    def run_forward(ctx, p, inputs, aux):
        a, b = inputs
        out = truth(ctx.xp, a != 0, b != 0).astype(a.dtype)
        return [out], (a, b)

    if broadcast:
        name, aliases, kind = f"broadcast_logical_{rule}", (), "with broadcasting"
    else:
        name, aliases, kind = f"_logical_{rule}", (elemwise_alias,), "of equal-shape inputs"
    return OpDef(
        name=name,
        aliases=aliases,
        arguments=_OPERANDS,
        infer_shape=_broadcast_shapes if broadcast else _equal_shapes,
        forward=run_forward,
        backward=_zero_gradients,
        doc=f"Logical {rule} of lhs and rhs {kind}: 1 or 0 in their dtype.",
    )


def _scalar_logical_op(rule):
    truth, _, scalar_alias = _RULES[rule]

    def forward(xp, x, s):
        return truth(xp, x != 0, s != 0)

    def zero_gradient(xp, g, x, y, s):
        return xp.zeros_like(g)

    return _scalar_op(f"_logical_{rule}_scalar", (scalar_alias,), forward, zero_gradient)


OPS = (
    [_array_op(rule, broadcast=False) for rule in _RULES]
    + [_array_op(rule, broadcast=True) for rule in _RULES]
    + [_scalar_logical_op(rule) for rule in _RULES]
)
