"""ROIPooling (max pooling over regions of interest) and Correlation (FlowNet's patch match).

Both follow MXNet's CPU kernels, including their quirks: ROIPooling rounds
ROI corners half away from zero and keeps the first maximum in row-major
order (a bin with nothing above -FLT_MAX keeps -FLT_MAX and no argmax);
Correlation compares the K x K patch that *starts* at each position (MXNet's
CPU kernel does not centre it), and its absolute-difference mode sends the
gradient +1/-1 to data1/data2 where the two are equal.
"""

import math

import attrs
import numpy as np

from .base import OpDef, known, merge_shape, mismatch
from .conv_utils import work_dtype
from .indexing import scatter_add
from .params import non_negative, param, positive

__all__ = ["OPS"]

_FLT_MAX = float(np.finfo(np.float32).max)


def _two_positive(instance, attribute, value):
    if len(value) != 2 or min(value) <= 0:
        raise ValueError(f"{attribute.name} must be two positive sizes (h, w), got {value}")


def _unit_interval(instance, attribute, value):
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{attribute.name} must be in [0, 1], got {value}")


@attrs.frozen(kw_only=True)
class ROIPoolingParams:
    pooled_size: tuple = param("shape", validator=_two_positive)
    spatial_scale: float = param("float", validator=_unit_interval)


# -- ROIPooling -------------------------------------------------------------------


def _roi_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, rois = in_shapes
    if data is not None and len(data) != 4:
        raise mismatch("data", data, "(batch, channel, height, width)", "data must be 4-D")
    if rois is not None and (len(rois) != 2 or (rois[1] and rois[1] != 5)):
        raise mismatch("rois", rois, "(num_rois, 5)", "rows are [batch_index, x1, y1, x2, y2]")
    if data is None and rois is None:
        return in_shapes, out_shapes, aux_shapes
    out = ((rois or (0,))[0], (data or (0, 0))[1], *p.pooled_size)
    return in_shapes, [merge_shape(out, out_shapes[0], "output")], aux_shapes


def _round_half_away(xp, value):
    value = value.astype(np.float64)
    return (xp.sign(value) * xp.floor(xp.abs(value) + 0.5)).astype(np.int64)


def _bin_edges(xp, start, end, pooled, size, dtype):
    """[begin, end) of every bin along one axis: two (R, pooled) arrays clipped to [0, size)."""
    length = xp.maximum(end - start + 1, 1).astype(dtype)
    bin_size = length / dtype.type(pooled)
    steps = xp.arange(pooled + 1, dtype=dtype)
    edges = steps[None, :] * bin_size[:, None]
    begin = xp.floor(edges[:, :-1]).astype(np.int64) + start[:, None]
    finish = xp.ceil(edges[:, 1:]).astype(np.int64) + start[:, None]
    return xp.clip(begin, 0, size), xp.clip(finish, 0, size)


def _window_masks(xp, rois, p, height, width, dtype):
    """Per ROI and bin, which rows and columns it covers: (R, PH, H) and (R, PW, W)."""
    scale = dtype.type(np.float32(p.spatial_scale))
    corners = _round_half_away(xp, rois[:, 1:5] * scale)
    masks = []
    for pooled, size, lo, hi in ((p.pooled_size[0], height, 1, 3), (p.pooled_size[1], width, 0, 2)):
        begin, end = _bin_edges(xp, corners[:, lo], corners[:, hi], pooled, size, dtype)
        position = xp.arange(size)
        masks.append((position >= begin[..., None]) & (position < end[..., None]))
    return masks


def _roi_forward(ctx, p, inputs, aux):
    xp, (data, rois) = ctx.xp, inputs
    n, c, height, width = data.shape
    dtype = np.dtype(work_dtype(data.dtype))
    batch = rois[:, 0].astype(dtype).astype(np.int64)  # C's truncation toward zero
    valid_batch = (batch >= 0) & (batch < n)
    x = data.astype(dtype, copy=False)[xp.clip(batch, 0, n - 1)]  # (R, C, H, W)
    x = xp.where(xp.isnan(x), -xp.inf, x)  # NaN never wins MXNet's ">" comparison
    rows, cols = _window_masks(xp, rois.astype(dtype, copy=False), p, height, width, dtype)
    row_max, row_arg = [], []  # per column bin: max over the bin's columns, for every row
    for pw in range(p.pooled_size[1]):
        masked = xp.where(cols[:, None, None, pw, :], x, -xp.inf)
        row_max.append(masked.max(axis=3))
        row_arg.append(masked.argmax(axis=3))
    row_max, row_arg = xp.stack(row_max, axis=-1), xp.stack(row_arg, axis=-1)  # (R,C,H,PW)
    out, argmax = [], []
    for ph in range(p.pooled_size[0]):
        masked = xp.where(rows[:, None, ph, :, None], row_max, -xp.inf)
        best_row = masked.argmax(axis=2)  # (R, C, PW)
        best_col = xp.take_along_axis(row_arg, best_row[:, :, None, :], axis=2)[:, :, 0]
        out.append(masked.max(axis=2))
        argmax.append(best_row * width + best_col)
    out, argmax = xp.stack(out, axis=2), xp.stack(argmax, axis=2)  # (R, C, PH, PW)
    empty = ~(rows.any(axis=2)[:, :, None] & cols.any(axis=2)[:, None, :])  # (R, PH, PW)
    skip = (empty | ~valid_batch[:, None, None])[:, None]
    found = out > -_FLT_MAX
    out = xp.where(skip, 0, xp.where(found, out, -_FLT_MAX))
    offset = (batch[:, None] * c + xp.arange(c)[None, :]) * (height * width)
    argmax = xp.where(skip | ~found, -1, argmax + offset[:, :, None, None])
    return [out.astype(data.dtype)], (argmax, data.shape, data.dtype, rois.shape, rois.dtype)


def _roi_backward(ctx, p, saved, out_grads, need_grad):
    xp = ctx.xp
    argmax, shape, dtype, rois_shape, rois_dtype = saved
    grads = [None, None]
    if need_grad[0]:
        flat = xp.zeros(math.prod(shape), dtype=work_dtype(dtype))
        picked = argmax.reshape(-1) >= 0
        values = out_grads[0].reshape(-1)[picked].astype(flat.dtype, copy=False)
        scatter_add(xp, flat, argmax.reshape(-1)[picked], values)
        grads[0] = flat.reshape(shape).astype(dtype, copy=False)
    if need_grad[1]:  # MXNet writes zeros: the ROI coordinates get no gradient
        grads[1] = xp.zeros(rois_shape, dtype=rois_dtype)
    return grads


# -- Correlation --------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class CorrelationParams:
    kernel_size: int = param("int", 1, validator=positive)
    max_displacement: int = param("int", 1, validator=non_negative)
    stride1: int = param("int", 1, validator=positive)
    stride2: int = param("int", 1, validator=positive)
    pad_size: int = param("int", 0, validator=non_negative)
    is_multiply: bool = param("bool", True)


@attrs.frozen
class _Geometry:
    """Output size and neighbourhood of a Correlation on (padded) inputs."""

    top_height: int
    top_width: int
    radius: int  # neighbourhood radius in stride2 steps
    grid_width: int

    @classmethod
    def of(cls, p, height, width):
        border = p.max_displacement + (p.kernel_size - 1) // 2
        padded_h, padded_w = height + 2 * p.pad_size, width + 2 * p.pad_size
        radius = p.max_displacement // p.stride2
        return cls(
            math.ceil((padded_h - 2 * border) / p.stride1),
            math.ceil((padded_w - 2 * border) / p.stride1),
            radius,
            2 * radius + 1,
        )

    def displacements(self, stride2):
        """(output channel, dy, dx) of every compared offset."""
        for channel in range(self.grid_width**2):
            dy = (channel // self.grid_width - self.radius) * stride2
            dx = (channel % self.grid_width - self.radius) * stride2
            yield channel, dy, dx


def _correlation_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    for name, shape in zip(("data1", "data2"), in_shapes, strict=True):
        if shape is not None and len(shape) != 4:
            raise mismatch(name, shape, "(batch, channel, height, width)", "must be 4-D")
    data = merge_shape(in_shapes[0], in_shapes[1], "data2")
    if not known(data):
        return [data, data], out_shapes, aux_shapes
    geometry = _Geometry.of(p, data[2], data[3])
    if geometry.top_height < 1 or geometry.top_width < 1:
        raise mismatch(
            "data1",
            data,
            "a larger height and width",
            "neighbourhood and kernel do not fit in the padded input",
        )
    out = (data[0], geometry.grid_width**2, geometry.top_height, geometry.top_width)
    return [data, data], [merge_shape(out, out_shapes[0], "output")], aux_shapes


def _window(p, geometry, offset_y, offset_x):
    """The strided slice of the padded input read at one kernel/displacement offset."""
    top = p.max_displacement + offset_y
    left = p.max_displacement + offset_x
    return (
        slice(None),
        slice(None),
        slice(top, top + (geometry.top_height - 1) * p.stride1 + 1, p.stride1),
        slice(left, left + (geometry.top_width - 1) * p.stride1 + 1, p.stride1),
    )


def _offsets(p, geometry):
    """(channel, first-input window, second-input window) of every term of the sum."""
    kernel = range(p.kernel_size)
    for channel, dy, dx in geometry.displacements(p.stride2):
        for h in kernel:
            for w in kernel:
                yield channel, _window(p, geometry, h, w), _window(p, geometry, h + dy, w + dx)


def _pad(xp, x, pad):
    return xp.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))) if pad else x


def _correlation_forward(ctx, p, inputs, aux):
    if p.kernel_size % 2 == 0:
        raise ValueError(f"Correlation: kernel_size must be odd, got {p.kernel_size}")
    xp, dtype = ctx.xp, inputs[0].dtype
    first, second = (_pad(xp, x.astype(work_dtype(dtype), copy=False), p.pad_size) for x in inputs)
    n, c, height, width = inputs[0].shape
    geometry = _Geometry.of(p, height, width)
    out = xp.zeros(
        (n, geometry.grid_width**2, geometry.top_height, geometry.top_width), first.dtype
    )
    for channel, window1, window2 in _offsets(p, geometry):
        a, b = first[window1], second[window2]
        out[:, channel] += (a * b if p.is_multiply else xp.abs(a - b)).sum(axis=1)
    out /= p.kernel_size**2 * c
    return [out.astype(dtype, copy=False)], (first, second, inputs[0].shape, dtype)


def _correlation_backward(ctx, p, saved, out_grads, need_grad):
    first, second, shape, dtype = saved
    if not any(need_grad):
        return [None, None]
    xp, (_, c, height, width) = ctx.xp, shape
    geometry = _Geometry.of(p, height, width)
    grad = out_grads[0].astype(first.dtype, copy=False) / (p.kernel_size**2 * c)
    grad_first, grad_second = xp.zeros_like(first), xp.zeros_like(second)
    for channel, window1, window2 in _offsets(p, geometry):
        head = grad[:, channel : channel + 1]
        a, b = first[window1], second[window2]
        if p.is_multiply:
            grad_first[window1] += head * b
            grad_second[window2] += head * a
        else:
            signed = xp.where(a >= b, head, -head)
            grad_first[window1] += signed
            grad_second[window2] -= signed
    pad = p.pad_size
    crop = (slice(None), slice(None), slice(pad, pad + height), slice(pad, pad + width))
    return [
        g[crop].astype(dtype) if needed else None
        for g, needed in zip((grad_first, grad_second), need_grad, strict=True)
    ]


OPS = [
    OpDef(
        name="ROIPooling",
        params=ROIPoolingParams,
        arguments=("data", "rois"),
        hidden_outputs=1,  # MXNet's "maxidx"
        infer_shape=_roi_infer_shape,
        forward=_roi_forward,
        backward=_roi_backward,
        doc="Max pooling of each region of interest to a fixed (h, w) grid.",
    ),
    OpDef(
        name="Correlation",
        params=CorrelationParams,
        arguments=("data1", "data2"),
        hidden_outputs=2,  # MXNet's padded copies "tmp1" and "tmp2"
        infer_shape=_correlation_infer_shape,
        forward=_correlation_forward,
        backward=_correlation_backward,
        doc="Patch correlation of two feature maps over a neighbourhood of displacements.",
    ),
]
