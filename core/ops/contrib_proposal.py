"""Proposal and MultiProposal (mx.contrib): Faster R-CNN's region proposal layer.

As MXNet 1.9.1's CPU kernels (contrib/proposal.cc, multi_proposal.cc), in
float32: anchors of every ratio (outer) and scale (inner) are laid on the
feature map every ``feature_stride`` pixels, moved by the predicted deltas
(or, with ``iou_loss``, corner offsets) and clipped to the image; anchors
past the image's real size (``im_info``) and boxes smaller than
``rpn_min_size * scale`` score -1 (small ones also grow by ``min_size / 2``
on each side). The ``rpn_pre_nms_top_n`` best by score (stable) go through
greedy NMS (IoU with +1 pixel extents, suppressing above ``threshold``) until
``rpn_post_nms_top_n`` are kept; the output repeats the kept boxes
cyclically to fill ``rpn_post_nms_top_n`` rows of [batch index, x1, y1, x2, y2].
Proposal takes one image; MultiProposal a batch. Gradients are zero.
"""

import attrs
import numpy as np

from .base import OpDef, merge_shape, mismatch
from .contrib_multibox import float32_only
from .params import param

__all__ = ["OPS"]

_F = np.float32


@attrs.frozen(kw_only=True)
class ProposalParams:
    rpn_pre_nms_top_n: int = param("int", 6000)
    rpn_post_nms_top_n: int = param("int", 300)
    threshold: float = param("float", 0.7)
    rpn_min_size: int = param("int", 16)
    scales: tuple = param("floats", (4.0, 8.0, 16.0, 32.0))
    ratios: tuple = param("floats", (0.5, 1.0, 2.0))
    feature_stride: int = param("int", 16)
    output_score: bool = param("bool", False)
    iou_loss: bool = param("bool", False)


def _hidden(p):
    return 0 if p.output_score else 1


def _infer_shape(batched):
    def infer(p, in_shapes, out_shapes, aux_shapes):
        cls_prob = in_shapes[0]
        if cls_prob is not None and len(cls_prob) != 4:
            raise mismatch("cls_prob", cls_prob, "(batch, 2 * anchors, height, width)", "4-D")
        if cls_prob is None or not cls_prob[1]:
            return in_shapes, out_shapes, aux_shapes
        anchors = len(p.scales) * len(p.ratios)
        if cls_prob[1] != 2 * anchors:
            reason = f"{len(p.ratios)} ratios x {len(p.scales)} scales, background and object"
            raise mismatch("cls_prob", cls_prob, f"(batch, {2 * anchors}, height, width)", reason)
        bbox = merge_shape((cls_prob[0], cls_prob[1] * 2, *cls_prob[2:]), in_shapes[1], "bbox_pred")
        info = merge_shape((cls_prob[0], 3), in_shapes[2], "im_info")
        rows = (cls_prob[0] if batched else 1) * p.rpn_post_nms_top_n
        outs = [(rows, 5), (rows, 1)][: len(out_shapes)]
        return [cls_prob, bbox, info], outs, aux_shapes

    return infer


def _base_anchors(p):
    """(A, 4) anchors around the first cell, ratio-major, as MXNet's GenerateAnchors."""
    size = _F(p.feature_stride)
    center = _F(0.5) * (size - _F(1))
    boxes = []
    for ratio in p.ratios:
        for scale in p.scales:
            ratio_area = np.floor(size * size / _F(ratio))
            width = np.floor(np.sqrt(ratio_area) + _F(0.5)) * _F(scale)
            height = np.floor(width / _F(scale) * _F(ratio) + _F(0.5)) * _F(scale)
            half_w, half_h = _F(0.5) * (width - _F(1)), _F(0.5) * (height - _F(1))
            boxes.append([center - half_w, center - half_h, center + half_w, center + half_h])
    return np.array(boxes, dtype=_F)


def _anchors(xp, p, height, width):
    """(H * W * A, 4) anchors in MXNet's order: row, column, then anchor."""
    base = xp.asarray(_base_anchors(p))
    shift_x = xp.arange(width, dtype=_F) * _F(p.feature_stride)
    shift_y = xp.arange(height, dtype=_F) * _F(p.feature_stride)
    shifts = xp.stack(xp.broadcast_arrays(shift_x[None, :], shift_y[:, None]) * 2, -1)
    return (shifts[:, :, None, :] + base[None, None]).reshape(-1, 4)


def _decode(xp, p, anchors, deltas, info):
    """Moved and clipped boxes (N, 4) of one image; deltas (4A, H, W)."""
    deltas = deltas.reshape(-1, 4, *deltas.shape[1:]).transpose(2, 3, 0, 1).reshape(-1, 4)
    if p.iou_loss:
        boxes = anchors + deltas
    else:
        size = anchors[:, 2:] - anchors[:, :2] + _F(1)
        center = anchors[:, :2] + _F(0.5) * (size - _F(1))
        center = deltas[:, :2] * size + center
        extent = xp.exp(deltas[:, 2:]) * size
        # MXNet computes the corners in double, from float32 centres and extents
        half = 0.5 * (extent.astype(np.float64) - 1.0)
        center = center.astype(np.float64)
        boxes = xp.concatenate([center - half, center + half], axis=1).astype(_F)
    limit = xp.stack([info[1], info[0], info[1], info[0]]) - _F(1)
    return xp.maximum(xp.minimum(boxes, limit), _F(0))


def _nms(xp, boxes, threshold, limit):
    """Indices kept by greedy NMS over score-sorted ``boxes``, at most ``limit`` of them."""
    area = (boxes[:, 2] - boxes[:, 0] + _F(1)) * (boxes[:, 3] - boxes[:, 1] + _F(1))
    alive = xp.ones(boxes.shape[0], dtype=bool)
    kept, cursor = [], 0
    while len(kept) < limit:
        remaining = alive[cursor:]
        if not bool(remaining.any()):
            break
        cursor += int(xp.argmax(remaining))
        kept.append(cursor)
        low = xp.maximum(boxes[cursor, :2], boxes[cursor + 1 :, :2])
        high = xp.minimum(boxes[cursor, 2:], boxes[cursor + 1 :, 2:])
        extent = xp.maximum(_F(0), high - low + _F(1))
        inter = extent[:, 0] * extent[:, 1]
        overlap = inter / (area[cursor] + area[cursor + 1 :] - inter)
        alive[cursor + 1 :] &= ~(overlap > _F(threshold))
        cursor += 1
    return kept


def _propose(xp, p, foreground, deltas, info, anchors):
    """(post_nms_top_n, 4) boxes and (post_nms_top_n,) scores of one image."""
    height, width = foreground.shape[1:]
    scores = foreground.transpose(1, 2, 0).reshape(-1).astype(_F)
    boxes = _decode(xp, p, anchors, deltas.astype(_F), info)
    real_h = int(info[0] / _F(p.feature_stride))
    real_w = int(info[1] / _F(p.feature_stride))
    if real_h > height or real_w > width:
        raise ValueError(
            f"Proposal: im_info {tuple(info.tolist())} is larger than the feature map "
            f"({height} x {width}) times feature_stride {p.feature_stride}"
        )
    rows = xp.arange(height)[:, None, None] >= real_h
    cols = xp.arange(width)[None, :, None] >= real_w
    padded = xp.broadcast_to(rows | cols, (height, width, foreground.shape[0])).reshape(-1)
    min_size = _F(p.rpn_min_size) * info[2]
    size = boxes[:, 2:] - boxes[:, :2] + _F(1)
    small = (size < min_size).any(axis=1)
    grow = xp.where(small[:, None], min_size / _F(2), _F(0))
    boxes = xp.concatenate([boxes[:, :2] - grow, boxes[:, 2:] + grow], axis=1)
    scores = xp.where(padded | small, _F(-1), scores)
    pre = p.rpn_pre_nms_top_n if p.rpn_pre_nms_top_n > 0 else scores.size
    order = xp.argsort(-scores, kind="stable")[: min(pre, scores.size)]
    boxes, scores = boxes[order], scores[order]
    kept = _nms(xp, boxes, p.threshold, min(p.rpn_post_nms_top_n, order.size))
    picks = xp.asarray([kept[i % len(kept)] for i in range(p.rpn_post_nms_top_n)])
    return boxes[picks], scores[picks]


def _forward(batched):
    def forward(ctx, p, inputs, aux):
        xp = ctx.xp
        cls_prob, bbox_pred, im_info = (x.astype(_F, copy=False) for x in inputs)
        if not batched and cls_prob.shape[0] != 1:
            raise ValueError(
                f"Proposal: cls_prob has batch {cls_prob.shape[0]}; it takes one image "
                "(MXNet: 'multiple images each device is not implemented'); use MultiProposal"
            )
        count = cls_prob.shape[1] // 2
        anchors = _anchors(xp, p, *cls_prob.shape[2:])
        rois, scores = [], []
        for b in range(cls_prob.shape[0]):
            boxes, score = _propose(xp, p, cls_prob[b, count:], bbox_pred[b], im_info[b], anchors)
            index = xp.full((boxes.shape[0], 1), _F(b))
            rois.append(xp.concatenate([index, boxes], axis=1))
            scores.append(score[:, None])
        outs = [xp.concatenate(rois), xp.concatenate(scores)]
        dtype = inputs[0].dtype
        return [o.astype(dtype) for o in outs[: 2 if p.output_score else 1]], tuple(inputs)

    return forward


def _zero_grads(ctx, p, saved, out_grads, need_grad):
    """MXNet writes zero gradients for the three inputs."""
    pairs = zip(saved, need_grad, strict=True)
    return [ctx.xp.zeros_like(x) if need else None for x, need in pairs]


def _visible(p):
    return ("output", "score") if p.output_score else ("output",)


OPS = [
    OpDef(
        name=name,
        params=ProposalParams,
        arguments=("cls_prob", "bbox_pred", "im_info"),
        outputs=_visible,
        hidden_outputs=_hidden,
        infer_shape=_infer_shape(batched),
        forward=_forward(batched),
        backward=_zero_grads,
        infer_type=float32_only,
        doc=doc,
    )
    for name, batched, doc in (
        ("_contrib_Proposal", False, "Region proposals of one image from RPN scores and deltas."),
        ("_contrib_MultiProposal", True, "Region proposals of every image of a batch."),
    )
]
