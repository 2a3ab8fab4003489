"""Bounding-box operators: box_nms, box_iou, bipartite_matching.

They follow MXNet 1.9.1's CPU kernels (src/operator/contrib/bounding_box-inl.h):
overlaps are computed in the data's dtype, a box whose width or height is
negative has area 0, and an intersection over a zero union is NaN, which never
passes a threshold. box_nms keeps, per batch, the boxes whose score exceeds
``valid_thresh`` (and whose class is not ``background_id``), sorts them by
score (ties keep input order), keeps the first ``topk`` and suppresses, in
that order, every later box overlapping a kept one by more than
``overlap_thresh``. Its gradient follows each kept box back to its input
position. box_iou and bipartite_matching pass zero gradients, as MXNet does.
box_encode and box_decode live in contrib_box_coding.py.

Differences from MXNet 1.9.1, where it is silently wrong: box_nms converts
every kept box to ``out_format`` (MXNet leaves a box whose first coordinate is
negative unconverted), and bipartite_matching makes at most ``topk`` matches
(MXNet makes ``topk + 1``).
"""

import math

import attrs
import numpy as np

from .base import OpDef, forward_only_shape, merge_shape, mismatch
from .params import param

__all__ = ["OPS", "overlaps", "corner_to_center", "center_to_corner", "check_boxes", "zero_grads"]

_FORMATS = ("corner", "center")


def overlaps(xp, lhs, rhs, box_format="corner"):
    """IoU of every box of ``lhs`` (..., L, 4) with every box of ``rhs`` (..., R, 4): (..., L, R).

    As MXNet's ``Intersect``/``BoxArea``: a negative extent counts as 0 and an
    empty union gives NaN (callers compare with ``>``, which NaN never passes).
    """
    a, b = lhs[..., :, None, :], rhs[..., None, :, :]
    if box_format == "center":
        a, b = center_to_corner(xp, a), center_to_corner(xp, b)
        area_a = _area(xp, lhs[..., 2], lhs[..., 3])[..., :, None]
        area_b = _area(xp, rhs[..., 2], rhs[..., 3])[..., None, :]
    else:
        area_a = _area(xp, lhs[..., 2] - lhs[..., 0], lhs[..., 3] - lhs[..., 1])[..., :, None]
        area_b = _area(xp, rhs[..., 2] - rhs[..., 0], rhs[..., 3] - rhs[..., 1])[..., None, :]
    width = xp.minimum(a[..., 2], b[..., 2]) - xp.maximum(a[..., 0], b[..., 0])
    height = xp.minimum(a[..., 3], b[..., 3]) - xp.maximum(a[..., 1], b[..., 1])
    zero = lhs.dtype.type(0)
    inter = xp.where(width > 0, width, zero) * xp.where(height > 0, height, zero)
    with np.errstate(invalid="ignore", divide="ignore"):
        return inter / (area_a + area_b - inter), inter


def greater(values, threshold):
    """``values > threshold`` as MXNet compares a DType with a float parameter."""
    if values.dtype == np.float16:
        values = values.astype(np.float32)
    return values > values.dtype.type(np.float32(threshold))


def _area(xp, width, height):
    return xp.where((width < 0) | (height < 0), width.dtype.type(0), width * height)


def corner_to_center(xp, boxes):
    """[xmin, ymin, xmax, ymax] -> [x, y, width, height] along the last axis."""
    left, top, right, bottom = (boxes[..., i] for i in range(4))
    two = boxes.dtype.type(2)
    return xp.stack([(left + right) / two, (top + bottom) / two, right - left, bottom - top], -1)


def center_to_corner(xp, boxes):
    """[x, y, width, height] -> [xmin, ymin, xmax, ymax] along the last axis."""
    x, y = boxes[..., 0], boxes[..., 1]
    half_w, half_h = boxes[..., 2] / boxes.dtype.type(2), boxes[..., 3] / boxes.dtype.type(2)
    return xp.stack([x - half_w, y - half_h, x + half_w, y + half_h], -1)


# -- box_nms ------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class BoxNMSParams:
    overlap_thresh: float = param("float", 0.5)
    valid_thresh: float = param("float", 0.0)
    topk: int = param("int", -1)
    coord_start: int = param("int", 2)
    score_index: int = param("int", 1)
    id_index: int = param("int", -1)
    background_id: int = param("int", -1)
    force_suppress: bool = param("bool", False)
    in_format: str = param("str", "corner", choices=_FORMATS)
    out_format: str = param("str", "corner", choices=_FORMATS)


def _nms_check_layout(p, shape):
    """MXNet's checks of box width and of the score, id and coordinate positions."""
    width = shape[-1]
    expected = "(..., num_boxes, box_width)"
    need = 6 if p.id_index >= 0 else 5
    if width < need:
        reason = f"box_width must be at least {need} (score, 4 coordinates{', id' * (need == 6)})"
        raise mismatch("data", shape, expected, reason)
    coords = range(p.coord_start, p.coord_start + 4)
    if p.coord_start < 0 or coords[-1] >= width:
        raise mismatch(
            "data", shape, expected, f"coordinates {coords[0]}..{coords[-1]} out of range"
        )
    for name, index in (("score_index", p.score_index), ("id_index", p.id_index)):
        if name == "id_index" and index < 0:
            continue
        if not 0 <= index < width or index in coords:
            reason = f"{name}={index} is outside the box or overlaps the coordinates"
            raise mismatch("data", shape, expected, reason)
    if p.id_index >= 0 and p.id_index == p.score_index:
        raise mismatch("data", shape, expected, "id_index and score_index are the same column")


def _nms_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = merge_shape(in_shapes[0], out_shapes[0], "output")
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    if len(data) < 2:
        raise mismatch("data", data, "(..., num_boxes, box_width)", "box_nms needs at least 2-D")
    if data[-1]:
        _nms_check_layout(p, data)
    return [data], [data], aux_shapes


def _nms_order(xp, boxes, p):
    """Per batch: candidate order (valid boxes by descending score, stable) and valid counts."""
    dtype = boxes.dtype.type
    scores = boxes[..., p.score_index]
    valid = scores > dtype(np.float32(p.valid_thresh))  # MXNet casts the threshold to DType
    if p.id_index >= 0:
        valid &= boxes[..., p.id_index] != dtype(p.background_id)
    key = xp.where(valid, -scores.astype(np.float64), np.inf)
    return xp.argsort(key, axis=1, kind="stable"), valid.sum(axis=1)


def _nms_keep(xp, candidates, alive, p):
    """Which candidates (B, K, W) survive greedy suppression, ``alive`` marking real ones."""
    coords = candidates[..., p.coord_start : p.coord_start + 4]
    classes = None
    if not p.force_suppress and p.id_index >= 0:
        classes = candidates[..., p.id_index].astype(np.int64)  # MXNet compares int casts
    batch, count = alive.shape
    chunk = max(1, min(count, (1 << 22) // max(1, batch * count)))
    position = xp.arange(count)
    for start in range(0, count, chunk):
        stop = min(count, start + chunk)
        iou, _ = overlaps(xp, coords[:, start:stop], coords, p.in_format)
        hits = greater(iou, p.overlap_thresh) & (position > position[start:stop, None])
        if classes is not None:
            hits &= classes[:, start:stop, None] == classes[:, None, :]
        for row in range(stop - start):  # a reference only suppresses while it is kept
            alive = alive & ~(hits[:, row] & alive[:, start + row, None])
    return alive


def _nms_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    num, width = data.shape[-2], data.shape[-1]
    batch = math.prod(data.shape[:-2])
    boxes = data.reshape(batch, num, width)
    topk = num if p.topk < 0 else min(num, p.topk)
    if topk < 1:  # MXNet copies the input and records the identity
        return [data.copy()], (xp.arange(batch * num).reshape(batch, num), data.shape)
    order, counts = _nms_order(xp, boxes, p)
    kept_counts = xp.minimum(counts, topk)
    depth = int(kept_counts.max()) if batch else 0
    order = order[:, :depth]
    candidates = xp.take_along_axis(boxes, order[..., None], axis=1)
    alive = xp.arange(depth)[None, :] < kept_counts[:, None]
    keep = _nms_keep(xp, candidates, alive, p)
    out = xp.full(boxes.shape, -1, dtype=data.dtype)
    record = xp.full((batch, num), -1, dtype=np.int64)
    rows, cols = xp.nonzero(keep)
    slots = (xp.cumsum(keep, axis=1) - 1)[rows, cols]
    picked = candidates[rows, cols]
    if p.in_format != p.out_format:
        convert = corner_to_center if p.out_format == "center" else center_to_corner
        box = slice(p.coord_start, p.coord_start + 4)
        picked[:, box] = convert(xp, picked[:, box])
    out[rows, slots] = picked
    record[rows, slots] = rows * num + order[rows, cols]
    return [out.reshape(data.shape)], (record, data.shape)


def _nms_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    xp, (record, shape) = ctx.xp, saved
    width = shape[-1]
    head = out_grads[0].reshape(-1, width)
    grad = xp.zeros_like(head)
    source = record.reshape(-1)
    kept = source >= 0
    grad[source[kept]] = head[kept]
    return [grad.reshape(shape)]


# -- box_iou ------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class BoxIoUParams:
    format: str = param("str", "corner", choices=_FORMATS)


def check_boxes(name, shape, min_ndim=2, ndim=None):
    if shape is None:
        return
    expected = "(..., 4)" if ndim is None else f"a {ndim}-D (..., 4) array"
    if (ndim is not None and len(shape) != ndim) or len(shape) < min_ndim:
        raise mismatch(name, shape, expected, f"{name} must be {ndim or f'at least {min_ndim}'}-D")
    if shape[-1] and shape[-1] != 4:
        raise mismatch(name, shape, expected, "the last axis holds the 4 box coordinates")


def _iou_shape(p, in_shapes):
    return [tuple(in_shapes[0][:-1]) + tuple(in_shapes[1][:-1])]


def _iou_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    for name, shape in zip(("lhs", "rhs"), in_shapes, strict=True):
        check_boxes(name, shape)
    return forward_only_shape(_iou_shape)(p, in_shapes, out_shapes, aux_shapes)


def _iou_forward(ctx, p, inputs, aux):
    xp, (lhs, rhs) = ctx.xp, inputs
    left, right = lhs.reshape(-1, 4), rhs.reshape(-1, 4).astype(lhs.dtype, copy=False)
    iou, inter = overlaps(xp, left, right, p.format)
    iou = xp.where(inter > 0, iou, lhs.dtype.type(0))  # MXNet returns 0 before dividing
    return [iou.reshape(lhs.shape[:-1] + rhs.shape[:-1])], (lhs, rhs)


def zero_grads(ctx, p, saved, out_grads, need_grad):
    """MXNet passes zero gradients to every input of these operators."""
    return [
        ctx.xp.zeros_like(x) if need else None for x, need in zip(saved, need_grad, strict=True)
    ]


# -- bipartite_matching -------------------------------------------------------------


@attrs.frozen(kw_only=True)
class BipartiteMatchingParams:
    is_ascend: bool = param("bool", False)
    threshold: float = param("float")
    topk: int = param("int", -1)


def _matching_shape(p, in_shapes):
    data = in_shapes[0]
    if len(data) < 2:
        raise mismatch("data", data, "(..., rows, cols)", "the score matrix must be at least 2-D")
    return [data[:-1], data[:-2] + data[-1:]]


def _matching_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    rows, cols = data.shape[-2], data.shape[-1]
    scores = data.reshape(-1, rows * cols)
    batch = scores.shape[0]
    key = scores.astype(np.float64) if p.is_ascend else -scores.astype(np.float64)
    rank = xp.empty(scores.shape, dtype=np.int64)  # each entry's place in the sorted order
    order = xp.argsort(key, axis=1, kind="stable")
    rank[xp.arange(batch)[:, None], order] = xp.arange(rows * cols)[None, :]
    row_of, col_of = xp.arange(rows * cols) // cols, xp.arange(rows * cols) % cols
    row_match = xp.full((batch, rows), -1, dtype=np.int64)
    col_match = xp.full((batch, cols), -1, dtype=np.int64)
    going = xp.ones(batch, dtype=bool)
    threshold = float(np.float32(p.threshold))  # a float parameter, compared in float or double
    limit = min(rows, cols) if p.topk <= 0 else min(rows, cols, p.topk)
    every = xp.arange(batch)
    for _ in range(limit):
        free = (row_match[:, row_of] < 0) & (col_match[:, col_of] < 0)
        best = xp.argmin(xp.where(free, rank, rows * cols), axis=1)
        score = scores[every, best].astype(np.float64)
        good = score < threshold if p.is_ascend else score > threshold
        going &= free[every, best] & good  # MXNet stops at the first score that fails
        chosen = every[going]
        row_match[chosen, row_of[best[going]]] = col_of[best[going]]
        col_match[chosen, col_of[best[going]]] = row_of[best[going]]
    outs = [row_match.reshape(data.shape[:-1]), col_match.reshape(data.shape[:-2] + (cols,))]
    return [o.astype(data.dtype) for o in outs], (data,)


OPS = [
    OpDef(
        name="_contrib_box_nms",
        aliases=("_contrib_box_non_maximum_suppression",),
        params=BoxNMSParams,
        outputs=("output0",),  # MXNet numbers it: the op has two outputs, one hidden
        hidden_outputs=1,  # MXNet's record of each kept box's input position
        infer_shape=_nms_infer_shape,
        forward=_nms_forward,
        backward=_nms_backward,
        doc="Non-maximum suppression of scored boxes; suppressed rows become -1.",
    ),
    OpDef(
        name="_contrib_box_iou",
        params=BoxIoUParams,
        arguments=("lhs", "rhs"),
        infer_shape=_iou_infer_shape,
        forward=_iou_forward,
        backward=zero_grads,
        doc="Intersection over union of every box of lhs with every box of rhs.",
    ),
    OpDef(
        name="_contrib_bipartite_matching",
        params=BipartiteMatchingParams,
        outputs=("output0", "output1"),
        infer_shape=forward_only_shape(_matching_shape, partial=True),
        forward=_matching_forward,
        backward=zero_grads,
        doc="Greedy bipartite matching of a score matrix: matched column per row, row per column.",
    ),
]
