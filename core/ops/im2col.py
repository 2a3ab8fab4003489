"""im2col and col2im: sliding blocks of an image as columns, and their sum back.

``im2col`` turns (N, C, *spatial) data into (N, C * prod(kernel), L), where
row ``c * prod(kernel) + k`` holds channel ``c`` under kernel offset ``k``
and column ``l`` is a window position (row-major); ``col2im`` sums such
columns back onto an image of ``output_size`` (so each is the other's
gradient). Both reuse the convolution kernels of ``conv_utils`` in their
(C, N, *spatial) working layout.
"""

import math

import attrs

from .base import OpDef, merge_shape, mismatch
from .conv_utils import (
    SPATIAL_NAMES,
    Window,
    check_window_params,
    col2im,
    conv_out_size,
    fill_window_params,
    from_work,
    im2col,
    to_work,
    work_dtype,
)
from .params import param

__all__ = ["OPS"]


@attrs.frozen(kw_only=True)
class Im2colParams:
    kernel: tuple = param("shape")
    stride: tuple = param("shape", ())
    dilate: tuple = param("shape", ())
    pad: tuple = param("shape", ())

    layout = None  # what check_window_params reads: these ops are channel-first only

    def __attrs_post_init__(self):
        check_window_params("im2col", self, ("stride", "dilate"), ("pad",))


@attrs.frozen(kw_only=True)
class Col2imParams:
    output_size: tuple = param("shape")
    kernel: tuple = param("shape")
    stride: tuple = param("shape", ())
    dilate: tuple = param("shape", ())
    pad: tuple = param("shape", ())

    layout = None

    def __attrs_post_init__(self):
        check_window_params("col2im", self, ("stride", "dilate"), ("pad",))
        if len(self.output_size) != len(self.kernel) or any(n <= 0 for n in self.output_size):
            raise ValueError(
                f"parameter output_size={self.output_size} is invalid: expected "
                f"{len(self.kernel)} positive sizes, as kernel={self.kernel}"
            )


def _positions(p, size, argument, shape):
    """Window positions per axis over spatial ``size`` (0 where a size is unknown)."""
    out = []
    for axis, geometry in enumerate(zip(size, *fill_window_params(p), strict=True)):
        n, k, _, d, pd = geometry
        if n and d * (k - 1) + 1 > n + 2 * pd:
            raise mismatch(
                argument,
                shape,
                f"spatial sizes of at least kernel={p.kernel}",
                f"axis {axis}: the dilated kernel ({d * (k - 1) + 1}) exceeds the padded "
                f"size ({n + 2 * pd})",
            )
        out.append(conv_out_size(*geometry) if n else 0)
    return tuple(out)


def _window(p, size):
    kernel, stride, dilate, pad = fill_window_params(p)
    out = tuple(conv_out_size(*g) for g in zip(size, kernel, stride, dilate, pad, strict=True))
    return Window(kernel, stride, dilate, pad, tuple(size), out)


def _im2col_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    axes = len(p.kernel)
    if len(data) != axes + 2:
        raise mismatch(
            "data",
            tuple(data),
            f"(batch, channel, {SPATIAL_NAMES[axes - 1]})",
            f"a {axes}-D kernel needs {axes + 2}-D data",
        )
    positions = _positions(p, data[2:], "data", tuple(data))
    blocks = math.prod(positions) if all(positions) else 0
    out = (data[0], data[1] * math.prod(p.kernel), blocks)
    return in_shapes, [merge_shape(out, out_shapes[0], "output")], aux_shapes


def _to_columns(xp, image, window):
    """(N, C, *spatial) -> (N, C * prod(kernel), prod(out))."""
    batch = image.shape[0]
    cols = im2col(xp, to_work(xp, image, False), window, False)
    cols = cols.reshape(cols.shape[0], batch, -1)
    return xp.ascontiguousarray(cols.transpose(1, 0, 2))


def _to_image(xp, cols, window, channels):
    """(N, C * prod(kernel), prod(out)) -> (N, C, *size), summing overlapping blocks."""
    batch = cols.shape[0]
    work = xp.ascontiguousarray(cols.transpose(1, 0, 2)).reshape(cols.shape[1], -1)
    image = col2im(xp, work, window, channels, batch, False)
    return from_work(xp, image, False)


def _im2col_forward(ctx, p, inputs, aux):
    data = inputs[0]
    window = _window(p, data.shape[2:])
    return [_to_columns(ctx.xp, data, window)], (window, data.shape[1])


def _im2col_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    (window, channels), grad = saved, out_grads[0]
    summed = _to_image(ctx.xp, grad.astype(work_dtype(grad.dtype), copy=False), window, channels)
    return [summed.astype(grad.dtype, copy=False)]


IM2COL = OpDef(
    name="im2col",
    params=Im2colParams,
    infer_shape=_im2col_infer_shape,
    forward=_im2col_forward,
    backward=_im2col_backward,
    doc="Sliding blocks of (N, C, *spatial) data as columns (N, C*prod(kernel), blocks).",
)


def _col2im_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    shape, block = tuple(data), math.prod(p.kernel)
    if len(data) != 3:
        raise mismatch("data", shape, "(batch, channel * prod(kernel), blocks)", "3-D columns")
    blocks = math.prod(_positions(p, p.output_size, "data", shape))
    if data[2] and data[2] != blocks:
        raise mismatch(
            "data",
            shape,
            f"{blocks} blocks in axis 2",
            f"output_size={p.output_size} with these kernel parameters has {blocks} blocks",
        )
    if data[1] % block:
        raise mismatch(
            "data",
            shape,
            f"axis 1 a multiple of prod(kernel)={block}",
            "axis 1 holds channel * prod(kernel) rows",
        )
    out = (data[0], data[1] // block, *p.output_size)
    return in_shapes, [merge_shape(out, out_shapes[0], "output")], aux_shapes


def _col2im_forward(ctx, p, inputs, aux):
    data = inputs[0]
    window = _window(p, p.output_size)
    channels = data.shape[1] // math.prod(p.kernel)
    image = _to_image(ctx.xp, data.astype(work_dtype(data.dtype), copy=False), window, channels)
    return [image.astype(data.dtype, copy=False)], window


def _col2im_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    return [_to_columns(ctx.xp, out_grads[0], saved)]


COL2IM = OpDef(
    name="col2im",
    params=Col2imParams,
    infer_shape=_col2im_infer_shape,
    forward=_col2im_forward,
    backward=_col2im_backward,
    doc="Sums columns (N, C*prod(kernel), blocks) back onto (N, C, *output_size) images.",
)

OPS = [IM2COL, COL2IM]
