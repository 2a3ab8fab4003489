"""Ops of two or more arrays: elemwise_* (equal shapes), broadcast_* (NumPy-style
broadcasting), ``_power``/``_maximum``/``_minimum``/``_hypot``, ``add_n`` and
``where``.

Each arithmetic rule is one row of ``_RULES`` and gives two operators: the
``elemwise``/underscore one, whose inputs must have equal shapes, and the
``broadcast_`` one, whose gradients are summed back to each input's shape.
"""

import typing

import attrs
import numpy as np

from .base import OpDef, merge_shape, mismatch, same_type
from .params import param, positive

__all__ = ["OPS", "broadcast_shape", "float_only", "mxnet_mod", "reduce_to_shape"]

_OPERANDS = ("lhs", "rhs")


def _divide(xp, a, b):
    """a / b; integers truncate towards zero as C division does, and give 0 where b is 0.

    MXNet's integer division by zero ends the process (SIGFPE); we give 0, as
    its own modulo by zero and NumPy's integer division do.
    """
    if a.dtype.kind not in "iu":
        return a / b
    zero = b == 0
    quotient = xp.trunc(xp.true_divide(a, xp.where(zero, xp.ones_like(b), b)))
    return xp.where(zero, 0, quotient).astype(a.dtype)


def _power(xp, a, b):
    """a ** b; integers go through double as MXNet's pow does (2 ** -1 is 0, overflow INT_MIN)."""
    if a.dtype.kind not in "iu":
        return xp.power(a, b)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        return xp.power(a.astype("float64"), b.astype("float64")).astype(a.dtype)


# rule -> (forward f(xp, a, b), gradient of lhs, gradient of rhs), each gradient
# g(xp, head, a, b, out) computed only when that input needs one
_RULES = {
    "add": (lambda xp, a, b: a + b, lambda xp, g, a, b, y: g, lambda xp, g, a, b, y: g),
    "sub": (lambda xp, a, b: a - b, lambda xp, g, a, b, y: g, lambda xp, g, a, b, y: -g),
    "mul": (lambda xp, a, b: a * b, lambda xp, g, a, b, y: g * b, lambda xp, g, a, b, y: g * a),
    "div": (
        _divide,
        lambda xp, g, a, b, y: g / b,
        lambda xp, g, a, b, y: -g * a / (b * b),
    ),
    "power": (
        _power,
        lambda xp, g, a, b, y: g * b * xp.power(a, b - 1),
        lambda xp, g, a, b, y: g * y * xp.log(a),
    ),
    # ties send the gradient to lhs, as MXNet's ge/lt (le/gt) pairs do
    "maximum": (
        lambda xp, a, b: xp.maximum(a, b),
        lambda xp, g, a, b, y: g * (a >= b),
        lambda xp, g, a, b, y: g * (a < b),
    ),
    "minimum": (
        lambda xp, a, b: xp.minimum(a, b),
        lambda xp, g, a, b, y: g * (a <= b),
        lambda xp, g, a, b, y: g * (a > b),
    ),
    "hypot": (
        lambda xp, a, b: xp.hypot(a, b),
        lambda xp, g, a, b, y: g * a / y,
        lambda xp, g, a, b, y: g * b / y,
    ),
}


def _no_gradient(xp, g, a, b, y):
    """Comparisons are piecewise constant: MXNet gives their inputs a zero gradient."""
    return xp.zeros_like(g)


def float_only(xp, operand, g, grad):
    """``grad``, or zeros for integer operands: MXNet's mod has no integer gradient."""
    return grad if operand.dtype.kind == "f" else xp.zeros_like(g)


def mxnet_mod(xp, a, b):
    """``a mod b`` with the divisor's sign (Python's %), and 0 where ``b`` is 0, as MXNet gives.

    MXNet's kernel tests the divisor first, so a zero divisor gives 0 for every
    dtype and every ``a`` (NaN included) where NumPy would give NaN.
    """
    zero = b == 0
    safe = xp.where(zero, xp.ones_like(b), b)
    return xp.where(zero, xp.zeros_like(b), xp.mod(a, safe))


def _compare(test):
    return (lambda xp, a, b: test(a, b), _no_gradient, _no_gradient)


# comparisons give 1 or 0 in the inputs' dtype
_RULES.update(
    {
        "equal": _compare(lambda a, b: a == b),
        "not_equal": _compare(lambda a, b: a != b),
        "greater": _compare(lambda a, b: a > b),
        "greater_equal": _compare(lambda a, b: a >= b),
        "lesser": _compare(lambda a, b: a < b),
        "lesser_equal": _compare(lambda a, b: a <= b),
        # modulo takes the sign of the divisor, as Python's % and MXNet's mod do
        "mod": (
            mxnet_mod,
            lambda xp, g, a, b, y: float_only(xp, a, g, g),
            lambda xp, g, a, b, y: float_only(xp, a, g, -g * xp.floor(a / b)),
        ),
    }
)

# (MXNet name, rule, aliases) of the equal-shape ops
_ELEMWISE = [
    ("elemwise_add", "add", ("_add", "_plus", "_Plus")),
    ("elemwise_sub", "sub", ("_sub", "_minus", "_Minus")),
    ("elemwise_mul", "mul", ("_mul", "_Mul")),
    ("elemwise_div", "div", ("_div", "_Div")),
    ("_power", "power", ("_Power",)),
    ("_maximum", "maximum", ("_Maximum",)),
    ("_minimum", "minimum", ("_Minimum",)),
    ("_hypot", "hypot", ("_Hypot",)),
    ("_equal", "equal", ("_Equal",)),
    ("_not_equal", "not_equal", ("_Not_Equal",)),
    ("_greater", "greater", ("_Greater",)),
    ("_greater_equal", "greater_equal", ("_Greater_Equal",)),
    ("_lesser", "lesser", ("_Lesser",)),
    ("_lesser_equal", "lesser_equal", ("_Lesser_Equal",)),
    ("_mod", "mod", ("_Mod",)),
]

_BROADCAST = [
    ("broadcast_add", "add", ("broadcast_plus",)),
    ("broadcast_sub", "sub", ("broadcast_minus",)),
    ("broadcast_mul", "mul", ()),
    ("broadcast_div", "div", ()),
    ("broadcast_power", "power", ()),
    ("broadcast_maximum", "maximum", ()),
    ("broadcast_minimum", "minimum", ()),
    ("broadcast_equal", "equal", ()),
    ("broadcast_not_equal", "not_equal", ()),
    ("broadcast_greater", "greater", ()),
    ("broadcast_greater_equal", "greater_equal", ()),
    ("broadcast_lesser", "lesser", ()),
    ("broadcast_lesser_equal", "lesser_equal", ()),
    ("broadcast_mod", "mod", ()),
    ("broadcast_hypot", "hypot", ()),
]


# -- shapes -------------------------------------------------------------------


def _merge_all(names, in_shapes, out_shapes):
    """One shape agreeing with every input and the output, given to all of them."""
    shape = None
    for name, s in zip((*names, "output"), (*in_shapes, out_shapes[0]), strict=True):
        shape = merge_shape(shape, s, name)
    return [shape] * len(in_shapes), [shape]


def _equal_shapes(p, in_shapes, out_shapes, aux_shapes):
    ins, outs = _merge_all(_OPERANDS, in_shapes, out_shapes)
    return ins, outs, aux_shapes


def broadcast_shape(lhs, rhs):
    """The broadcast of two shapes (0 = unknown stays unknown), or raise a mismatch."""
    ndim = max(len(lhs), len(rhs))
    left = (1,) * (ndim - len(lhs)) + tuple(lhs)
    right = (1,) * (ndim - len(rhs)) + tuple(rhs)
    out = []
    for a, b in zip(left, right, strict=True):
        if a and b and a != b and 1 not in (a, b):
            raise mismatch("rhs", tuple(rhs), tuple(lhs), "operands could not be broadcast")
        out.append(0 if not (a and b) else max(a, b) if 1 in (a, b) else a)
    return tuple(out)


def _broadcast_shapes(p, in_shapes, out_shapes, aux_shapes):
    lhs, rhs = in_shapes
    if lhs is None or rhs is None:
        return in_shapes, out_shapes, aux_shapes  # MXNet waits for both inputs
    out = tuple(lhs) if tuple(lhs) == tuple(rhs) else broadcast_shape(lhs, rhs)
    return in_shapes, [merge_shape(out, out_shapes[0], "output")], aux_shapes


def reduce_to_shape(xp, grad, shape):
    """Sum ``grad`` over the axes along which an input of ``shape`` was broadcast."""
    if tuple(grad.shape) == tuple(shape):
        return grad
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and grad.shape[lead + i] != 1
    )
    # float16 sums accumulate in float32, as MXNet's reductions do
    wide = "float32" if grad.dtype.name == "float16" else None
    return grad.sum(axis=axes, dtype=wide).astype(grad.dtype, copy=False).reshape(shape)


# -- the operators ------------------------------------------------------------


# what each rule's gradients read besides the head gradient: the operands' values, the
# output's; the others (add, sub, the comparisons) only the operands' shapes and dtypes,
# so their training pass keeps no array alive for backward
_READS_OPERANDS = frozenset({"mul", "div", "power", "maximum", "minimum", "hypot", "mod"})
_READS_OUTPUT = frozenset({"power", "hypot"})


class OperandMeta(typing.NamedTuple):
    """What backward knows of an operand whose values it does not read: shape and dtype."""

    shape: tuple
    dtype: object


def _binary_op(name, rule, aliases, broadcast):
    forward, *gradients = _RULES[rule]
    reads_operands, reads_output = rule in _READS_OPERANDS, rule in _READS_OUTPUT

    def run_forward(ctx, p, inputs, aux):
        a, b = inputs
        out = forward(ctx.xp, a, b).astype(a.dtype, copy=False)
        if reads_operands:
            return [out], (a, b, out if reads_output else None)
        return [out], (OperandMeta(a.shape, a.dtype), OperandMeta(b.shape, b.dtype), None)

    def run_backward(ctx, p, saved, out_grads, need_grad):
        a, b, out = saved
        result = []
        for needed, gradient, arg in zip(need_grad, gradients, (a, b), strict=True):
            if not needed:
                result.append(None)
                continue
            grad = gradient(ctx.xp, out_grads[0], a, b, out)
            grad = reduce_to_shape(ctx.xp, grad, arg.shape) if broadcast else grad
            # a fresh array even where the rule passes the head gradient through
            result.append(grad.astype(arg.dtype, copy=grad is out_grads[0]))
        return result

    kind = "with broadcasting" if broadcast else "of equal-shape inputs"
    return OpDef(
        name=name,
        aliases=aliases,
        arguments=_OPERANDS,
        infer_shape=_broadcast_shapes if broadcast else _equal_shapes,
        forward=run_forward,
        backward=run_backward,
        doc=f"Element-wise {rule} of lhs and rhs {kind}.",
    )


# -- add_n --------------------------------------------------------------------


@attrs.frozen
class AddNParams:
    num_args: int = param("int", validator=positive)


def _add_n_arguments(p):
    return tuple(f"arg{i}" for i in range(p.num_args))


def _add_n_shape(p, in_shapes, out_shapes, aux_shapes):
    ins, outs = _merge_all(_add_n_arguments(p), in_shapes, out_shapes)
    return ins, outs, aux_shapes


def _add_n_forward(ctx, p, inputs, aux):
    total = inputs[0].copy()
    for x in inputs[1:]:
        total += x
    return [total], None


def _add_n_backward(ctx, p, saved, out_grads, need_grad):
    # one fresh array per input: callers may accumulate into gradients in place
    return [out_grads[0].copy() if needed else None for needed in need_grad]


ADD_N = OpDef(
    name="add_n",
    aliases=("ElementWiseSum",),
    params=AddNParams,
    arguments=_add_n_arguments,
    variadic="num_args",
    infer_shape=_add_n_shape,
    forward=_add_n_forward,
    backward=_add_n_backward,
    doc="The sum of num_args arrays of one shape.",
)


# -- where --------------------------------------------------------------------


def _where_shape(p, in_shapes, out_shapes, aux_shapes):
    condition = in_shapes[0]
    shape = _merge_all(("x", "y"), in_shapes[1:], out_shapes)[1][0]
    if condition is not None and shape is not None:
        if len(condition) == len(shape):
            shape = condition = merge_shape(shape, condition, "condition")
        elif len(condition) == 1:
            # a 1-D condition picks whole rows: one entry per row of x
            condition = merge_shape((shape[0],), condition, "condition")
        else:
            reason = "condition must have the shape of x, or be 1-D with x's rows"
            raise mismatch("condition", tuple(condition), shape, reason)
    return [condition, shape, shape], [shape], aux_shapes


def _where_type(p, in_types, out_types, aux_types):
    # x, y and the output share a dtype; the condition may have any
    values, outs, _ = same_type(p, in_types[1:], out_types, [])
    return [in_types[0], *values], outs, aux_types


def _row_mask(condition, ndim):
    mask = condition != 0
    if condition.ndim == 1 and ndim > 1:
        mask = mask.reshape((-1,) + (1,) * (ndim - 1))
    return mask


def _where_forward(ctx, p, inputs, aux):
    condition, x, y = inputs
    mask = _row_mask(condition, x.ndim)
    return [ctx.xp.where(mask, x, y)], (condition, mask)


def _where_backward(ctx, p, saved, out_grads, need_grad):
    xp, (condition, mask), grad = ctx.xp, saved, out_grads[0]
    zero = grad.dtype.type(0)
    return [
        xp.zeros_like(condition) if need_grad[0] else None,  # MXNet: zero, not None
        xp.where(mask, grad, zero) if need_grad[1] else None,
        xp.where(mask, zero, grad) if need_grad[2] else None,
    ]


WHERE = OpDef(
    name="where",
    arguments=("condition", "x", "y"),
    infer_shape=_where_shape,
    infer_type=_where_type,
    forward=_where_forward,
    backward=_where_backward,
    doc="x where condition is non-zero, else y; a 1-D condition selects rows.",
)

OPS = (
    [_binary_op(name, rule, aliases, False) for name, rule, aliases in _ELEMWISE]
    + [_binary_op(name, rule, aliases, True) for name, rule, aliases in _BROADCAST]
    + [ADD_N, WHERE]
)
