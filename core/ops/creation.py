"""Array creators: ``_zeros``, ``_ones``, ``_full``, ``_arange`` (no inputs) and
``zeros_like``, ``ones_like``.

The creators' shape comes from their ``shape`` parameter, where a 0 is a
dimension left to shape inference: ``_zeros(shape=(0, H))`` (an RNN's begin
state) learns its batch size from the consumer, through ``out_shapes``. The
forward pass completes the parameter with the shape inference settled at bind
time (``OpContext.out_shapes``), as MXNet fills the output it allocated.
"""

import math

import attrs
import numpy as np

from ..errors import ShapeError
from .base import ArgShapeMismatch, OpDef, known, merge_shape
from .params import param, positive

__all__ = ["OPS"]

DTYPES = ("float32", "float64", "float16", "uint8", "int8", "int32", "int64", "bool")


def _shape_param(shape):
    """The parameter as a partial shape: () (MXNet's default) is nothing known.

    An unknown dimension may be written 0 (MXNet's legacy form) or -1 (the form
    MXNet 1.9 also reads: ``mx.sym.ones(shape=(-1, -1))`` learns both from its consumer).
    """
    return tuple(max(int(d), 0) for d in shape) if shape else None


@attrs.frozen
class InitParams:
    shape: tuple = param("shape", ())
    ctx: str = param("str", "")  # placement is the executor's; the value is not used
    dtype: str = param("dtype", "float32", choices=DTYPES)


@attrs.frozen(kw_only=True)  # MXNet's order puts the required value last
class FullParams:
    shape: tuple = param("shape", ())
    ctx: str = param("str", "")
    dtype: str = param("dtype", "float32", choices=DTYPES)
    value: float = param("float")


def _creator_shape(p, in_shapes, out_shapes, aux_shapes):
    return in_shapes, [merge_shape(_shape_param(p.shape), out_shapes[0], "output")], aux_shapes


def _creator_type(p, in_types, out_types, aux_types):
    return in_types, [p.dtype], aux_types


def _settled_shape(ctx, partial, name):
    """``partial`` completed by the shape inference of the executor (ctx.out_shapes)."""
    inferred = ctx.out_shapes[0] if ctx.out_shapes else None
    try:
        shape = merge_shape(partial, inferred)
    except ArgShapeMismatch:
        shape = None  # bound with a shape its own parameter contradicts
    if not known(shape):
        raise ShapeError(
            f"{name}: output shape unknown or contradictory (parameter {partial}, inferred "
            f"{inferred}); give it in the shape parameter or let shape inference learn it "
            f"from the consumer"
        )
    return tuple(shape)


def _filler(name, value_of):
    def run_forward(ctx, p, inputs, aux):
        shape = _settled_shape(ctx, _shape_param(p.shape), name)
        return [ctx.backend.full(shape, value_of(p), p.dtype, ctx.device_id)], None

    return run_forward


def _creator(name, params, value_of, doc):
    return OpDef(
        name=name,
        params=params,
        arguments=(),
        infer_shape=_creator_shape,
        infer_type=_creator_type,
        forward=_filler(name, value_of),
        doc=doc,
    )


# -- _arange ------------------------------------------------------------------


def _nonzero(instance, attribute, value):
    if value == 0:
        raise ValueError("step must not be 0")


@attrs.frozen
class ArangeParams:
    start: float = param("float")
    stop: float = param("float", None, optional=True)
    step: float = param("float", 1.0, validator=_nonzero)
    repeat: int = param("int", 1, validator=positive)
    infer_range: bool = param("bool", False)
    ctx: str = param("str", "")
    dtype: str = param("dtype", "float32", choices=DTYPES[:-1])

    def __attrs_post_init__(self):
        if self.open_ended:
            return
        low, high = self.bounds
        if (self.step > 0 and not low < high) or (self.step < 0 and not low > high):
            raise ValueError(f"invalid range (start, stop, step) = ({low}, {high}, {self.step})")

    @property
    def open_ended(self):
        """Whether the length comes from the consumer (infer_range without stop)."""
        return self.infer_range and self.stop is None

    @property
    def bounds(self):
        """(start, stop); a missing stop means the range [0, start), unless open-ended."""
        if self.stop is None and not self.infer_range:
            return 0.0, self.start
        return self.start, self.stop

    @property
    def length(self):
        """The output length, or 0 (unknown) when open-ended."""
        if self.open_ended:
            return 0
        low, high = self.bounds
        return math.ceil((high - low) / self.step) * self.repeat


def _arange_shape(p, in_shapes, out_shapes, aux_shapes):
    return in_shapes, [merge_shape((p.length,), out_shapes[0], "output")], aux_shapes


def _arange_forward(ctx, p, inputs, aux):
    xp = ctx.xp
    start, _ = p.bounds
    (length,) = _settled_shape(ctx, (p.length,), "_arange")
    with ctx.backend.device(ctx.device_id):
        index = xp.arange(length, dtype="int64") // p.repeat
    # start + i * step in the output dtype, as MXNet's kernel computes it
    dtype = np.dtype(p.dtype)
    # casts wrap as C's do (MXNet: arange(50, -50, -2, dtype='uint8') steps by 254)
    # (NumPy scalars: CuPy takes those, not NumPy arrays, beside its own)
    step, begin = (np.asarray(v).astype(dtype)[()] for v in (p.step, start))
    out = index.astype(dtype) * step + begin
    return [out.astype(dtype, copy=False)], None


ARANGE = OpDef(
    name="_arange",
    params=ArangeParams,
    arguments=(),
    infer_shape=_arange_shape,
    infer_type=_creator_type,
    forward=_arange_forward,
    doc=(
        "start, start + step, ... up to stop (exclusive), each repeated `repeat` times; "
        "with infer_range and no stop, as many as the consumer needs."
    ),
)


# -- zeros_like / ones_like ---------------------------------------------------


def _like(value):
    def run_forward(ctx, p, inputs, aux):
        return [ctx.xp.full_like(inputs[0], value)], None

    return run_forward


def _zero_gradient(ctx, p, saved, out_grads, need_grad):
    return [ctx.xp.zeros_like(out_grads[0]) if need_grad[0] else None]


def _like_op(name, value):
    return OpDef(
        name=name,
        forward=_like(value),
        backward=_zero_gradient,
        doc=f"An array of {value}s with the input's shape and dtype; the gradient is zero.",
    )


OPS = [
    _creator("_zeros", InitParams, lambda p: 0, "An array of zeros of the given shape."),
    _creator("_ones", InitParams, lambda p: 1, "An array of ones of the given shape."),
    _creator("_full", FullParams, lambda p: p.value, "An array filled with value."),
    ARANGE,
    _like_op("zeros_like", 0),
    _like_op("ones_like", 1),
]
