"""DeformablePSROIPooling (mx.contrib): R-FCN's position-sensitive pooling with learned part
offsets, as MXNet 1.9.1's CPU kernel (deformable_psroi_pooling.cc).

Output channel ``ctop`` of bin (ph, pw) averages ``sample_per_part ** 2`` samples
of input channel ``(ctop * group_size + gh) * group_size + gw`` taken at
``bin start + (i, j) * bin / sample_per_part`` (no half-step), the whole bin
moved by ``trans * trans_std * roi size``; ``trans`` holds (dx, dy) per class
(``output_dim / (trans channels / 2)`` output channels each) and part cell
``floor(p / pooled_size * part_size)``. A sample outside
``[-0.5, size - 0.5]`` is skipped (the average is over the rest; 0 if none
is left); the others are clamped into ``[0, size - 1]`` and interpolated
between ``floor`` and ``ceil``. MXNet's hidden second output (top_count, the
number of samples each bin averaged) is not produced: only JSON counts it.

MXNet's offset gradient is its own convention, kept here: the slope of the
bilinear patch at the clamped sample, even where clamping makes the output
flat (and 0 on integer coordinates, where floor equals ceil).

Difference from MXNet: an ROI whose batch index is outside the batch gives
zeros (MXNet reads outside the input).
"""

import attrs
import numpy as np

from .base import OpDef, merge_shape, mismatch
from .conv_utils import work_dtype
from .indexing import scatter_add
from .params import param, positive

__all__ = ["OPS"]


def _unit_interval(instance, attribute, value):
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{attribute.name} must be in [0, 1], got {value}")


@attrs.frozen(kw_only=True)
class DeformablePSROIPoolingParams:
    spatial_scale: float = param("float", validator=_unit_interval)
    output_dim: int = param("int", validator=positive)
    group_size: int = param("int", validator=positive)
    pooled_size: int = param("int", validator=positive)
    part_size: int = param("int", 0)
    sample_per_part: int = param("int", 1, validator=positive)
    trans_std: float = param("float", 0.0, validator=_unit_interval)
    no_trans: bool = param("bool", False)

    @property
    def parts(self):
        return self.part_size or self.pooled_size  # MXNet: 0 means pooled_size


def _arguments(p):
    return ("data", "rois") if p.no_trans else ("data", "rois", "trans")


def _infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, rois = in_shapes[:2]
    if data is not None and len(data) != 4:
        raise mismatch("data", data, "(batch, channel, height, width)", "data must be 4-D")
    if data is not None and data[1] and data[1] < p.output_dim * p.group_size**2:
        expected = f"at least {p.output_dim * p.group_size**2} channels"
        raise mismatch("data", data, expected, "output_dim * group_size ** 2 are read")
    if rois is not None and (len(rois) != 2 or (rois[1] and rois[1] != 5)):
        raise mismatch("rois", rois, "(num_rois, 5)", "rows are [batch_index, x1, y1, x2, y2]")
    if not p.no_trans and in_shapes[2] is not None:
        trans = in_shapes[2]
        count = rois[0] if rois is not None else 0
        expected = f"({count or 'num_rois'}, 2 * num_classes, {p.parts}, {p.parts})"
        if len(trans) != 4 or (trans[1] and trans[1] % 2) or trans[2:] != (p.parts, p.parts):
            raise mismatch("trans", trans, expected, "(dx, dy) per class and part cell")
        if count and trans[0] and trans[0] != count:
            raise mismatch("trans", trans, expected, "one row of offsets per ROI")
    if rois is None:
        return in_shapes, out_shapes, aux_shapes
    out = (rois[0], p.output_dim, p.pooled_size, p.pooled_size)
    return in_shapes, [merge_shape(out, out_shapes[0], "output")], aux_shapes


def _layout(xp, p, rois, trans, dtype):
    """Sample positions (R, output_dim, P, P, S) and what backward needs of them."""
    t, pooled = dtype.type, p.pooled_size
    boxes = rois.astype(dtype)
    corners = xp.sign(boxes[:, 1:]) * xp.floor(xp.abs(boxes[:, 1:]) + t(0.5))
    scale = t(np.float32(p.spatial_scale))
    start_w, start_h = corners[:, 0] * scale - t(0.5), corners[:, 1] * scale - t(0.5)
    roi_w = xp.maximum((corners[:, 2] + 1) * scale - t(0.5) - start_w, t(0.1))
    roi_h = xp.maximum((corners[:, 3] + 1) * scale - t(0.5) - start_h, t(0.1))
    bins = xp.arange(pooled, dtype=dtype)
    part = np.floor(np.arange(pooled, dtype=dtype) / pooled * p.parts).astype(np.int64)
    classes = 1 if trans is None else trans.shape[1] // 2
    class_id = np.arange(p.output_dim) // max(p.output_dim // classes, 1)
    if trans is None:
        move_x = move_y = xp.zeros((rois.shape[0], p.output_dim, pooled, pooled), dtype)
    else:
        cells = xp.asarray(part)
        moves = trans.astype(dtype)[:, :, cells[:, None], cells[None, :]] * t(
            np.float32(p.trans_std)
        )
        first = xp.asarray(2 * class_id)
        move_x, move_y = moves[:, first], moves[:, first + 1]
    steps = xp.arange(p.sample_per_part, dtype=dtype)
    grid = (
        (steps[:, None] + xp.zeros(p.sample_per_part, dtype)).reshape(-1),
        xp.tile(steps, p.sample_per_part),
    )
    sub_h, sub_w = (
        roi_h / t(pooled) / t(p.sample_per_part),
        roi_w / t(pooled) / t(p.sample_per_part),
    )
    r = (slice(None), None, None, None)
    w = (bins[None, :] * (roi_w / t(pooled))[:, None] + start_w[:, None])[:, None, None, :]
    h = (bins[None, :] * (roi_h / t(pooled))[:, None] + start_h[:, None])[:, None, :, None]
    w = (w + move_x * roi_w[r])[..., None] + grid[1] * sub_w[(*r, None)]
    h = (h + move_y * roi_h[r])[..., None] + grid[0] * sub_h[(*r, None)]
    return h, w, roi_h, roi_w, class_id, part


def _channels(p):
    """Input channel of every (output channel, ph, pw)."""
    cells = np.floor(np.arange(p.pooled_size) * p.group_size / p.pooled_size).astype(np.int64)
    cells = np.clip(cells, 0, p.group_size - 1)
    ctop = np.arange(p.output_dim)[:, None, None]
    return (ctop * p.group_size + cells[:, None]) * p.group_size + cells[None, :]


def _corners(xp, h, w, height, width):
    """Validity, clamped corner indices and fractions of every sample."""
    t = h.dtype.type
    valid = ~((w < t(-0.5)) | (w > t(width - 0.5)) | (h < t(-0.5)) | (h > t(height - 0.5)))
    w, h = xp.clip(w, t(0), t(width - 1)), xp.clip(h, t(0), t(height - 1))
    x0, x1, y0, y1 = xp.floor(w), xp.ceil(w), xp.floor(h), xp.ceil(h)
    ints = [a.astype(np.int64) for a in (x0, x1, y0, y1)]
    return valid, ints, w - x0, h - y0


def _forward(ctx, p, inputs, aux):
    xp, data, rois = ctx.xp, inputs[0], inputs[1]
    trans = None if p.no_trans else inputs[2]
    dtype = np.dtype(work_dtype(data.dtype))
    n, _, height, width = data.shape
    h, w, roi_h, roi_w, class_id, part = _layout(xp, p, rois, trans, dtype)
    valid, (x0, x1, y0, y1), dx, dy = _corners(xp, h, w, height, width)
    batch = rois[:, 0].astype(dtype).astype(np.int64)
    inside = (batch >= 0) & (batch < n)
    b = xp.clip(batch, 0, max(n - 1, 0))[:, None, None, None, None]
    c = xp.asarray(_channels(p))[None, :, :, :, None]
    x = data.astype(dtype, copy=False)
    pixels = [x[b, c, yy, xx] for yy, xx in ((y0, x0), (y1, x0), (y0, x1), (y1, x1))]
    weights = [(1 - dx) * (1 - dy), (1 - dx) * dy, dx * (1 - dy), dx * dy]
    keep = valid.astype(dtype)
    total = sum(v * q for v, q in zip(pixels, weights, strict=True)) * keep
    count = keep.sum(axis=-1)
    out = xp.where(count > 0, total.sum(axis=-1) / xp.maximum(count, 1), dtype.type(0))
    out = xp.where(inside[:, None, None, None], out, dtype.type(0))
    count = count * inside[:, None, None, None]
    saved = (inputs, b, c, keep, (x0, x1, y0, y1), weights, pixels, dx, dy, count)
    saved += (roi_h, roi_w, class_id, part)
    return [out.astype(data.dtype)], saved


def _backward(ctx, p, saved, out_grads, need_grad):
    xp = ctx.xp
    inputs, b, c, keep, (x0, x1, y0, y1), weights, pixels, dx, dy, count = saved[:10]
    roi_h, roi_w, class_id, part = saved[10:]
    data, rois = inputs[0], inputs[1]
    dtype = keep.dtype
    diff = xp.where(count > 0, out_grads[0].astype(dtype) / xp.maximum(count, 1), 0)
    diff = diff[..., None] * keep  # (R, output_dim, P, P, S)
    grads = [None] * len(inputs)
    if need_grad[1]:  # MXNet writes zeros: the ROI coordinates get no gradient
        grads[1] = xp.zeros(rois.shape, rois.dtype)
    if need_grad[0]:
        image = xp.zeros(data.shape, dtype)
        for (yy, xx), q in zip(((y0, x0), (y1, x0), (y0, x1), (y1, x1)), weights, strict=True):
            scatter_add(xp, image, tuple(xp.broadcast_arrays(b, c, yy, xx)), q * diff)
        grads[0] = image.astype(data.dtype)
    if not p.no_trans and need_grad[2]:
        u00, u01, u10, u11 = pixels
        t = dtype.type(np.float32(p.trans_std))  # MXNet keeps the parameter as float32
        slope_x = (u11 * dy + u10 * (1 - dy) - u01 * dy - u00 * (1 - dy)) * diff
        slope_y = (u11 * dx + u01 * (1 - dx) - u10 * dx - u00 * (1 - dx)) * diff
        r = (slice(None), None, None, None)
        grad_x = slope_x.sum(axis=-1) * t * roi_w[r]
        grad_y = slope_y.sum(axis=-1) * t * roi_h[r]
        trans = xp.zeros(inputs[2].shape, dtype)
        rows = xp.arange(rois.shape[0])[r]
        cls = xp.asarray(2 * class_id)[None, :, None, None]
        ph, pw = xp.asarray(part)[None, None, :, None], xp.asarray(part)[None, None, None, :]
        scatter_add(xp, trans, tuple(xp.broadcast_arrays(rows, cls, ph, pw)), grad_x)
        scatter_add(xp, trans, tuple(xp.broadcast_arrays(rows, cls + 1, ph, pw)), grad_y)
        grads[2] = trans.astype(inputs[2].dtype)
    return grads


OPS = [
    OpDef(
        name="_contrib_DeformablePSROIPooling",
        params=DeformablePSROIPoolingParams,
        arguments=_arguments,
        hidden_outputs=1,  # MXNet's top_count: the samples each bin averaged
        infer_shape=_infer_shape,
        forward=_forward,
        backward=_backward,
        doc="Position-sensitive ROI pooling whose parts move by learned offsets.",
    ),
]
