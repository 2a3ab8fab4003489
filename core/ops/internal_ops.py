"""MXNet's internal operators: slice assignment, copies, gradient plumbing, dense
versions of the sparse-storage helpers, and internal twins of public operators.

Several are another operator under a second name (``_grad_add`` is
``elemwise_add`` without a gradient, ``_rnn_param_concat`` is ``Concat``,
``_scatter_*`` behave as their dense operators on dense storage); those reuse
the public OpDef's kernels.
"""

import attrs

from .base import OpDef, merge_shape, mismatch
from .binary import OPS as BINARY_OPS
from .params import param
from .reduce import OPS as REDUCE_OPS
from .reduce import ReduceParams, accumulation_dtype, reduce_shape, reduced_axes
from .scalar import OPS as SCALAR_OPS
from .shape_join import OPS as JOIN_OPS
from .shape_slice import SliceParams, _slice_plan, optional_ints

__all__ = ["OPS"]


def _named(ops, name):
    return next(op for op in ops if op.name == name)


def _twin(ops, public, name, **changes):
    """The public operator ``public`` under MXNet's internal ``name``."""
    return attrs.evolve(_named(ops, public), name=name, aliases=(), **changes)


# -- _slice_assign, _slice_assign_scalar ----------------------------------------------------


def _slice_assign_infer(p, in_shapes, out_shapes, aux_shapes):
    lhs = merge_shape(in_shapes[0], out_shapes[0], "lhs")
    ins = [lhs, *in_shapes[1:]]
    if lhs is not None and len(ins) == 2:
        ins[1] = merge_shape(_slice_plan(p, lhs, allow_empty=True)[1], ins[1], "rhs")
    return ins, [lhs], aux_shapes


def _slice_assign_forward(ctx, p, inputs, aux):
    out = inputs[0].copy()
    index, shape = _slice_plan(p, out.shape, allow_empty=True)
    if all(shape):  # MXNet leaves the data alone where the range is empty
        out[index] = inputs[1] if len(inputs) == 2 else p.scalar
    return [out], None


@attrs.frozen(kw_only=True)  # MXNet's order: the optional scalar before the required bounds
class SliceAssignScalarParams:
    scalar: float = param("float", 0.0)
    begin: tuple = optional_ints()
    end: tuple = optional_ints()
    step: tuple = optional_ints(())

    def __attrs_post_init__(self):
        SliceParams(self.begin, self.end, self.step)  # the same checks as slice's


# -- copies and identities ------------------------------------------------------------------


def _copy_forward(ctx, p, inputs, aux):
    return [inputs[0].copy()], None


def _pass_backward(ctx, p, saved, out_grads, need_grad):
    return [out_grads[0].copy() if need_grad[0] else None]


def _like_rhs_forward(ctx, p, inputs, aux):
    return [inputs[0].copy()], inputs[1]


def _like_rhs_backward(ctx, p, saved, out_grads, need_grad):
    rhs = ctx.xp.zeros_like(saved) if need_grad[1] else None
    return [out_grads[0].copy() if need_grad[0] else None, rhs]


@attrs.frozen
class SetValueParams:
    src: float = param("float")


def _out_shape(ctx, name):
    shape = ctx.out_shapes[0] if ctx.out_shapes else None
    if shape is None or not all(shape):
        raise ValueError(f"{name}: the target must be given (out=...); it has no shape of its own")
    return shape


def _set_value_forward(ctx, p, inputs, aux):
    shape = _out_shape(ctx, "_set_value")
    return [ctx.backend.full(shape, p.src, "float32", ctx.device_id)], None


def _no_gradient_forward(ctx, p, inputs, aux):
    shape = _out_shape(ctx, "_NoGradient")
    return [ctx.backend.full(shape, 0, "float32", ctx.device_id)], None


def _no_inputs_shape(p, in_shapes, out_shapes, aux_shapes):
    return in_shapes, out_shapes, aux_shapes


def _float_out(p, in_types, out_types, aux_types):
    return in_types, [out_types[0] or "float32"], aux_types


# -- cast_storage ----------------------------------------------------------------------------


@attrs.frozen
class CastStorageParams:
    stype: str = param("str", choices=("csr", "default", "row_sparse"))


def _cast_storage_forward(ctx, p, inputs, aux):
    """The values of the cast array, on the dense arrays this kernel receives.

    Storage itself is the array layer's business: ``mx.nd.cast_storage`` and
    ``NDArray.tostype`` build the csr / row_sparse array (ndarray/sparse_create.py);
    a bound graph that runs this kernel on dense buffers holds the same values.
    """
    return [inputs[0].copy()], None


# -- _square_sum ------------------------------------------------------------------------------


def _square_sum_infer(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is not None:
        try:
            axes = reduced_axes(p.axis, p.exclude, len(data))
        except ValueError as exc:
            raise mismatch("data", tuple(data), "an input matching axis", str(exc)) from None
        out_shapes = [merge_shape(reduce_shape(data, axes, p.keepdims), out_shapes[0])]
    return in_shapes, out_shapes, aux_shapes


def _square_sum_forward(ctx, p, inputs, aux):
    data, xp = inputs[0], ctx.xp
    axes = reduced_axes(p.axis, p.exclude, data.ndim)
    work = data.astype(accumulation_dtype(xp, data.dtype), copy=False)
    total = (work * work).sum(axis=axes, keepdims=True)
    out = total.reshape(reduce_shape(data.shape, axes, p.keepdims)).astype(data.dtype, copy=False)
    return [out], (data, total.shape)


def _square_sum_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    data, kept = saved
    return [(2 * data * out_grads[0].reshape(kept)).astype(data.dtype, copy=False)]


OPS = [
    OpDef(
        name="_slice_assign",
        aliases=("_crop_assign",),
        params=SliceParams,
        arguments=("lhs", "rhs"),
        infer_shape=_slice_assign_infer,
        forward=_slice_assign_forward,
        doc="lhs with rhs written into lhs[begin:end:step].",
    ),
    OpDef(
        name="_slice_assign_scalar",
        aliases=("_crop_assign_scalar",),
        params=SliceAssignScalarParams,
        infer_shape=_slice_assign_infer,
        forward=_slice_assign_forward,
        doc="data with scalar written into data[begin:end:step].",
    ),
    OpDef(
        name="_set_value",
        params=SetValueParams,
        arguments=(),
        infer_shape=_no_inputs_shape,
        infer_type=_float_out,
        forward=_set_value_forward,
        doc="Fill the target (out=) with src.",
    ),
    OpDef(name="_copyto", forward=_copy_forward, doc="A copy of data (into out=)."),
    OpDef(
        name="_identity_with_attr_like_rhs",
        arguments=("lhs", "rhs"),
        forward=_like_rhs_forward,
        backward=_like_rhs_backward,
        doc="lhs, with shape and dtype constrained to rhs's.",
    ),
    OpDef(
        name="_NoGradient",
        arguments=(),
        infer_shape=_no_inputs_shape,
        infer_type=_float_out,
        forward=_no_gradient_forward,
        doc="Placeholder gradient of an input that has none (zeros).",
    ),
    OpDef(
        name="_CrossDeviceCopy",
        forward=_copy_forward,
        backward=_pass_backward,
        doc="A copy of data on the consumer's device.",
    ),
    OpDef(
        name="cast_storage",
        params=CastStorageParams,
        forward=_cast_storage_forward,
        backward=_pass_backward,
        doc="Convert storage type (default, csr, row_sparse); the values are unchanged.",
    ),
    OpDef(
        name="_square_sum",
        params=ReduceParams,
        infer_shape=_square_sum_infer,
        forward=_square_sum_forward,
        backward=_square_sum_backward,
        doc="Sum of squares over axis (dense storage).",
    ),
    _twin(
        BINARY_OPS,
        "elemwise_add",
        "_grad_add",
        backward=None,
        doc="lhs + rhs, the executor's gradient accumulation.",
    ),
    _twin(
        BINARY_OPS,
        "elemwise_div",
        "_scatter_elemwise_div",
        doc="lhs / rhs (row_sparse lhs keeps its rows in MXNet; dense here).",
    ),
    _twin(
        SCALAR_OPS,
        "_plus_scalar",
        "_scatter_plus_scalar",
        doc="data + scalar (on stored values only for sparse data in MXNet; dense here).",
    ),
    _twin(
        SCALAR_OPS,
        "_minus_scalar",
        "_scatter_minus_scalar",
        doc="data - scalar (on stored values only for sparse data in MXNet; dense here).",
    ),
    _twin(
        JOIN_OPS,
        "Concat",
        "_rnn_param_concat",
        doc="Concat of RNN parameters (MXNet's Concat variant for the fused RNN).",
    ),
    _twin(
        REDUCE_OPS,
        "sum",
        "_broadcast_backward",
        backward=None,
        doc="Sum over axis: the gradient of a broadcast (internal).",
    ),
]
