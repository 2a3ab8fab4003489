"""Convolution (1-D, 2-D and 3-D, channel-first layouts).

One large matrix product per call over im2col columns (see ``conv_utils``):
the forward is ``weight @ im2col(data)``, the data gradient
``col2im(weight^T @ grad)`` (or ``conv_cpu``'s flipped-filter convolution),
the weight gradient ``grad @ im2col(data)^T``. On float32 NumPy arrays every
layer's forward and gradients run on oneDNN's kernels where the library is
installed (``conv_dnnl``, the ``onednn`` extra), else the forward and the
data gradient of layers with large images on ONNX Runtime's (``conv_ort``);
``REBIND_CONV_KERNELS`` picks otherwise (``torch``: PyTorch's, ``conv_torch``).
Deconvolution, the same products with data and output exchanged, is in
``deconv``.
"""

import functools

import attrs
import numpy

from rebind.backends import cupy_gemm as gemm
from rebind.backends.cupy_kernels import fusable

from . import conv_cpu, conv_dnnl, conv_ort, conv_torch, workspace
from .base import OpDef, merge_shape, mismatch
from .conv_utils import (
    SPATIAL_NAMES,
    Window,
    batch_last_for,
    check_window_params,
    col2im,
    conv_out_size,
    fill_window_params,
    from_work,
    im2col,
    to_work,
    work_dtype,
)
from .params import non_negative, param, positive

__all__ = ["OPS"]

LAYOUTS = ("NCW", "NCHW", "NCDHW", "NHWC", "NDHWC")
CUDNN_TUNE = ("off", "limited_workspace", "fastest")
# Above this many elements the training forward drops its im2col columns and
# backward rebuilds them: memory for very large layers, speed for the rest.
_KEEP_COLUMNS = 1 << 25


def _check_groups(p):
    if p.num_filter % p.num_group:
        raise ValueError(
            f"parameter num_filter={p.num_filter} is invalid: it must be a "
            f"multiple of num_group={p.num_group}"
        )


@attrs.frozen(kw_only=True)
class ConvolutionParams:
    kernel: tuple = param("shape")
    stride: tuple = param("shape", ())
    dilate: tuple = param("shape", ())
    pad: tuple = param("shape", ())
    num_filter: int = param("int", validator=positive)
    num_group: int = param("int", 1, validator=positive)
    workspace: int = param("int", 1024, validator=non_negative)
    no_bias: bool = param("bool", False)
    cudnn_tune: str = param("str", None, choices=CUDNN_TUNE, optional=True)
    cudnn_off: bool = param("bool", False)
    layout: str = param("str", None, choices=LAYOUTS, optional=True)

    def __attrs_post_init__(self):
        check_window_params("Convolution", self, ("stride", "dilate"), ("pad",))
        _check_groups(self)


def _arguments(p):
    return ("data", "weight") if p.no_bias else ("data", "weight", "bias")


def _check_data(data, spatial_axes, groups):
    if len(data) != spatial_axes + 2:
        raise mismatch(
            "data",
            data,
            f"(batch, channel, {SPATIAL_NAMES[spatial_axes - 1]})",
            f"a {spatial_axes}-D kernel needs {spatial_axes + 2}-D data",
        )
    if data[1] and data[1] % groups:
        raise mismatch(
            "data",
            data,
            f"channels divisible by num_group={groups}",
            f"{data[1]} channels cannot be split into {groups} groups",
        )


# -- Convolution ---------------------------------------------------------------


def _conv_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    kernel, stride, dilate, pad = fill_window_params(p)
    if not p.no_bias:
        in_shapes[2] = merge_shape((p.num_filter,), in_shapes[2], "bias")
    data = in_shapes[0]
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    groups = p.num_group
    _check_data(data, len(kernel), groups)
    geometry = list(zip(data[2:], kernel, stride, dilate, pad, strict=True))
    weight = merge_shape((p.num_filter, data[1] // groups, *kernel), in_shapes[1], "weight")
    for n, k, _, d, pd in geometry:
        if n and d * (k - 1) + 1 > n + 2 * pd:
            raise mismatch(
                "data",
                data,
                f"spatial sizes of at least kernel={kernel}",
                f"the dilated kernel ({d * (k - 1) + 1}) exceeds the padded input ({n + 2 * pd})",
            )
    out = [conv_out_size(*g) if g[0] else 0 for g in geometry]
    out = merge_shape((data[0], p.num_filter, *out), out_shapes[0], "output")
    # Like MXNet, learn the batch from the output, and sizes along stride-1 axes.
    spatial = [
        n or (o + d * (k - 1) - 2 * pd if o and s == 1 else 0)
        for o, (n, k, s, d, pd) in zip(out[2:], geometry, strict=True)
    ]
    in_shapes[0] = (data[0] or out[0], data[1] or weight[1] * groups, *spatial)
    in_shapes[1] = weight
    return in_shapes, [out], aux_shapes


@functools.lru_cache(maxsize=256)
def _conv_window(p, size):
    kernel, stride, dilate, pad = fill_window_params(p)
    out = tuple(conv_out_size(*g) for g in zip(size, kernel, stride, dilate, pad, strict=True))
    return Window(kernel, stride, dilate, pad, tuple(size), out)


@attrs.define
class _ConvSaved:
    """What Convolution's backward needs; ``cols`` is dropped once backward reuses its memory."""

    window: Window
    batch_last: bool
    xt: object
    w: object
    dtype: object
    cols: object = None
    # ``xt`` still holds the (N, C, *spatial) data: backward moves it to the working layout
    data_layout: bool = False
    # the forward ran on a kernel library (conv_torch, conv_dnnl): so does backward,
    # from ``xt`` and ``w``
    kernels: object = None

    @property
    def work_shape(self):
        """The output's axes after the filters' in the working layout."""
        batch = self.xt.shape[-1 if self.batch_last else 1]
        return (*self.window.out, batch) if self.batch_last else (batch, *self.window.out)


def _conv_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    window = _conv_window(p, data.shape[2:])
    kernels = _library_kernels(xp, inputs[:2], window)
    if kernels is not None:
        bias = None if p.no_bias else inputs[2]
        out, data = kernels.forward(data, inputs[1], bias, window, p.num_group)
        return [out], _ConvSaved(window, False, data, inputs[1], data.dtype, kernels=kernels)
    if conv_ort.takes_forward(xp, data, inputs[1], window):
        bias = None if p.no_bias else inputs[2]
        out = conv_ort.forward(data, inputs[1], bias, window, p.num_group)
        if out is not None:
            return [out], _saved_without_columns(ctx, p, inputs, window)
    out, saved = conv_work_forward(ctx, p, inputs[:2])
    if not p.no_bias:
        out += inputs[2].astype(out.dtype, copy=False)[:, None]
    out = out.reshape(p.num_filter, *saved.work_shape)
    out = from_work(xp, out, saved.batch_last, view=ctx.batch_last_out)
    return [out.astype(data.dtype, copy=False)], saved


def _library_kernels(xp, arrays, window):
    """The kernel library module (``conv_dnnl``, ``conv_torch``) for this call, or None."""
    setting = conv_ort.kernels_setting()
    if setting == "torch":
        return conv_torch if conv_torch.takes(xp, arrays, setting, len(window.kernel)) else None
    if conv_dnnl.takes(xp, arrays, len(window.kernel), setting):
        return conv_dnnl
    return None


def conv_work_forward(ctx, p, inputs):
    """The product of ``inputs`` (data, weight) in the working layout, without the bias.

    Returns ``(out, saved)``: ``out`` (filters, columns) over ``saved.work_shape``,
    (*spatial, N) when ``saved.batch_last``, else (N, *spatial).
    """
    xp, data, weight = ctx.xp, inputs[0], inputs[1]
    work, groups = work_dtype(data.dtype), p.num_group
    window = _conv_window(p, data.shape[2:])
    # readers that take any layout: batch last, handed over without the transposes
    batch_last = ctx.batch_last_out or batch_last_for(window)
    xt = to_work(xp, data.astype(work, copy=False), batch_last)
    cols = im2col(xp, xt, window, batch_last)
    w = weight.astype(work, copy=False).reshape(groups, p.num_filter // groups, -1)
    # the product's memory is reused next step unless it becomes the output (a view)
    scratch = xp is numpy and not ctx.batch_last_out
    target = workspace.take((groups, w.shape[1], cols.shape[1]), w.dtype) if scratch else None
    out = gemm.matmul(xp, w, cols.reshape(groups, -1, cols.shape[1]), out=target)
    out = out.reshape(p.num_filter, -1)
    saved = _ConvSaved(window, batch_last, xt, w, data.dtype)
    if ctx.is_train and cols.size <= _KEEP_COLUMNS:
        saved.cols = cols
    return out, saved


def _saved_without_columns(ctx, p, inputs, window):
    """What backward reads after a forward off the NumPy product (it rebuilds the columns)."""
    data, weight = inputs[0], inputs[1]
    batch_last = ctx.batch_last_out or batch_last_for(window)
    w = weight.reshape(p.num_group, p.num_filter // p.num_group, -1)
    return _ConvSaved(window, batch_last, data, w, data.dtype, data_layout=True)


def _filter_gradient(xp, grad, cols):
    """The weight gradient per group, ``grad . cols^T`` as (groups, filters, rows of cols).

    With fewer filters than column rows (every usual convolution) NumPy's
    product is computed transposed, ``cols . grad^T``, whose many rows OpenBLAS
    runs faster (LeNet's second convolution: 1.3 against 1.7 ms); the sums are
    the same, and transposing the small result costs little.
    """
    if xp is numpy and grad.shape[1] < cols.shape[1]:
        return xp.matmul(cols, grad.transpose(0, 2, 1)).transpose(0, 2, 1)
    return gemm.matmul(xp, grad, cols.transpose(0, 2, 1))


def _kernel_major(w, channels):
    """(1, F, C * K) weight columns in (C, K) order -> (1, F, K * C), a copy."""
    groups, filters, _ = w.shape
    return (
        w.reshape(groups, filters, channels, -1).transpose(0, 1, 3, 2).reshape(groups, filters, -1)
    )


def _conv_backward(ctx, p, saved, out_grads, need_grad):
    xp, window, dx = ctx.xp, saved.window, None
    if saved.kernels is not None:
        mask = [need_grad[0], need_grad[1], not p.no_bias and need_grad[2]]
        grads = saved.kernels.backward(out_grads[0], saved.xt, saved.w, window, p.num_group, mask)
        return grads[: len(need_grad)]
    if need_grad[0] and conv_ort.takes_data_gradient(xp, out_grads[0], saved.w, window):
        weight = saved.w.reshape(p.num_filter, -1, *window.kernel)
        dx = conv_ort.data_gradient(out_grads[0], weight, window, p.num_group)
        need_grad = need_grad if dx is None else [False, *need_grad[1:]]
    grads = [None] * len(need_grad)
    if any(need_grad):
        if saved.data_layout:
            saved.xt, saved.data_layout = to_work(xp, saved.xt, saved.batch_last), False
        grad = out_grads[0].astype(saved.w.dtype, copy=False)
        grad = to_work(xp, grad, saved.batch_last, scratch=xp is numpy)
        grads = conv_work_backward(ctx, p, saved, grad, need_grad)
    return [dx, *grads[1:]] if dx is not None else grads


def conv_work_backward(ctx, p, saved, grad, need_grad):
    """Convolution's gradients from the output's gradient in the working layout."""
    xp, window, batch_last, w = ctx.xp, saved.window, saved.batch_last, saved.w
    groups, channels = p.num_group, saved.xt.shape[0]
    batch = saved.xt.shape[-1 if batch_last else 1]
    grad = grad.reshape(groups, p.num_filter // groups, -1)
    grads = [None] * len(_arguments(p))
    cols = saved.cols
    if need_grad[1]:
        cols = im2col(xp, saved.xt, window, batch_last) if cols is None else cols
        dw = _filter_gradient(xp, grad, cols.reshape(groups, -1, cols.shape[1]))
        grads[1] = dw.reshape(p.num_filter, channels // groups, *window.kernel)
        grads[1] = grads[1].astype(saved.dtype, copy=False)
    if need_grad[0] and conv_cpu.applies(xp, window, groups, channels):
        cols = saved.cols = None  # the workspace may hand the columns' memory out again
        work = grad.reshape(p.num_filter, *saved.work_shape)
        weight = w.reshape(p.num_filter, -1)
        scratch = not (batch_last and ctx.batch_last_grad)  # copied out by from_work
        dx = conv_cpu.data_gradient(xp, weight, work, window, batch_last, scratch)
        dx = from_work(xp, dx, batch_last, view=ctx.batch_last_grad)
        grads[0] = dx.astype(saved.dtype, copy=False)
    elif need_grad[0]:
        # The data gradient's columns have the shape of im2col's: write them over the
        # saved ones (fresh pages cost as much as the product on NumPy); a second
        # backward then rebuilds them.
        spare = (
            None if cols is None or window.pointwise else cols.reshape(groups, -1, cols.shape[1])
        )
        saved.cols = None if spare is not None else saved.cols
        # off the GPU kernel, one group: the weight's columns reordered (kernel offset,
        # channel), so each offset's rows of the product are one block for col2im
        kernel_major = groups == 1 and not window.pointwise and not fusable(grad)
        wt = _kernel_major(w, channels) if kernel_major else w
        dcols = gemm.matmul(xp, wt.transpose(0, 2, 1), grad, out=spare)
        dcols = dcols.reshape(-1, dcols.shape[-1])
        dx = col2im(xp, dcols, window, channels, batch, batch_last, kernel_major)
        dx = from_work(xp, dx, batch_last, view=ctx.batch_last_grad)
        grads[0] = dx.astype(saved.dtype, copy=False)
    if not p.no_bias and need_grad[2]:
        grads[2] = grad.reshape(p.num_filter, -1).sum(axis=1).astype(saved.dtype, copy=False)
    return grads


CONVOLUTION = OpDef(
    name="Convolution",
    params=ConvolutionParams,
    arguments=_arguments,
    infer_shape=_conv_infer_shape,
    forward=_conv_forward,
    backward=_conv_backward,
    doc="N-d convolution (cross-correlation) over channel-first data, with groups and dilation.",
)

OPS = [CONVOLUTION]
