"""RROIAlign (mx.contrib): ROIAlign over rotated regions, as MXNet 1.9.1's CPU kernel.

A region is ``[batch_index, center_x, center_y, width, height, angle]`` (the
angle in degrees, counter-clockwise). Each output bin averages a grid of
bilinear samples (``sampling_ratio`` per axis, or ``ceil(size / pooled)``)
taken on the region's own axes and rotated onto the feature map. Rotation
mixes the axes, so unlike ROIAlign the sampling is not separable: every
sample is four (pixel, weight) corners, gathered from the input laid out
(N, H * W, C). Sampling follows ROIAlign's convention: a sample outside
``[-1, size]`` weighs 0, one below 0 reads row/column 0, and the upper corner
clamps to the last row/column.

Differences from MXNet 1.9.1: its backward aborts ("Backward is not
supported"); rebind computes the data gradient (the ROIs get zeros, as
ROIAlign's). An ROI whose batch index is outside the batch gives zeros (MXNet
reads outside the input).
"""

import attrs
import numpy as np

from .base import OpDef, merge_shape, mismatch
from .conv_utils import work_dtype
from .indexing import scatter_add
from .params import param
from .roi_correlation import _two_positive, _unit_interval

__all__ = ["OPS"]


@attrs.frozen(kw_only=True)
class RROIAlignParams:
    pooled_size: tuple = param("shape", validator=_two_positive)
    spatial_scale: float = param("float", validator=_unit_interval)
    sampling_ratio: int = param("int", -1)


def _infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, rois = in_shapes
    if data is not None and len(data) != 4:
        raise mismatch("data", data, "(batch, channel, height, width)", "data must be 4-D")
    if rois is not None and (len(rois) != 2 or (rois[1] and rois[1] != 6)):
        reason = "rows are [batch_index, center_x, center_y, width, height, degrees]"
        raise mismatch("rois", rois, "(num_rois, 6)", reason)
    if data is None or rois is None:
        return in_shapes, out_shapes, aux_shapes
    out = (rois[0], data[1], *p.pooled_size)
    return in_shapes, [merge_shape(out, out_shapes[0], "output")], aux_shapes


def _grid_steps(xp, start, bin_size, pooled, grid, dtype):
    """(R, pooled, max grid) sample positions along one of the region's axes."""
    t = dtype.type
    steps = xp.arange(int(grid.max()), dtype=dtype)
    within = (steps[None, :] + t(0.5)) * bin_size[:, None] / grid[:, None].astype(dtype)
    bins = xp.arange(pooled, dtype=dtype)[None, :, None] * bin_size[:, None, None]
    return start[:, None, None] + bins + within[:, None, :]


def _clamped(xp, coord, size):
    """Lower index, upper index and upper weight of ROIAlign's clamped bilinear sampling."""
    coord = xp.maximum(coord, coord.dtype.type(0))
    low = coord.astype(np.int64)
    top = low >= size - 1
    low = xp.where(top, size - 1, low)
    high = xp.where(top, size - 1, low + 1)
    return low, high, xp.where(top, coord.dtype.type(0), coord - low.astype(coord.dtype))


def _grid_sizes(xp, p, roi_h, roi_w):
    """Samples per bin along each axis: sampling_ratio, or ceil(roi size / pooled size)."""
    if p.sampling_ratio > 0:
        grid = xp.full(roi_h.shape[0], p.sampling_ratio, dtype=np.int64)
        return grid, grid
    t = roi_h.dtype.type
    grid_h = xp.ceil(roi_h / t(p.pooled_size[0])).astype(np.int64)
    return grid_h, xp.ceil(roi_w / t(p.pooled_size[1])).astype(np.int64)


def _samples(xp, p, rois, height, width, dtype):
    """Pixel indices and weights (R, bins, samples * 4) of every output bin of every ROI."""
    t = dtype.type
    boxes = rois.astype(dtype, copy=False)
    scale = t(np.float32(p.spatial_scale))
    cx, cy = boxes[:, 1] * scale, boxes[:, 2] * scale
    roi_w, roi_h = xp.maximum(boxes[:, 3] * scale, t(1)), xp.maximum(boxes[:, 4] * scale, t(1))
    theta = (boxes[:, 5].astype(np.float64) * np.pi / 180.0).astype(dtype)
    pooled_h, pooled_w = p.pooled_size
    grid_h, grid_w = _grid_sizes(xp, p, roi_h, roi_w)
    yy = _grid_steps(xp, -roi_h / t(2), roi_h / t(pooled_h), pooled_h, grid_h, dtype)
    xx = _grid_steps(xp, -roi_w / t(2), roi_w / t(pooled_w), pooled_w, grid_w, dtype)
    yy, xx = yy[:, :, None, :, None], xx[:, None, :, None, :]  # (R, PH, PW, GH, GW)
    cos, sin = (f(theta)[:, None, None, None, None] for f in (xp.cos, xp.sin))
    x = xx * cos + yy * sin + cx[:, None, None, None, None]
    y = yy * cos - xx * sin + cy[:, None, None, None, None]
    used = (xp.arange(yy.shape[3])[:, None] < grid_h[:, None, None, None, None]) & (
        xp.arange(xx.shape[4]) < grid_w[:, None, None, None, None]
    )
    used = used & ~((y < -1) | (y > height) | (x < -1) | (x > width))
    y_low, y_high, ly = _clamped(xp, y, height)
    x_low, x_high, lx = _clamped(xp, x, width)
    count = (grid_h * grid_w).astype(dtype)[:, None, None, None, None]
    keep = used / count
    index = xp.stack(
        [
            y_low * width + x_low,
            y_low * width + x_high,
            y_high * width + x_low,
            y_high * width + x_high,
        ],
        axis=-1,
    )
    weight = xp.stack([(1 - ly) * (1 - lx), (1 - ly) * lx, ly * (1 - lx), ly * lx], axis=-1)
    shape = (rois.shape[0], pooled_h * pooled_w, -1)
    return index.reshape(shape), (weight * keep[..., None]).reshape(shape)


def _forward(ctx, p, inputs, aux):
    xp, (data, rois) = ctx.xp, inputs
    dtype = np.dtype(work_dtype(data.dtype))
    n, channels, height, width = data.shape
    if rois.shape[0] == 0:
        out = xp.zeros((0, channels, *p.pooled_size), dtype=data.dtype)
        return [out], (None, None, None, data.shape, data.dtype, rois.shape, rois.dtype)
    index, weight = _samples(xp, p, rois, height, width, dtype)
    batch = rois[:, 0].astype(dtype).astype(np.int64)  # C's truncation toward zero
    weight = weight * ((batch >= 0) & (batch < n)).astype(dtype)[:, None, None]
    batch = xp.clip(batch, 0, max(n - 1, 0))
    image = xp.swapaxes(data.astype(dtype, copy=False).reshape(n, channels, -1), 1, 2)
    pixels = image[batch[:, None, None], index]  # (R, bins, samples, C)
    out = xp.einsum("rbsc,rbs->rcb", pixels, weight)
    out = out.reshape(rois.shape[0], channels, *p.pooled_size)
    saved = (index, weight, batch, data.shape, data.dtype, rois.shape, rois.dtype)
    return [out.astype(data.dtype, copy=False)], saved


def _backward(ctx, p, saved, out_grads, need_grad):
    xp = ctx.xp
    index, weight, batch, shape, dtype, rois_shape, rois_dtype = saved
    grads = [None, xp.zeros(rois_shape, dtype=rois_dtype) if need_grad[1] else None]
    if need_grad[0] and index is None:  # no ROIs
        grads[0] = xp.zeros(shape, dtype=dtype)
    elif need_grad[0]:
        n, channels, height, width = shape
        head = out_grads[0].astype(weight.dtype, copy=False).reshape(*rois_shape[:1], channels, -1)
        values = xp.swapaxes(head, 1, 2)[:, :, None, :] * weight[..., None]  # (R, bins, s, C)
        image = xp.zeros((n, height * width, channels), dtype=weight.dtype)
        scatter_add(xp, image, (batch[:, None, None], index), values)
        grads[0] = xp.swapaxes(image, 1, 2).reshape(shape).astype(dtype, copy=False)
    return grads


OPS = [
    OpDef(
        name="_contrib_RROIAlign",
        params=RROIAlignParams,
        arguments=("data", "rois"),
        infer_shape=_infer_shape,
        forward=_forward,
        backward=_backward,
        doc="Bilinear average pooling of rotated regions of interest to a fixed (h, w) grid.",
    ),
]
