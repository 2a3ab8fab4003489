"""Pooling: max, avg, sum and lp pooling over 1-D, 2-D and 3-D channel-first data.

Each window reduction is a loop over the kernel's offsets (kh * kw strided
slices of the padded input), vectorised over batch, channels and positions;
global pooling is a plain reduction over the spatial axes. Max pooling sends
the gradient to the first maximum of each window in row-major order, as MXNet
does on ties.
"""

import functools
import math

import attrs
import numpy

from rebind.backends.cupy_kernels import fusable

from . import parallel, pooling_cpu, pooling_dnnl
from .base import OpDef, merge_shape, mismatch
from .conv_utils import (
    SPATIAL_NAMES,
    Window,
    check_layout,
    check_window_params,
    crop_spatial,
    empty_in_layout,
    fill_window_params,
    pad_spatial,
    work_dtype,
)
from .nn import activation_derivative
from .params import param

__all__ = ["OPS", "window_of"]

POOL_TYPES = ("max", "avg", "sum", "lp")
CONVENTIONS = ("valid", "full", "same")
LAYOUTS = ("NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC")


@attrs.frozen(kw_only=True)
class PoolingParams:
    kernel: tuple = param("shape", ())
    pool_type: str = param("str", "max", choices=POOL_TYPES)
    global_pool: bool = param("bool", False)
    cudnn_off: bool = param("bool", False)
    pooling_convention: str = param("str", "valid", choices=CONVENTIONS)
    stride: tuple = param("shape", ())
    pad: tuple = param("shape", ())
    p_value: int = param("int", None, optional=True)
    count_include_pad: bool = param("bool", None, optional=True)
    layout: str = param("str", None, choices=LAYOUTS, optional=True)

    def __attrs_post_init__(self):
        if self.pooling_convention == "same" and not any(self.pad):
            # 'same' computes its own padding: MXNet takes a zero pad of any length
            object.__setattr__(self, "pad", ())
        if self.kernel or not self.global_pool:
            if not self.kernel:
                raise ValueError("parameter kernel is required unless global_pool=True")
            check_window_params("Pooling", self, ("stride",), ("pad",))
        elif self.layout:
            check_layout("Pooling", self.layout, len(self.layout) - 2)
        if self.pool_type == "lp" and self.p_value not in (1, 2, 3):
            raise ValueError(
                f"parameter p_value={self.p_value} is invalid: lp pooling needs p_value 1, 2 or 3"
            )
        if self.pooling_convention == "same" and any(self.pad):
            raise ValueError(
                f"parameter pad={self.pad} is invalid: pooling_convention='same' "
                f"computes its own padding"
            )


def _hidden_outputs(p):
    """MXNet's oneDNN build keeps a hidden workspace output for max pooling."""
    return int(p.pool_type == "max" and 1 <= len(p.kernel) <= 3)


def _out_size(convention, n, k, s, pad):
    if convention == "valid":
        return (n + 2 * pad - k) // s + 1
    if convention == "full":
        return -(-(n + 2 * pad - k) // s) + 1
    return -(-(n + 2 * pad) // s)  # same: ceil(n / s)


def _check_data(p, data):
    axes = len(p.kernel) if p.kernel and not p.global_pool else len(data) - 2
    if not 1 <= axes <= 3 or len(data) != axes + 2:
        raise mismatch(
            "data",
            data,
            "3-D to 5-D (batch, channel, spatial...)"
            if p.global_pool
            else f"(batch, channel, {SPATIAL_NAMES[axes - 1]})",
            f"pooling needs {axes + 2}-D data",
        )
    if p.pooling_convention == "same" and len(data) != 3:
        raise mismatch(
            "data",
            data,
            "(batch, channel, width)",
            "pooling_convention='same' supports 1-D pooling only",
        )


def _infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    _check_data(p, data)
    if p.global_pool:
        spatial = [1] * (len(data) - 2)
    else:
        kernel, stride, _, pad = fill_window_params(p)
        for n, k, pd in zip(data[2:], kernel, pad, strict=True):
            if n and k > n + 2 * pd:
                raise mismatch(
                    "data",
                    data,
                    f"spatial sizes of at least kernel={kernel}",
                    f"kernel size {k} exceeds the padded input ({n + 2 * pd})",
                )
        spatial = [
            _out_size(p.pooling_convention, *g) if g[0] else 0
            for g in zip(data[2:], kernel, stride, pad, strict=True)
        ]
    out = merge_shape((data[0], data[1], *spatial), out_shapes[0], "output")
    in_shapes[0] = (out[0], out[1], *data[2:])
    return in_shapes, [out], aux_shapes


@functools.lru_cache(maxsize=256)
def window_of(p, size):
    """The ``Window`` of a (non-global) pooling over spatial ``size``."""
    kernel, stride, dilate, pad = fill_window_params(p)
    out = tuple(
        _out_size(p.pooling_convention, *g) for g in zip(size, kernel, stride, pad, strict=True)
    )
    return Window(kernel, stride, dilate, pad, tuple(size), out)


def _lowest(dtype):
    return -numpy.inf if dtype.kind == "f" else numpy.iinfo(dtype).min


def _power(x, p_value):
    return x if p_value == 1 else x * x if p_value == 2 else x * x * x


def _root(xp, x, p_value):
    return x if p_value == 1 else xp.sqrt(x) if p_value == 2 else xp.cbrt(x)


def _counts_pad(p):
    """Whether an average counts the padding (MXNet's default: count_include_pad unset)."""
    return p.count_include_pad is None or p.count_include_pad


def _avg_divisor(ctx, p, window, dtype):
    """Elements averaged by each window: MXNet clips windows at the padded border, and
    with count_include_pad=False also at the data border."""
    include = _counts_pad(p)
    divisor = numpy.ones((), dtype=numpy.float64)
    for n, k, s, pad, o in zip(
        window.size, window.kernel, window.stride, window.pad, window.out, strict=True
    ):
        start = numpy.arange(o) * s - pad
        end = numpy.minimum(start + k, n + pad)
        count = end - start if include else numpy.minimum(end, n) - numpy.maximum(start, 0)
        divisor = numpy.multiply.outer(divisor, count)
    return ctx.backend.asarray(divisor, dtype, ctx.device_id)


# -- window pooling -----------------------------------------------------------


def _window_forward(ctx, p, x, window, work):
    xp = ctx.xp
    fill = _lowest(x.dtype) if p.pool_type == "max" else 0
    padded = pad_spatial(xp, x, window, 2, fill)
    if p.pool_type == "max" and _one_kernel(window, padded):
        from rebind.backends import cupy_window_kernels

        padded = xp.ascontiguousarray(padded)
        return cupy_window_kernels.max_pool_forward(xp, padded, window), padded
    if p.pool_type == "max" and pooling_cpu.applies(xp, padded, window):
        return pooling_cpu.max_forward(padded, window)  # backward reads the phases
    outputs = math.prod(padded.shape[:2]) * math.prod(window.out)
    work_size = padded.size + outputs * math.prod(window.kernel)  # elements read and written
    if p.pool_type == "max" and xp is numpy and parallel.parts(padded.shape[1], work_size) > 1:
        return _max_forward_numpy(padded, window, work_size), padded
    taps = [padded[window.taps(position, 2)] for position in window.positions()]
    if p.pool_type == "max":
        out = xp.maximum(taps[0], taps[1]) if len(taps) > 1 else taps[0].copy(order="K")
        for tap in taps[2:]:
            xp.maximum(out, tap, out=out)
        return out, padded
    out = None
    for tap in taps:
        tap = _power(tap.astype(work, copy=False), p.p_value) if p.pool_type == "lp" else tap
        out = tap.astype(work, copy=True) if out is None else xp.add(out, tap, out=out)
    if p.pool_type == "avg":
        out /= _avg_divisor(ctx, p, window, work)
    elif p.pool_type == "lp":
        out = _root(xp, out, p.p_value)
    return out.astype(x.dtype, copy=False), padded


def _max_forward_numpy(padded, window, work_size):
    """Max pooling of a padded NumPy array, its channels split over the CPUs' threads."""
    out = empty_in_layout(numpy, padded, (*padded.shape[:2], *window.out))
    taps = [window.taps(position, 2) for position in window.positions()]

    def part(start, stop):
        select = (slice(None), slice(start, stop))
        source, result = padded[select], out[select]
        if len(taps) == 1:
            result[...] = source[taps[0]]
            return
        numpy.maximum(source[taps[0]], source[taps[1]], out=result)
        for tap in taps[2:]:
            numpy.maximum(result, source[tap], out=result)

    parallel.split(part, padded.shape[1], work_size)
    return out


def _max_backward(xp, padded, out, grad, window, dx):
    """Each window's gradient to its first maximum, in row-major order (MXNet on ties)."""
    taken = None  # windows whose maximum was already found
    last = tuple(k - 1 for k in window.kernel)
    for position in window.positions():
        taps = window.taps(position, 2)
        hit = padded[taps] == out
        if taken is not None:
            xp.greater(hit, taken, out=hit)  # hit and not taken
        if window.overlapping:
            target = dx[taps]
            target += grad * hit
        else:
            xp.multiply(grad, hit, out=dx[taps])
        if taken is None:
            taken = hit
        elif position != last:
            taken |= hit


def _spread_backward(ctx, p, padded, out, grad, window, dx, work):
    """avg, sum and lp: every input of a window gets a share of its gradient."""
    xp = ctx.xp
    scale = grad.astype(work, copy=False)
    if p.pool_type == "avg":
        scale = scale / _avg_divisor(ctx, p, window, work)
    elif p.pool_type == "lp" and p.p_value > 1:
        total = out.astype(work, copy=False) ** (p.p_value - 1)
        safe = xp.where(total == 0, 1, total)  # MXNet gives 0 where the norm is 0
        scale = xp.where(total == 0, 0, scale / safe)
    for position in window.positions():
        taps = window.taps(position, 2)
        part = scale
        if p.pool_type == "lp" and p.p_value > 1:
            part = _power(padded[taps].astype(work, copy=False), p.p_value - 1) * scale
        target = dx[taps]
        if window.overlapping:
            target += part
        else:
            target[...] = part


def _in_layout_of(xp, model, values):
    """``values`` copied into an array laid out in memory as ``model`` is."""
    copy = empty_in_layout(xp, model, values.shape, values.dtype)
    copy[...] = values
    return copy


def _one_kernel(window, *arrays):
    """Whether max pooling runs as one CuPy kernel (float32/float64 on a GPU, up to 3-D)."""
    return fusable(*arrays) and len(window.kernel) <= 3


def _window_backward(ctx, p, padded, out, grad, window, work):
    xp = ctx.xp
    if isinstance(padded, pooling_cpu.Phases):  # made by pooling_cpu.max_forward
        return pooling_cpu.max_backward(padded, out, grad, window, work)
    tiled = not window.overlapping and all(
        o * s == n and s == e
        for o, s, n, e in zip(window.out, window.stride, window.padded, window.extent, strict=True)
    )
    # Where the windows tile the input every element is written; elsewhere gaps stay 0.
    if p.pool_type == "max" and padded.dtype == work and _one_kernel(window, padded, out, grad):
        from rebind.backends import cupy_window_kernels

        padded = xp.ascontiguousarray(padded)
        dx = cupy_window_kernels.max_pool_backward(xp, padded, out, grad, window)
        return xp.ascontiguousarray(crop_spatial(dx, window, 2))
    # in the memory order of the input (batch last after a convolution handing that on),
    # and so the gradient received, when it comes in another (a Flatten's, in MXNet's)
    # channels on the CPUs' threads where that pays: the same operations
    split = (
        p.pool_type == "max" and xp is numpy and parallel.parts(out.shape[1], 4 * padded.size) > 1
    )
    dx = empty_in_layout(xp, padded, padded.shape, work, None if tiled or split else 0)
    if grad.strides != out.strides and not out.flags.c_contiguous:
        grad = _in_layout_of(xp, out, grad)
    if split:

        def part(start, stop):
            select = (slice(None), slice(start, stop))
            if not tiled:
                dx[select] = 0
            _max_backward(xp, padded[select], out[select], grad[select], window, dx[select])

        parallel.split(part, out.shape[1], padded.size * 4)
        if window.padded == window.size:
            return dx
        return parallel.copy(crop_spatial(dx, window, 2), 1)
    if p.pool_type == "max":
        _max_backward(xp, padded, out, grad, window, dx)
    else:
        _spread_backward(ctx, p, padded, out, grad, window, dx, work)
    if window.padded == window.size:
        return dx
    return crop_spatial(dx, window, 2).copy(order="K")


# -- global pooling -------------------------------------------------------------


def _global_forward(ctx, p, x, work):
    xp, axes = ctx.xp, tuple(range(2, x.ndim))
    if p.pool_type == "max":
        return x.max(axis=axes, keepdims=True)
    values = x.astype(work, copy=False)
    if p.pool_type == "lp":
        values = _power(values, p.p_value)
    out = (
        values.mean(axis=axes, keepdims=True)
        if p.pool_type == "avg"
        else values.sum(axis=axes, keepdims=True)
    )
    if p.pool_type == "lp":
        out = _root(xp, out, p.p_value)
    return out.astype(x.dtype, copy=False)


def _global_backward(ctx, p, x, out, grad, work):
    xp = ctx.xp
    size = int(numpy.prod(x.shape[2:]))
    grad = grad.astype(work, copy=False)
    if p.pool_type == "max":
        flat = x.reshape(x.shape[0], x.shape[1], size)
        first = flat.argmax(axis=-1)[..., None]
        hit = xp.arange(size).reshape(1, 1, size) == first
        return (hit * grad.reshape(grad.shape[0], grad.shape[1], 1)).reshape(x.shape)
    if p.pool_type == "avg":
        grad = grad / size
    if p.pool_type == "lp" and p.p_value > 1:
        total = out.astype(work, copy=False) ** (p.p_value - 1)
        safe = xp.where(total == 0, 1, total)
        grad = xp.where(total == 0, 0, grad / safe) * _power(x.astype(work), p.p_value - 1)
    return xp.broadcast_to(grad, x.shape).copy()


# -- the operator ---------------------------------------------------------------


def _forward(ctx, p, inputs, aux):
    x = inputs[0]
    work = work_dtype(x.dtype)
    if p.global_pool:
        out = _global_forward(ctx, p, x, work)
        return [out], (None, x, out)
    window = window_of(p, x.shape[2:])
    include = _counts_pad(p)
    if pooling_dnnl.takes(ctx.xp, x, p.pool_type, window, include):
        out, state = pooling_dnnl.forward(x, p.pool_type, window, include, ctx.is_train)
        return [out], (window, state, out)
    out, padded = _window_forward(ctx, p, x, window, work)
    return [out], (window, padded, out)


def _backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    window, x, out = saved
    grad = out_grads[0]
    if ctx.grad_activation:  # the activation before: its derivative at the maxima
        grad = grad * activation_derivative(ctx.grad_activation, out)
    if isinstance(x, tuple):  # pooled by oneDNN: x is its state
        return [pooling_dnnl.backward(x, grad)]
    work = work_dtype(x.dtype)
    if window is None:
        grad = _global_backward(ctx, p, x, out, grad, work)
    else:
        grad = _window_backward(ctx, p, x, out, grad, window, work)
    return [grad.astype(x.dtype, copy=False)]


POOLING = OpDef(
    name="Pooling",
    params=PoolingParams,
    hidden_outputs=_hidden_outputs,
    infer_shape=_infer_shape,
    forward=_forward,
    backward=_backward,
    doc="Max, average, sum or lp pooling over 1-D to 3-D windows, or over the whole input.",
)

OPS = [POOLING]
