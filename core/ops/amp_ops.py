"""The casts automatic mixed precision inserts: ``amp_cast`` and ``amp_multicast``.

Both touch only the float types AMP mixes (float16 and float32): any other
input (float64, integers, bool) passes through with its own dtype, as in
MXNet. Gradients go back in the dtype of the input they belong to.
"""

import attrs

from .base import OpDef, merge_shape
from .params import param, positive
from .unary import CAST_DTYPES

__all__ = ["OPS", "AMP_FLOATS"]

# the dtypes amp_cast converts; MXNet also lists bfloat16, which NumPy lacks
AMP_FLOATS = ("float16", "float32")


def _cast_to(in_type, target):
    """The dtype an input of ``in_type`` becomes: ``target`` for AMP floats, else unchanged."""
    return target if in_type in AMP_FLOATS else in_type


# -- amp_cast --------------------------------------------------------------------


@attrs.frozen
class AmpCastParams:
    dtype: str = param("dtype", choices=CAST_DTYPES)


def _amp_cast_type(p, in_types, out_types, aux_types):
    # the output dtype follows from the input's; it says nothing about the input
    if in_types[0] is None:
        return in_types, out_types, aux_types
    return in_types, [_cast_to(in_types[0], p.dtype)], aux_types


def _amp_cast_forward(ctx, p, inputs, aux):
    x = inputs[0]
    target = _cast_to(x.dtype.name, p.dtype)
    return [x if x.dtype == target else x.astype(target)], x.dtype


def _amp_cast_backward(ctx, p, in_dtype, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    grad = out_grads[0]
    return [grad if grad.dtype == in_dtype else grad.astype(in_dtype)]


# -- amp_multicast -----------------------------------------------------------------


@attrs.frozen
class AmpMultiCastParams:
    num_outputs: int = param("int", validator=positive)
    cast_narrow: bool = param("bool", False)


def _multicast_args(p):
    return tuple(f"data_{i}" for i in range(p.num_outputs))


def _multicast_outputs(p):
    return tuple(f"output{i}" for i in range(p.num_outputs))


def _common_type(p, types):
    """float32 if any input is float32 (float16 under ``cast_narrow`` if any is float16)."""
    seek = "float16" if p.cast_narrow else "float32"
    if any(t == seek for t in types):
        return seek
    first = next((t for t in types if t in AMP_FLOATS), None)
    return "float32" if p.cast_narrow and first is None else first


def _multicast_type(p, in_types, out_types, aux_types):
    target = _common_type(p, [*in_types, *out_types])
    outs = [
        o if t is None or target is None else _cast_to(t, target)
        for t, o in zip(in_types, out_types, strict=True)
    ]
    return in_types, outs, aux_types


def _multicast_shape(p, in_shapes, out_shapes, aux_shapes):
    # output i is input i, cast: shapes agree pairwise in both directions
    merged = [
        merge_shape(i, o, f"data_{n}")
        for n, (i, o) in enumerate(zip(in_shapes, out_shapes, strict=True))
    ]
    return merged, list(merged), aux_shapes


def _multicast_forward(ctx, p, inputs, aux):
    target = _common_type(p, [x.dtype.name for x in inputs])
    outs = []
    for x in inputs:
        wanted = _cast_to(x.dtype.name, target)
        outs.append(x if x.dtype == wanted else x.astype(wanted))
    return outs, [x.dtype for x in inputs]


def _multicast_backward(ctx, p, in_dtypes, out_grads, need_grad):
    return [
        (g if g.dtype == dtype else g.astype(dtype)) if needed else None
        for g, dtype, needed in zip(out_grads, in_dtypes, need_grad, strict=True)
    ]


OPS = [
    OpDef(
        name="amp_cast",
        params=AmpCastParams,
        infer_type=_amp_cast_type,
        forward=_amp_cast_forward,
        backward=_amp_cast_backward,
        doc="Cast a float16/float32 input to dtype (other dtypes pass); the gradient is cast back.",
    ),
    OpDef(
        name="amp_multicast",
        params=AmpMultiCastParams,
        arguments=_multicast_args,
        outputs=_multicast_outputs,
        variadic="num_outputs",
        infer_shape=_multicast_shape,
        infer_type=_multicast_type,
        forward=_multicast_forward,
        backward=_multicast_backward,
        doc="Cast float inputs to the widest float type among them (narrowest with cast_narrow).",
    ),
]
