"""Reductions over axes: sum, mean, prod, max, min, nansum, nanprod, norm.

MXNet's legacy reductions share one parameter set (``axis``, ``keepdims``,
``exclude``) and one shape rule: reducing every axis without ``keepdims``
gives shape ``(1,)``, never ``()``. ``exclude=True`` reduces every axis
except the listed ones. An absent or empty ``axis`` reduces everything.

Each forward computes the reduction with ``keepdims=True`` (so backward can
broadcast against it) and reshapes the result, which costs no copy.
"""

import math

import attrs

from .base import OpDef, merge_shape, mismatch
from .params import param

__all__ = ["OPS", "reduced_axes", "reduce_shape", "accumulation_dtype"]


@attrs.frozen
class ReduceParams:
    axis: tuple = param("shape", None, optional=True)
    keepdims: bool = param("bool", False)
    exclude: bool = param("bool", False)


# -- shapes ---------------------------------------------------------------------


def reduced_axes(axis, exclude, ndim):
    """The sorted axes reduced for ``axis``/``exclude`` on an ``ndim``-D input.

    Raises ValueError (with the reason) for axes out of range or repeated.
    """
    if not axis:
        return tuple(range(ndim))
    normal = sorted(a + ndim if a < 0 else a for a in axis)
    if normal[0] < 0 or normal[-1] >= ndim:
        raise ValueError(f"reduction axis {tuple(axis)} is out of range for {ndim} dimensions")
    if len(set(normal)) != len(normal):
        raise ValueError(f"reduction axes {tuple(axis)} have duplicates")
    if exclude:
        return tuple(a for a in range(ndim) if a not in normal)
    return tuple(normal)


def reduce_shape(shape, axes, keepdims):
    """The output shape: reduced axes kept as 1, or dropped (``(1,)`` when none remain)."""
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes) or (1,)


def _infer_reduce(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is not None:
        try:
            axes = reduced_axes(p.axis, p.exclude, len(data))
        except ValueError as exc:
            raise mismatch("data", tuple(data), "an input matching axis", str(exc)) from None
        out_shapes[0] = merge_shape(reduce_shape(data, axes, p.keepdims), out_shapes[0])
    return in_shapes, out_shapes, aux_shapes


def accumulation_dtype(xp, dtype):
    """The dtype to accumulate in: float32 for float16 (MXNet does too), else the dtype."""
    return xp.float32 if dtype == xp.float16 else dtype


# -- kernels --------------------------------------------------------------------
# Each kernel pair: forward(xp, x, axes) -> kept (keepdims=True result, in the
# accumulation dtype); backward(xp, x, kept, g, axes) -> gradient (g has kept's shape).


def _sum_forward(xp, x, axes):
    return xp.sum(x, axis=axes, keepdims=True, dtype=accumulation_dtype(xp, x.dtype))


def _sum_backward(xp, x, kept, g, axes):
    return xp.broadcast_to(g, x.shape).copy()


def _mean_forward(xp, x, axes):
    return xp.mean(x, axis=axes, keepdims=True, dtype=accumulation_dtype(xp, x.dtype))


def _mean_backward(xp, x, kept, g, axes):
    count = math.prod(x.shape[a] for a in axes)
    return xp.broadcast_to(g / count, x.shape).copy()


def _extreme_backward(xp, x, kept, g, axes):
    # every position equal to the extreme gets the whole head gradient (ties duplicate)
    return g * (x == kept)


def _prod_forward(xp, x, axes):
    return xp.prod(x, axis=axes, keepdims=True, dtype=accumulation_dtype(xp, x.dtype))


def _prod_backward(xp, x, kept, g, axes):
    """Product of the other elements, exact where x has zeros (MXNet's out/x gives NaN)."""
    x = x.astype(kept.dtype, copy=False)
    zero = x == 0
    nonzero = xp.where(zero, 1, x)
    nonzero_prod = xp.prod(nonzero, axis=axes, keepdims=True)
    zeros = xp.sum(zero, axis=axes, keepdims=True)
    at_zero = xp.where(zeros == 1, nonzero_prod, 0)
    elsewhere = xp.where(zeros == 0, nonzero_prod / nonzero, 0)
    return g * xp.where(zero, at_zero, elsewhere)


def _nansum_forward(xp, x, axes):
    return _sum_forward(xp, xp.where(xp.isnan(x), 0, x), axes)


def _nansum_backward(xp, x, kept, g, axes):
    return xp.where(xp.isnan(x), 0, g)


def _nanprod_forward(xp, x, axes):
    return _prod_forward(xp, xp.where(xp.isnan(x), 1, x), axes)


def _nanprod_backward(xp, x, kept, g, axes):
    nan = xp.isnan(x)
    return xp.where(nan, 0, _prod_backward(xp, xp.where(nan, 1, x), kept, g, axes))


KERNELS = {
    "sum": (_sum_forward, _sum_backward),
    "mean": (_mean_forward, _mean_backward),
    "prod": (_prod_forward, _prod_backward),
    "max": (lambda xp, x, axes: xp.max(x, axis=axes, keepdims=True), _extreme_backward),
    "min": (lambda xp, x, axes: xp.min(x, axis=axes, keepdims=True), _extreme_backward),
    "nansum": (_nansum_forward, _nansum_backward),
    "nanprod": (_nanprod_forward, _nanprod_backward),
}


def _reduce_op(name, aliases=(), doc=""):
    kernel_forward, kernel_backward = KERNELS[name]

    def forward(ctx, p, inputs, aux):
        x = inputs[0]
        axes = reduced_axes(p.axis, p.exclude, x.ndim)
        kept = kernel_forward(ctx.xp, x, axes)
        out = kept.reshape(reduce_shape(x.shape, axes, p.keepdims)).astype(x.dtype, copy=False)
        return [out], (x, kept, axes)

    def backward(ctx, p, saved, out_grads, need_grad):
        if not need_grad[0]:
            return [None]
        x, kept, axes = saved
        g = out_grads[0].reshape(kept.shape).astype(kept.dtype, copy=False)
        grad = kernel_backward(ctx.xp, x, kept, g, axes)
        return [grad.astype(x.dtype, copy=False)]

    return OpDef(
        name=name,
        params=ReduceParams,
        infer_shape=_infer_reduce,
        forward=forward,
        backward=backward,
        aliases=aliases,
        doc=doc,
    )


# -- norm -----------------------------------------------------------------------

NORM_OUT_DTYPES = ("float16", "float32", "float64", "int32", "int64", "int8")


def _norm_ord(instance, attribute, value):
    if value not in (1, 2):
        raise ValueError("norm supports only ord=1 and ord=2")


@attrs.frozen
class NormParams:
    ord: int = param("int", 2, validator=_norm_ord)
    axis: tuple = param("shape", None, optional=True)
    out_dtype: str = param("dtype", None, optional=True, choices=NORM_OUT_DTYPES)
    keepdims: bool = param("bool", False)


def _norm_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    as_reduce = ReduceParams(axis=p.axis, keepdims=p.keepdims, exclude=False)
    return _infer_reduce(as_reduce, in_shapes, out_shapes, aux_shapes)


def _norm_infer_type(p, in_types, out_types, aux_types):
    data = in_types[0]
    if data is None and not p.out_dtype:
        data = out_types[0]  # without out_dtype the output has the input's dtype
    return [data], [p.out_dtype or data], aux_types


def _norm_forward(ctx, p, inputs, aux):
    xp, x = ctx.xp, inputs[0]
    axes = reduced_axes(p.axis, False, x.ndim)
    # integers are normed in float64; float16 in float32 (squares overflow float16)
    wide = x.astype(
        xp.float64 if x.dtype.kind in "iub" else accumulation_dtype(xp, x.dtype), copy=False
    )
    if p.ord == 1:
        kept = xp.sum(xp.abs(wide), axis=axes, keepdims=True)
    else:
        kept = xp.sqrt(xp.sum(wide * wide, axis=axes, keepdims=True))
    out = kept.reshape(reduce_shape(x.shape, axes, p.keepdims))
    return [out.astype(p.out_dtype or x.dtype, copy=False)], (x, wide, kept)


def _norm_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    xp, (x, wide, kept) = ctx.xp, saved
    g = out_grads[0].reshape(kept.shape).astype(kept.dtype, copy=False)
    if p.ord == 1:
        grad = g * xp.sign(wide)
    else:
        # the zero vector's subgradient 0 (MXNet divides 0 by 0 and returns NaN)
        safe = xp.where(kept == 0, 1, kept)
        grad = xp.where(kept == 0, 0, g / safe) * wide
    return [grad.astype(x.dtype, copy=False)]


NORM = OpDef(
    name="norm",
    params=NormParams,
    infer_shape=_norm_infer_shape,
    infer_type=_norm_infer_type,
    forward=_norm_forward,
    backward=_norm_backward,
    doc="L1 (ord=1) or L2 (ord=2) norm over the elements of axis (all by default).",
)

OPS = [
    _reduce_op("sum", aliases=("sum_axis",), doc="Sum over axes."),
    _reduce_op("mean", doc="Mean over axes."),
    _reduce_op("prod", doc="Product over axes."),
    _reduce_op("max", aliases=("max_axis",), doc="Maximum over axes."),
    _reduce_op("min", aliases=("min_axis",), doc="Minimum over axes."),
    _reduce_op("nansum", doc="Sum over axes, NaN counted as 0."),
    _reduce_op("nanprod", doc="Product over axes, NaN counted as 1."),
    NORM,
]
