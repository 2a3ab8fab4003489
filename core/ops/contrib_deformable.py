"""DeformableConvolution and ModulatedDeformableConvolution (mx.contrib), as MXNet 1.9.1.

A deformable convolution is a convolution whose every kernel tap reads the
input at its regular position plus a learned (dy, dx) offset, by bilinear
interpolation. The ``offset`` input holds, per deformable group, kernel tap
(i, j) and output position, dy at channel ``2 * (i * kernel_w + j)`` and dx
right after it; the modulated form (DCNv2) also multiplies every sample by a
``mask`` value (channel ``i * kernel_w + j`` of its deformable group).

The two MXNet kernels sample differently, and each one's gradients are exactly
the adjoint (data) and derivative (offset, mask) of its own forward:

* DeformableConvolution (``deformable_im2col.h``): a sample counts only inside
  ``[0, H) x [0, W)``; its upper corner is clamped to the last row/column (a
  sample in the last row reads that row only).
* ModulatedDeformableConvolution (``modulated_deformable_im2col.h``): a sample
  counts inside ``(-1, H) x (-1, W)``; corners outside the image read 0.

Here every sample is four (pixel index, weight) corners, gathered from the
input moved to (N, deformable group, H * W, channels per group); the columns
are then one grouped matrix product with the weight, like Convolution.

MXNet 1.9.1 computes ModulatedDeformableConvolution's backward on GPU only
(its CPU backward aborts); rebind computes it on every backend.
"""

import math

import attrs
import numpy as np

from .base import OpDef, merge_shape, mismatch
from .conv_utils import check_layout, conv_out_size, work_dtype
from .indexing import scatter_add
from .params import non_negative, param, positive

__all__ = ["OPS"]


@attrs.frozen(kw_only=True)
class DeformableConvolutionParams:
    kernel: tuple = param("shape")
    stride: tuple = param("shape", ())
    dilate: tuple = param("shape", ())
    pad: tuple = param("shape", ())
    num_filter: int = param("int", validator=positive)
    num_group: int = param("int", 1, validator=positive)
    num_deformable_group: int = param("int", 1, validator=positive)
    workspace: int = param("int", 1024, validator=non_negative)
    no_bias: bool = param("bool", False)
    layout: str = param("str", None, choices=("NCW", "NCHW", "NCDHW"), optional=True)

    def __attrs_post_init__(self):
        if len(self.kernel) != 2 or min(self.kernel) <= 0:
            raise NotImplementedError(
                f"kernel={self.kernel}: MXNet 1.9.1's deformable convolutions are 2-D only "
                "('not implemented' for other kernels); give kernel=(h, w)"
            )
        for name, floor in (("stride", 1), ("dilate", 1), ("pad", 0)):
            value = getattr(self, name)
            if value and (len(value) != 2 or min(value) < floor):
                raise ValueError(
                    f"parameter {name}={value} is invalid: expected 2 values >= {floor}"
                )
        if self.num_filter % self.num_group:
            raise ValueError(
                f"parameter num_filter={self.num_filter} is invalid: it must be a "
                f"multiple of num_group={self.num_group}"
            )
        check_layout(self.__class__.__name__, self.layout, 2)

    @property
    def window(self):
        """(kernel, stride, dilate, pad) with MXNet's defaults filled in."""
        return self.kernel, self.stride or (1, 1), self.dilate or (1, 1), self.pad or (0, 0)


@attrs.frozen(kw_only=True)
class ModulatedDeformableConvolutionParams(DeformableConvolutionParams):
    im2col_step: int = param("int", 64, validator=positive)


def _arguments(modulated):
    def names(p):
        head = ("data", "offset", "mask", "weight") if modulated else ("data", "offset", "weight")
        return head if p.no_bias else (*head, "bias")

    return names


def _check_map(name, shape, channels, out_hw, data):
    if len(shape) != 4:
        raise mismatch(name, shape, "(batch, channels, out_height, out_width)", f"{name} is 4-D")
    if shape[1] and shape[1] != channels:
        reason = "num_deformable_group * kernel taps" + (" * 2" if name == "offset" else "")
        raise mismatch(name, shape, f"{channels} channels", f"{name} needs {reason}")
    if all(out_hw) and any(s and s != o for s, o in zip(shape[2:], out_hw, strict=True)):
        raise mismatch(name, shape, f"spatial size {out_hw}", f"the output of data {data}")


def _check_data(p, data, modulated):
    """The output's (height, width) for ``data``, or an error naming what does not fit."""
    (kh, kw), stride, dilate, pad = p.window
    if len(data) != 4:
        raise mismatch("data", data, "(batch, channel, height, width)", "data must be 4-D")
    for divisor, what in (
        (p.num_group, "num_group"),
        (p.num_deformable_group, "num_deformable_group"),
    ):
        if data[1] and data[1] % divisor:
            raise mismatch("data", data, f"channels divisible by {what}={divisor}")
    if modulated and data[0] > p.im2col_step and data[0] % p.im2col_step:
        raise mismatch("data", data, f"a batch dividing im2col_step={p.im2col_step}")
    geometry = zip(data[2:], (kh, kw), stride, dilate, pad, strict=True)
    out_hw = tuple(conv_out_size(*g) if g[0] else 0 for g in geometry)
    if any(o <= 0 for o, n in zip(out_hw, data[2:], strict=True) if n):
        expected = f"spatial sizes of at least kernel={p.kernel}"
        raise mismatch("data", data, expected, "kernel size exceeds input")
    return out_hw


def _infer_shape(modulated):
    at = 3 if modulated else 2  # the weight's position among the inputs

    def infer(p, in_shapes, out_shapes, aux_shapes):
        data = in_shapes[0]
        if not p.no_bias:
            in_shapes[at + 1] = merge_shape((p.num_filter,), in_shapes[at + 1], "bias")
        if data is None:
            return in_shapes, out_shapes, aux_shapes
        out_hw = _check_data(p, data, modulated)
        taps = p.kernel[0] * p.kernel[1] * p.num_deformable_group
        if in_shapes[1] is not None:
            _check_map("offset", in_shapes[1], 2 * taps, out_hw, data)
        if modulated and in_shapes[2] is not None:
            _check_map("mask", in_shapes[2], taps, out_hw, data)
        weight = (p.num_filter, data[1] // p.num_group, *p.kernel)
        in_shapes[at] = merge_shape(weight, in_shapes[at], "weight")
        out = merge_shape((data[0], p.num_filter, *out_hw), out_shapes[0], "output")
        return in_shapes, [out], aux_shapes

    return infer


def _positions(xp, p, offset, dtype):
    """Sample rows and columns (N, dg, taps, Ho * Wo) of every tap at every output position."""
    (kh, kw), stride, dilate, pad = p.window
    n, _, out_h, out_w = offset.shape
    moves = offset.astype(dtype, copy=False).reshape(n, p.num_deformable_group, kh * kw, 2, -1)
    base_h = (xp.arange(out_h) * stride[0] - pad[0])[:, None] + xp.zeros(out_w, dtype=np.int64)
    base_w = xp.zeros(out_h, dtype=np.int64)[:, None] + (xp.arange(out_w) * stride[1] - pad[1])
    tap_h = xp.repeat(xp.arange(kh) * dilate[0], kw)[:, None]
    tap_w = xp.tile(xp.arange(kw) * dilate[1], kh)[:, None]
    rows = (base_h.reshape(1, -1) + tap_h).astype(dtype) + moves[:, :, :, 0]
    cols = (base_w.reshape(1, -1) + tap_w).astype(dtype) + moves[:, :, :, 1]
    return rows, cols


def _corners(xp, rows, cols, height, width, zero_pad):
    """The four (flat pixel index, weight, d weight / d row, d weight / d col) of every sample.

    ``zero_pad``: the modulated convention (corners outside read 0); otherwise
    DeformableConvolution's (samples outside [0, size) are 0, upper corners clamp).
    """
    t = rows.dtype.type
    if zero_pad:
        valid = (rows > -1) & (cols > -1) & (rows < height) & (cols < width)
    else:
        valid = (rows >= 0) & (cols >= 0) & (rows < height) & (cols < width)
    low_h, low_w = xp.floor(rows), xp.floor(cols)
    frac_h, frac_w = rows - low_h, cols - low_w
    low_h, low_w = low_h.astype(np.int64), low_w.astype(np.int64)
    high_h, high_w = low_h + 1, low_w + 1
    if not zero_pad:  # MXNet clamps the upper corner onto the last row / column
        top_h, top_w = low_h >= height - 1, low_w >= width - 1
        high_h, high_w = xp.where(top_h, height - 1, high_h), xp.where(top_w, width - 1, high_w)
        frac_h, frac_w = xp.where(top_h, t(0), frac_h), xp.where(top_w, t(0), frac_w)
    result = []
    for ch, cw, at_h, at_w, sign_h, sign_w in (
        (low_h, low_w, 1 - frac_h, 1 - frac_w, -1, -1),
        (low_h, high_w, 1 - frac_h, frac_w, -1, 1),
        (high_h, low_w, frac_h, 1 - frac_w, 1, -1),
        (high_h, high_w, frac_h, frac_w, 1, 1),
    ):
        inside = valid & (ch >= 0) & (cw >= 0) & (ch < height) & (cw < width)
        keep = inside.astype(rows.dtype)
        index = xp.clip(ch, 0, height - 1) * width + xp.clip(cw, 0, width - 1)
        result.append((index, at_h * at_w * keep, sign_h * at_w * keep, sign_w * at_h * keep))
    return result


def _grouped_image(xp, data, groups, dtype):
    """(N, groups, H * W, channels per group): one sample's channels are one contiguous row."""
    n, channels, height, width = data.shape
    image = data.astype(dtype, copy=False).reshape(n, groups, channels // groups, height * width)
    return xp.ascontiguousarray(xp.swapaxes(image, 2, 3))


def _gather(xp, image, index):
    """Pixels ``image[n, g, index[n, g, s]]``: (N, dg, samples, channels per group)."""
    n, groups = image.shape[:2]
    batch = xp.arange(n)[:, None, None]
    group = xp.arange(groups)[None, :, None]
    return image[batch, group, index.reshape(n, groups, -1)]


def _sample(xp, image, corners):
    """Bilinear samples (N, dg, samples, channels per group)."""
    return sum(
        _gather(xp, image, index) * weight.reshape(*weight.shape[:2], -1, 1)
        for index, weight, _, _ in corners
    )


def _columns(xp, p, samples, mask, shape):
    """Samples (masked) as grouped im2col columns (N, num_group, C / num_group * taps, L)."""
    n, channels = shape[:2]
    taps = p.kernel[0] * p.kernel[1]
    length = samples.shape[2] // taps
    if mask is not None:
        samples = samples * mask.reshape(*mask.shape[:2], taps * length, 1)
    # (N, dg, taps * L, Cg) -> (N, C, taps, L): channel-major, like MXNet's columns
    shape = (n, p.num_deformable_group, taps, length, samples.shape[-1])
    cols = xp.moveaxis(samples.reshape(shape), 4, 2)
    return cols.reshape(n, p.num_group, channels // p.num_group * taps, length)


def _forward(modulated):
    def forward(ctx, p, inputs, aux):
        xp = ctx.xp
        data, offset = inputs[0], inputs[1]
        mask = inputs[2] if modulated else None
        weight = inputs[3 if modulated else 2]
        dtype = np.dtype(work_dtype(data.dtype))
        n, channels, height, width = data.shape
        out_hw = offset.shape[2:]
        if n == 0:  # an empty batch: reshapes below cannot infer their -1 axes
            return [xp.zeros((0, p.num_filter, *out_hw), data.dtype)], (inputs, None)
        rows, cols = _positions(xp, p, offset, dtype)
        corners = _corners(xp, rows, cols, height, width, zero_pad=modulated)
        image = _grouped_image(xp, data, p.num_deformable_group, dtype)
        samples = _sample(xp, image, corners)
        if mask is not None:
            mask = mask.astype(dtype, copy=False).reshape(
                n, p.num_deformable_group, weight.shape[2] * weight.shape[3], -1
            )
        columns = _columns(xp, p, samples, mask, data.shape)
        kernel = weight.astype(dtype, copy=False).reshape(
            p.num_group, p.num_filter // p.num_group, -1
        )
        out = xp.matmul(kernel, columns).reshape(n, p.num_filter, *out_hw)
        if not p.no_bias:
            out = out + inputs[-1].astype(dtype, copy=False)[:, None, None]
        saved = (inputs, corners, image, samples, mask, columns)
        return [out.astype(data.dtype, copy=False)], saved

    return forward


def _scatter_image(xp, corners, grads, shape, groups):
    """The data gradient: every sample's channel gradients added at its four corners."""
    n, channels, height, width = shape
    target = xp.zeros((n * groups * height * width, channels // groups), dtype=grads.dtype)
    lead = (xp.arange(n)[:, None, None] * groups + xp.arange(groups)[None, :, None]) * (
        height * width
    )
    for index, weight, _, _ in corners:
        rows = (lead + index.reshape(n, groups, -1)).reshape(-1)
        values = grads * weight.reshape(n, groups, -1, 1)
        scatter_add(xp, target, rows, values.reshape(rows.shape[0], -1))
    image = target.reshape(n, groups, height * width, channels // groups)
    return xp.swapaxes(image, 2, 3).reshape(shape)


def _coordinate_grads(xp, image, corners, grads):
    """Gradients of the sample rows and columns: (N, dg, samples) each."""
    d_rows = d_cols = 0
    for index, _, slope_h, slope_w in corners:
        pixels = (_gather(xp, image, index) * grads).sum(axis=-1)
        d_rows = d_rows + pixels * slope_h.reshape(pixels.shape)
        d_cols = d_cols + pixels * slope_w.reshape(pixels.shape)
    return d_rows, d_cols


def _sample_grads(xp, p, columns_grad, shape):
    """Column gradients (N, num_group, Cg * taps, L) back as (N, dg, taps * L, channels per dg)."""
    n, channels = shape[:2]
    taps = p.kernel[0] * p.kernel[1]
    grads = columns_grad.reshape(
        n, p.num_deformable_group, channels // p.num_deformable_group, taps, -1
    )
    return xp.moveaxis(grads, 2, 4).reshape(
        n, p.num_deformable_group, -1, channels // p.num_deformable_group
    )


def _parameter_grads(xp, p, head, columns, inputs, at, need_grad):
    """Gradients of the weight (input ``at``) and the bias (``at + 1``)."""
    grads = {}
    weight = inputs[at]
    if need_grad[at]:
        grad = xp.matmul(head, xp.swapaxes(columns, 2, 3)).sum(axis=0)
        grads[at] = grad.reshape(weight.shape).astype(weight.dtype)
    if not p.no_bias and need_grad[at + 1]:
        grads[at + 1] = head.sum(axis=(0, 3)).reshape(-1).astype(inputs[at + 1].dtype)
    return grads


def _offset_grads(xp, p, image, corners, sample_grads, offset):
    """The offset gradient: (dy, dx) of every tap, interleaved as MXNet's offset channels."""
    d_rows, d_cols = _coordinate_grads(xp, image, corners, sample_grads)
    n, taps, length = offset.shape[0], p.kernel[0] * p.kernel[1], math.prod(offset.shape[2:])
    rows = d_rows.reshape(n, p.num_deformable_group, taps, length)
    cols = d_cols.reshape(n, p.num_deformable_group, taps, length)
    return xp.stack([rows, cols], axis=3).reshape(offset.shape).astype(offset.dtype)


def _backward(modulated):
    at = 3 if modulated else 2  # the weight's position among the inputs

    def backward(ctx, p, saved, out_grads, need_grad):
        xp, inputs = ctx.xp, saved[0]
        if saved[1] is None:  # an empty batch: nothing reached the weight and bias
            pairs = zip(inputs, need_grad, strict=True)
            return [xp.zeros_like(a) if need else None for a, need in pairs]
        inputs, corners, image, samples, mask, columns = saved
        data, groups = inputs[0], (p.num_group, p.num_filter // p.num_group)
        head = out_grads[0].astype(columns.dtype, copy=False).reshape(data.shape[0], *groups, -1)
        found = _parameter_grads(xp, p, head, columns, inputs, at, need_grad)
        grads = [found.get(i) for i in range(len(inputs))]
        if not any(need_grad[:at]):
            return grads
        kernel = inputs[at].astype(columns.dtype, copy=False).reshape(*groups, -1)
        columns_grad = xp.matmul(xp.swapaxes(kernel, 1, 2), head)
        sample_grads = _sample_grads(xp, p, columns_grad, data.shape)
        if modulated and need_grad[2]:
            mask_grad = (sample_grads * samples).sum(axis=-1)
            grads[2] = mask_grad.reshape(inputs[2].shape).astype(inputs[2].dtype)
        if modulated:
            sample_grads = sample_grads * mask.reshape(*mask.shape[:2], -1, 1)
        if need_grad[0]:
            image_grad = _scatter_image(
                xp, corners, sample_grads, data.shape, p.num_deformable_group
            )
            grads[0] = image_grad.astype(data.dtype)
        if need_grad[1]:
            grads[1] = _offset_grads(xp, p, image, corners, sample_grads, inputs[1])
        return grads

    return backward


OPS = [
    OpDef(
        name="_contrib_DeformableConvolution",
        params=DeformableConvolutionParams,
        arguments=_arguments(False),
        infer_shape=_infer_shape(False),
        forward=_forward(False),
        backward=_backward(False),
        doc="Convolution whose taps read the input at learned offsets (DCN).",
    ),
    OpDef(
        name="_contrib_ModulatedDeformableConvolution",
        params=ModulatedDeformableConvolutionParams,
        arguments=_arguments(True),
        infer_shape=_infer_shape(True),
        forward=_forward(True),
        backward=_backward(True),
        doc="Deformable convolution whose samples are scaled by a learned mask (DCNv2).",
    ),
]
