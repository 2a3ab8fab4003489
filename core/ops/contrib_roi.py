"""ROIAlign and PSROIPooling (mx.contrib): pooling of regions of interest, as MXNet 1.9.1's CPU
kernels.

Each output bin averages ``grid_h x grid_w`` bilinear samples (the grid is
``sample_ratio``, or ``ceil(roi size / pooled size)`` per ROI). Sampling is
separable: a sample's weight on pixel (h, w) is its row weight times its
column weight, and a sample outside ``[-1, size]`` on either axis weighs 0.
So every ROI has a row matrix (pooled_h, H) and a column matrix (pooled_w, W)
holding its samples' summed weights, and the output is ``rows @ x @ cols.T``;
the gradient is the same products transposed. With ``position_sensitive``,
output channel c of bin (ph, pw) reads input channel
``c * pooled_h * pooled_w + ph * pooled_w + pw`` (R-FCN).

PSROIPooling (R-FCN) averages integer bins: corners rounded half away from
zero, scaled, bins ``floor(start + i * bin)`` to ``ceil(start + (i + 1) * bin)``
clipped to the map; output channel c of bin (ph, pw) reads input channel
``(c * group + gh) * group + gw`` with ``gh = floor(ph * group / pooled)``. Its
bins are row and column masks too, each scaled by 1 / its length.

Difference from MXNet: an ROI with a negative batch index gives zeros; MXNet
1.9.1 zeroes one element of ROIAlign's output and leaves the rest unwritten
(and PSROIPooling reads outside the input).
"""

import attrs
import numpy as np

from .base import OpDef, merge_shape, mismatch
from .conv_utils import work_dtype
from .indexing import scatter_add
from .params import param, positive
from .roi_correlation import _two_positive, _unit_interval

__all__ = ["OPS"]


@attrs.frozen(kw_only=True)
class ROIAlignParams:
    pooled_size: tuple = param("shape", validator=_two_positive)
    spatial_scale: float = param("float", validator=_unit_interval)
    sample_ratio: int = param("int", -1)
    position_sensitive: bool = param("bool", False)
    aligned: bool = param("bool", False)


def _infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, rois = in_shapes
    if data is not None and len(data) != 4:
        raise mismatch("data", data, "(batch, channel, height, width)", "data must be 4-D")
    if rois is not None and (len(rois) != 2 or (rois[1] and rois[1] != 5)):
        raise mismatch("rois", rois, "(num_rois, 5)", "rows are [batch_index, x1, y1, x2, y2]")
    if data is None or rois is None:
        return in_shapes, out_shapes, aux_shapes
    channels, bins = data[1], p.pooled_size[0] * p.pooled_size[1]
    if p.position_sensitive and channels:
        if channels % bins:
            reason = f"position_sensitive needs channels divisible by {bins} (pooled h * w)"
            raise mismatch("data", data, f"channels a multiple of {bins}", reason)
        channels //= bins
    out = (rois[0], channels, *p.pooled_size)
    return in_shapes, [merge_shape(out, out_shapes[0], "output")], aux_shapes


def _axis_weights(xp, start, length, pooled, size, grid, dtype):
    """(R, pooled, size) summed bilinear weights of every bin's samples along one axis."""
    t = dtype.type
    bin_size = length / t(pooled)
    steps = xp.arange(int(grid.max()), dtype=dtype)
    offsets = (steps[None, :] + t(0.5)) * bin_size[:, None] / grid[:, None].astype(dtype)
    bins = xp.arange(pooled, dtype=dtype)[None, :, None] * bin_size[:, None, None]
    coord = start[:, None, None] + bins + offsets[:, None, :]  # (R, pooled, grid)
    used = (steps[None, None, :] < grid[:, None, None]) & ~((coord < -1) | (coord > size))
    coord = xp.maximum(coord, t(0))
    low = coord.astype(np.int64)
    top = low >= size - 1
    low = xp.where(top, size - 1, low)
    high = xp.where(top, size - 1, low + 1)
    frac = xp.where(top, t(0), coord - low.astype(dtype))
    position = xp.arange(size)
    near = (position == low[..., None]) * (t(1) - frac)[..., None]
    far = (position == high[..., None]) * frac[..., None]
    return ((near + far) * used[..., None]).sum(axis=2).astype(dtype)


def _roi_weights(xp, p, rois, height, width, dtype):
    """Row and column matrices of every ROI, the 1/count of its grid folded into the rows."""
    t = dtype.type
    offset = t(0.5) if p.aligned else t(0)
    scale = t(np.float32(p.spatial_scale))
    x1, y1, x2, y2 = (rois[:, i].astype(dtype) * scale - offset for i in range(1, 5))
    roi_w, roi_h = x2 - x1, y2 - y1
    if p.aligned:
        if rois.shape[0] and bool(((roi_w <= 0) | (roi_h <= 0)).any()):
            raise ValueError("ROIAlign: with aligned=True every ROI needs a positive width/height")
    else:  # MXNet's backward-compatible minimum size
        roi_w, roi_h = xp.maximum(roi_w, t(1)), xp.maximum(roi_h, t(1))
    pooled_h, pooled_w = p.pooled_size
    if p.sample_ratio > 0:
        grid_h = grid_w = xp.full(rois.shape[0], p.sample_ratio, dtype=np.int64)
    else:
        grid_h = xp.ceil(roi_h / t(pooled_h)).astype(np.int64)
        grid_w = xp.ceil(roi_w / t(pooled_w)).astype(np.int64)
    grid_h, grid_w = xp.maximum(grid_h, 1), xp.maximum(grid_w, 1)
    rows = _axis_weights(xp, y1, roi_h, pooled_h, height, grid_h, dtype)
    cols = _axis_weights(xp, x1, roi_w, pooled_w, width, grid_w, dtype)
    rows = rows / (grid_h * grid_w).astype(dtype)[:, None, None]
    return rows, cols


def _sensitive_channels(p, channels):
    """Input channel of every (output channel, ph, pw) under position_sensitive."""
    pooled_h, pooled_w = p.pooled_size
    bins = pooled_h * pooled_w
    return (np.arange(channels // bins)[:, None, None] * bins) + (
        np.arange(pooled_h)[:, None] * pooled_w + np.arange(pooled_w)
    )


def _forward(ctx, p, inputs, aux):
    xp, (data, rois) = ctx.xp, inputs
    dtype = np.dtype(work_dtype(data.dtype))
    n, channels, height, width = data.shape
    if rois.shape[0] == 0:
        out_channels = channels // (p.pooled_size[0] * p.pooled_size[1])
        out_channels = out_channels if p.position_sensitive else channels
        out = xp.zeros((0, out_channels, *p.pooled_size), dtype=data.dtype)
        return [out], (None, None, None, data.shape, data.dtype, rois.shape, rois.dtype)
    rows, cols = _roi_weights(xp, p, rois, height, width, dtype)
    batch = rois[:, 0].astype(dtype).astype(np.int64)  # C's truncation toward zero
    x = data.astype(dtype, copy=False)[xp.clip(batch, 0, max(n - 1, 0))]  # (R, C, H, W)
    pooled = xp.matmul(xp.matmul(rows[:, None], x), xp.swapaxes(cols, 1, 2)[:, None])
    if p.position_sensitive:
        index = xp.asarray(_sensitive_channels(p, channels))
        ph, pw = xp.arange(p.pooled_size[0])[:, None], xp.arange(p.pooled_size[1])
        pooled = pooled[:, index, ph, pw]
    pooled = xp.where(((batch >= 0) & (batch < n))[:, None, None, None], pooled, dtype.type(0))
    saved = (rows, cols, batch, data.shape, data.dtype, rois.shape, rois.dtype)
    return [pooled.astype(data.dtype, copy=False)], saved


def _backward(ctx, p, saved, out_grads, need_grad):
    xp = ctx.xp
    rows, cols, batch, shape, dtype, rois_shape, rois_dtype = saved
    grads = [None, None]
    if need_grad[0] and rows is None:  # no ROIs
        grads[0] = xp.zeros(shape, dtype=dtype)
    elif need_grad[0]:
        n, channels, height, width = shape
        head = out_grads[0].astype(rows.dtype, copy=False)
        head = xp.where(((batch >= 0) & (batch < n))[:, None, None, None], head, 0)
        if p.position_sensitive:
            full = xp.zeros((head.shape[0], channels, *p.pooled_size), dtype=rows.dtype)
            index = xp.asarray(_sensitive_channels(p, channels))
            ph, pw = xp.arange(p.pooled_size[0])[:, None], xp.arange(p.pooled_size[1])
            full[:, index, ph, pw] = head
            head = full
        per_roi = xp.matmul(xp.matmul(xp.swapaxes(rows, 1, 2)[:, None], head), cols[:, None])
        grad = xp.zeros((n, channels, height, width), dtype=rows.dtype)
        scatter_add(xp, grad, xp.clip(batch, 0, max(n - 1, 0)), per_roi)
        grads[0] = grad.astype(dtype, copy=False)
    if need_grad[1]:  # MXNet writes zeros: the ROI coordinates get no gradient
        grads[1] = xp.zeros(rois_shape, dtype=rois_dtype)
    return grads


# -- PSROIPooling --------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class PSROIPoolingParams:
    spatial_scale: float = param("float", validator=_unit_interval)
    output_dim: int = param("int", validator=positive)
    pooled_size: int = param("int", validator=positive)
    group_size: int = param("int", 0)

    @property
    def groups(self):
        return self.group_size or self.pooled_size  # MXNet: 0 means pooled_size


def _ps_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, rois = in_shapes
    if data is not None and len(data) != 4:
        raise mismatch("data", data, "(batch, channel, height, width)", "data must be 4-D")
    if rois is not None and (len(rois) != 2 or (rois[1] and rois[1] != 5)):
        raise mismatch("rois", rois, "(num_rois, 5)", "rows are [batch_index, x1, y1, x2, y2]")
    if data is not None and data[1] and data[1] < p.output_dim * p.groups**2:
        expected = f"at least {p.output_dim * p.groups**2} channels (output_dim * group_size ** 2)"
        raise mismatch("data", data, expected, "one channel per class and group cell")
    if rois is None:
        return in_shapes, out_shapes, aux_shapes
    out = (rois[0], p.output_dim, p.pooled_size, p.pooled_size)
    return in_shapes, [merge_shape(out, out_shapes[0], "output")], aux_shapes


def _bin_masks(xp, start, end, pooled, size, dtype):
    """(R, pooled, size) masks of every bin, each row scaled by 1 / its length (0 if empty)."""
    t = dtype.type
    length = xp.maximum(end - start, t(0.1))
    bin_size = length / t(pooled)
    steps = xp.arange(pooled + 1, dtype=dtype)[None, :] * bin_size[:, None]
    begin = xp.clip(xp.floor(steps[:, :-1] + start[:, None]).astype(np.int64), 0, size)
    finish = xp.clip(xp.ceil(steps[:, 1:] + start[:, None]).astype(np.int64), 0, size)
    position = xp.arange(size)
    inside = (position >= begin[..., None]) & (position < finish[..., None])
    count = xp.maximum(finish - begin, 1).astype(dtype)
    return inside / count[..., None]


def _ps_channels(p):
    """Input channel of every (output channel, ph, pw)."""
    cells = np.arange(p.pooled_size) * p.groups // p.pooled_size
    cells = np.clip(cells, 0, p.groups - 1)
    ctop = np.arange(p.output_dim)[:, None, None]
    return (ctop * p.groups + cells[:, None]) * p.groups + cells[None, :]


def _ps_forward(ctx, p, inputs, aux):
    xp, (data, rois) = ctx.xp, inputs
    dtype = np.dtype(work_dtype(data.dtype))
    n = data.shape[0]
    boxes = rois.astype(dtype)
    corners = xp.sign(boxes[:, 1:]) * xp.floor(xp.abs(boxes[:, 1:]) + dtype.type(0.5))
    corners = corners + xp.asarray([0, 0, 1, 1], dtype=dtype)
    corners = corners * dtype.type(np.float32(p.spatial_scale))
    rows = _bin_masks(xp, corners[:, 1], corners[:, 3], p.pooled_size, data.shape[2], dtype)
    cols = _bin_masks(xp, corners[:, 0], corners[:, 2], p.pooled_size, data.shape[3], dtype)
    batch = boxes[:, 0].astype(np.int64)
    valid = (batch >= 0) & (batch < n)
    x = data.astype(dtype, copy=False)[xp.clip(batch, 0, max(n - 1, 0))]
    pooled = xp.matmul(xp.matmul(rows[:, None], x), xp.swapaxes(cols, 1, 2)[:, None])
    index = xp.asarray(_ps_channels(p))
    ph, pw = xp.arange(p.pooled_size)[:, None], xp.arange(p.pooled_size)
    out = xp.where(valid[:, None, None, None], pooled[:, index, ph, pw], dtype.type(0))
    saved = (rows, cols, batch, valid, data.shape, data.dtype, rois.shape, rois.dtype)
    return [out.astype(data.dtype, copy=False)], saved


def _ps_backward(ctx, p, saved, out_grads, need_grad):
    xp = ctx.xp
    rows, cols, batch, valid, shape, dtype, rois_shape, rois_dtype = saved
    grads = [None, xp.zeros(rois_shape, dtype=rois_dtype) if need_grad[1] else None]
    if need_grad[0]:
        head = xp.where(valid[:, None, None, None], out_grads[0].astype(rows.dtype), 0)
        full = xp.zeros((head.shape[0], shape[1], p.pooled_size, p.pooled_size), rows.dtype)
        ph, pw = xp.arange(p.pooled_size)[:, None], xp.arange(p.pooled_size)
        full[:, xp.asarray(_ps_channels(p)), ph, pw] = head
        per_roi = xp.matmul(xp.matmul(xp.swapaxes(rows, 1, 2)[:, None], full), cols[:, None])
        grad = xp.zeros(shape, dtype=rows.dtype)
        scatter_add(xp, grad, xp.clip(batch, 0, max(shape[0] - 1, 0)), per_roi)
        grads[0] = grad.astype(dtype, copy=False)
    return grads


OPS = [
    OpDef(
        name="_contrib_ROIAlign",
        params=ROIAlignParams,
        arguments=("data", "rois"),
        infer_shape=_infer_shape,
        forward=_forward,
        backward=_backward,
        doc="Bilinear average pooling of each region of interest to a fixed (h, w) grid.",
    ),
    OpDef(
        name="_contrib_PSROIPooling",
        params=PSROIPoolingParams,
        arguments=("data", "rois"),
        infer_shape=_ps_infer_shape,
        forward=_ps_forward,
        backward=_ps_backward,
        doc="Position-sensitive average pooling of regions of interest (R-FCN).",
    ),
]
