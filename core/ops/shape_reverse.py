"""reverse (alias flip): the order of elements reversed along some axes.

MXNet's BidirectionalCell uses it to put the backward direction's merged
outputs back in time order. Forward and backward are both a flip, so the op
keeps the shape and the gradient is the head gradient flipped the same way.
"""

import attrs

from .base import OpDef, elementwise_shape
from .params import param
from .shape import normalize_axis

__all__ = ["OPS"]


@attrs.frozen
class ReverseParams:
    axis: tuple = param("shape")


def _axes(p, shape):
    return tuple(sorted({normalize_axis(a, len(shape), shape) for a in p.axis}))


def _reverse_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    in_shapes, out_shapes, aux_shapes = elementwise_shape(p, in_shapes, out_shapes, aux_shapes)
    if in_shapes[0] is not None:
        _axes(p, in_shapes[0])  # an axis the data lacks is an error here, not at run time
    return in_shapes, out_shapes, aux_shapes


def _reverse_forward(ctx, p, inputs, aux):
    data = inputs[0]
    axes = _axes(p, data.shape)
    return [ctx.xp.flip(data, axis=axes) if axes else data], axes


def _reverse_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    grad = out_grads[0]
    return [ctx.xp.flip(grad, axis=saved) if saved else grad]


REVERSE = OpDef(
    name="reverse",
    aliases=("flip",),
    params=ReverseParams,
    infer_shape=_reverse_infer_shape,
    forward=_reverse_forward,
    backward=_reverse_backward,
    doc="Reverse the order of elements along the given axes (one int or a tuple).",
)

OPS = [REVERSE]
