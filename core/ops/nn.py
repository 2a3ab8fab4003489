"""Dense layers and activations: FullyConnected, Activation."""

import math

import attrs
import numpy as np

from rebind.backends import cupy_gemm as gemm
from rebind.backends import cupy_nn_kernels, cupy_row_kernels
from rebind.backends.cupy_kernels import fusable
from rebind.backends.cupy_nn_kernels import FUSED_ACTIVATIONS

from . import recycle
from .base import OpDef, known, merge_shape
from .params import param, positive
from .weight_terms import Terms

__all__ = ["OPS"]


# -- FullyConnected -----------------------------------------------------------


@attrs.frozen
class FullyConnectedParams:
    num_hidden: int = param("int", validator=positive)
    no_bias: bool = param("bool", False)
    flatten: bool = param("bool", True)


def _fc_arguments(p):
    return ("data", "weight") if p.no_bias else ("data", "weight", "bias")


def _fc_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, hidden = in_shapes[0], p.num_hidden
    out = None
    if data is not None:
        if p.flatten:
            rest = data[1:]
            in_dim = math.prod(rest) if known(rest) else 0
            out = (data[0], hidden)
        else:
            in_dim, out = data[-1], (*data[:-1], hidden)
        in_shapes[1] = merge_shape((hidden, in_dim), in_shapes[1], "weight")
    if not p.no_bias:
        in_shapes[2] = _bias_shape(hidden, in_shapes[2])
    out = merge_shape(out, out_shapes[0], "output")
    if data is not None and out is not None and p.flatten and not data[0] and out[0]:
        in_shapes[0] = (out[0], *data[1:])  # batch size learned from the consumer
    return in_shapes, [out], aux_shapes


def _bias_shape(hidden, given):
    """The bias shape: (num_hidden,), or (num_hidden, 1) as MXNet also accepts."""
    if given is not None and len(given) == 2:
        return merge_shape((hidden, 1), given, "bias")
    return merge_shape((hidden,), given, "bias")


# dtypes whose products BLAS computes (float16 runs NumPy's own loops, in another order)
_BLAS_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
# the most rows for which a column_major_out product is computed column-major
_COLUMN_MAJOR_ROWS = 256


def _fc_forward(ctx, p, inputs, aux):
    xp = ctx.xp
    data, weight = inputs[0], inputs[1]
    flat = data.reshape(data.shape[0], -1) if p.flatten else data.reshape(-1, data.shape[-1])
    if data.ndim > 2 and not flat.flags.c_contiguous:
        # a view in another memory order (a batch-last convolution stack's): row-major
        # rows, so the product is the one the plain graph computes
        flat = xp.ascontiguousarray(flat)
    if flat.shape[0] == 1:
        # one row (batch-1 inference): a matrix-vector product, which BLAS streams
        # through the weight once, faster than the one-row matrix product
        out = xp.dot(weight, flat[0]).reshape(1, -1)
    elif (
        ctx.column_major_out and flat.shape[0] <= _COLUMN_MAJOR_ROWS and flat.dtype in _BLAS_DTYPES
    ):
        # (weight . data^T)^T: the same product, column-major, which OpenBLAS computes
        # faster than the row-major one for a few rows (2x at 16, 12% at 128, even at 512)
        out = xp.matmul(weight, flat.T).T
    else:
        # matmul, not dot: NumPy's dot is up to 20% slower for transposed operands
        rows, hidden = flat.shape[0], weight.shape[0]
        if (
            xp is np
            and rows * hidden * flat.itemsize >= recycle.RECYCLE_MIN_BYTES
            and flat.dtype == weight.dtype
        ):
            out = xp.matmul(flat, weight.T, out=recycle.take((rows, hidden), flat.dtype))
        else:
            out = gemm.matmul(xp, flat, weight.T)
    if not p.no_bias:
        out += inputs[2].reshape(-1)  # a (num_hidden, 1) bias adds as (num_hidden,)
    if not p.flatten:
        out = out.reshape(*data.shape[:-1], p.num_hidden)
    bias_2d = not p.no_bias and inputs[2].ndim == 2
    return [out], (data.shape, flat, weight, bias_2d)


def _fc_backward(ctx, p, saved, out_grads, need_grad):
    xp = ctx.xp
    data_shape, flat, weight, bias_2d = saved
    grad = out_grads[0].reshape(-1, p.num_hidden)
    grads = [None] * (2 if p.no_bias else 3)
    if need_grad[0]:
        if flat.flags.f_contiguous and not flat.flags.c_contiguous:
            # column-major data (a column_major_out producer): the data gradient in the
            # same layout, so the producer's element-wise backward runs on equal layouts
            grads[0] = xp.matmul(weight.T, grad.T).T.reshape(data_shape)
        else:
            grads[0] = gemm.matmul(xp, grad, weight).reshape(data_shape)
    terms = ctx.weight_grad_terms
    if need_grad[1]:
        grads[1] = Terms(xp, terms, grad, flat) if terms else gemm.matmul(xp, grad.T, flat)
    if not p.no_bias and need_grad[2]:
        if bias_2d:  # a (num_hidden, 1) bias gets its gradient in its own shape
            grads[2] = bias_gradient(xp, grad).reshape(-1, 1)
        else:
            grads[2] = Terms(xp, terms, grad) if terms else bias_gradient(xp, grad)
    return grads


def bias_gradient(xp, grad):
    """A FullyConnected's bias gradient, the column sums of its (rows, hidden) gradient.

    On a GPU, one kernel's thread per column (``cupy_row_kernels.column_sums``)
    in place of CuPy's reduction, whose host time a small network's step feels.
    """
    if grad.shape[0] <= cupy_row_kernels.MAX_COLUMN_ROWS and fusable(grad, contiguous=True):
        return cupy_row_kernels.column_sums(xp, grad)
    return grad.sum(axis=0)


FULLY_CONNECTED = OpDef(
    name="FullyConnected",
    params=FullyConnectedParams,
    arguments=_fc_arguments,
    infer_shape=_fc_infer_shape,
    forward=_fc_forward,
    backward=_fc_backward,
    doc="out = data . weight^T + bias, data flattened to 2-D unless flatten=False.",
)


# -- Activation ---------------------------------------------------------------

ACT_TYPES = ("relu", "sigmoid", "tanh", "softrelu", "softsign")


@attrs.frozen
class ActivationParams:
    act_type: str = param("str", choices=ACT_TYPES)


def _act_forward(ctx, p, inputs, aux):
    xp, x = ctx.xp, inputs[0]
    if p.act_type in FUSED_ACTIVATIONS and fusable(x):  # one CuPy kernel
        inplace = ctx.inplace and x.flags.c_contiguous
        out = cupy_nn_kernels.activation_forward(xp, p.act_type, x, inplace)
        return [out], (None, out) if inplace else (_input_if_read(p.act_type, x), out)
    if ctx.inplace and p.act_type in INPLACE_ACT_TYPES:
        return [_activate_in_place(xp, p.act_type, x)], (None, x)
    if p.act_type == "relu":
        out = xp.maximum(x, 0)
    elif p.act_type == "sigmoid":
        out = 1 / (1 + xp.exp(-x))
    elif p.act_type == "tanh":
        out = xp.tanh(x)
    elif p.act_type == "softrelu":
        out = xp.logaddexp(0, x)
    else:
        out = x / (1 + xp.abs(x))
    out = out.astype(x.dtype, copy=False)
    return [out], (_input_if_read(p.act_type, x), out)


def _input_if_read(act_type, x):
    """``x`` where backward reads the input (softrelu, softsign), else None.

    The others' derivatives follow from their output; keeping the input alive
    for nothing would hold, say, a slice's whole base array until backward.
    """
    return None if act_type in INPLACE_ACT_TYPES else x


# activations whose backward needs only their output, so they may overwrite their input
INPLACE_ACT_TYPES = ("relu", "sigmoid", "tanh")


def activation_derivative(act_type, out):
    """The derivative of a relu, sigmoid or tanh at its outputs ``out``, as backward takes it."""
    if act_type == "relu":
        return out > 0
    if act_type == "sigmoid":
        return out * (1 - out)
    return 1 - out * out


def _activate_in_place(xp, act_type, x):
    if act_type == "relu":
        return xp.maximum(x, 0, out=x)
    if act_type == "tanh":
        return xp.tanh(x, out=x)
    xp.negative(x, out=x)  # sigmoid: 1 / (1 + exp(-x)), step by step in x's memory
    xp.exp(x, out=x)
    x += 1
    return xp.reciprocal(x, out=x)


def _act_backward(ctx, p, saved, out_grads, need_grad):
    xp, (x, out), grad = ctx.xp, saved, out_grads[0]
    if not need_grad[0]:
        return [None]
    if ctx.grad_passthrough:  # the max pooling reading the output applied the derivative
        return [grad]
    if p.act_type in FUSED_ACTIVATIONS and fusable(out, grad, same_shape=True):
        inplace = ctx.grad_inplace and grad.flags.c_contiguous
        return [cupy_nn_kernels.activation_backward(xp, p.act_type, out, grad, inplace)]
    if p.act_type in INPLACE_ACT_TYPES:
        local = activation_derivative(p.act_type, out)
    elif p.act_type == "softrelu":
        local = 1 / (1 + xp.exp(-x))
    else:
        local = 1 / (1 + xp.abs(x)) ** 2
    if ctx.grad_inplace and grad.dtype == out.dtype and grad.shape == out.shape:
        grad *= local  # the same product, in the memory of the gradient received
        return [grad]
    return [(grad * local).astype(out.dtype, copy=False)]


ACTIVATION = OpDef(
    name="Activation",
    params=ActivationParams,
    forward=_act_forward,
    backward=_act_backward,
    doc="Element-wise activation: relu, sigmoid, tanh, softrelu (log(1+e^x)), softsign.",
)

OPS = [FULLY_CONNECTED, ACTIVATION]
