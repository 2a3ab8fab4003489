"""MultiBoxPrior, MultiBoxTarget, MultiBoxDetection (mx.contrib): the SSD anchor operators.

They follow MXNet 1.9.1's CPU kernels (src/operator/contrib/multibox_*.cc):

* MultiBoxPrior: per feature-map cell, one anchor per size at the first
  ratio, then one per further ratio at the first size, computed in float32.
* MultiBoxTarget: every valid ground truth (labels end at the first row of
  class -1) first takes its best anchor, greedily by overlap; then every
  other anchor whose best overlap passes ``overlap_threshold`` is positive.
  Negatives are all other anchors, or with ``negative_mining_ratio`` the
  ``ratio * positives`` anchors of lowest background probability among
  those whose overlap is under ``negative_mining_thresh``; the rest get
  ``ignore_label``.
* MultiBoxDetection: decodes every anchor with its best non-background
  class, keeps those scoring at least ``threshold``, sorts them by score,
  keeps ``nms_topk`` and suppresses same-class (or, forced, any) overlaps of
  at least ``nms_threshold``, writing -1 into the class column only.

None of them passes a gradient (MXNet writes zeros). As in MXNet they take
float32 only. Difference from MXNet: MultiBoxPrior's automatic steps follow
each call's input size (MXNet keeps the first call's steps in the operator).
"""

import attrs
import numpy as np

from .base import OpDef, known, mismatch
from .params import param

__all__ = ["OPS", "float32_only"]

_VARIANCES = (0.1, 0.1, 0.2, 0.2)


def _four(instance, attribute, value):
    if len(value) != 4:
        raise ValueError(f"{attribute.name} must have 4 values, got {value}")


def _zero_grads(ctx, p, saved, out_grads, need_grad):
    """MXNet writes zero gradients for every input of these operators."""
    pairs = zip(saved, need_grad, strict=True)
    return [ctx.xp.zeros_like(x) if need else None for x, need in pairs]


def float32_only(p, in_types, out_types, aux_types):
    """MXNet runs these legacy operators on float32 only ("Unsupported data type")."""
    for index, dtype in enumerate(in_types):
        if dtype is not None and dtype != "float32":
            raise TypeError(
                f"this operator takes float32 inputs only (as MXNet 1.9.1); input {index} "
                f"is {dtype}: cast it with .astype('float32')"
            )
    return ["float32"] * len(in_types), ["float32"] * len(out_types), aux_types


def _require(name, shape, ndim, layout):
    if shape is not None and len(shape) != ndim:
        raise mismatch(name, shape, layout, f"{name} must be {ndim}-D")


# -- MultiBoxPrior --------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class MultiBoxPriorParams:
    sizes: tuple = param("floats", (1.0,))
    ratios: tuple = param("floats", (1.0,))
    clip: bool = param("bool", False)
    steps: tuple = param("floats", (-1.0, -1.0))
    offsets: tuple = param("floats", (0.5, 0.5))


def _prior_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is not None and len(data) < 4:
        raise mismatch("data", data, "(batch, channel, height, width)", "data must be 4-D")
    if len(p.steps) != 2 or len(p.offsets) != 2:
        raise mismatch("data", data, "steps and offsets of 2 values (y, x)", "")
    if data is None or not (data[2] and data[3]):
        return in_shapes, out_shapes, aux_shapes
    anchors = data[2] * data[3] * (len(p.sizes) + len(p.ratios) - 1)
    return in_shapes, [(1, anchors, 4)], aux_shapes


def _prior_forward(ctx, p, inputs, aux):
    data, f32 = inputs[0], np.float32
    height, width = data.shape[2], data.shape[3]
    step_y, step_x = (f32(s) for s in p.steps)
    if step_y <= 0 or step_x <= 0:  # MXNet derives both from the feature map
        step_y, step_x = f32(1) / f32(height), f32(1) / f32(width)
    sizes = np.array(p.sizes, f32)
    roots = np.sqrt(np.array(p.ratios, f32))
    sizes = np.concatenate([sizes, np.full(len(roots) - 1, sizes[0], f32)])
    roots = np.concatenate([np.full(len(p.sizes), roots[0], f32), roots[1:]])
    half_w = sizes * f32(height) / f32(width) * roots / f32(2)
    half_h = sizes / roots / f32(2)
    center_y = (np.arange(height, dtype=f32) + f32(p.offsets[0])) * step_y
    center_x = (np.arange(width, dtype=f32) + f32(p.offsets[1])) * step_x
    cy, cx = center_y[:, None, None], center_x[None, :, None]
    boxes = np.stack(np.broadcast_arrays(cx - half_w, cy - half_h, cx + half_w, cy + half_h), -1)
    if p.clip:
        boxes = np.clip(boxes, 0, 1)
    out = ctx.xp.asarray(boxes.reshape(1, -1, 4)).astype(data.dtype)
    return [out], (data,)


# -- MultiBoxTarget --------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class MultiBoxTargetParams:
    overlap_threshold: float = param("float", 0.5)
    ignore_label: float = param("float", -1.0)
    negative_mining_ratio: float = param("float", -1.0)
    negative_mining_thresh: float = param("float", 0.5)
    minimum_negative_samples: int = param("int", 0)
    variances: tuple = param("floats", _VARIANCES, validator=_four)


def _target_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    anchor, label, cls_pred = in_shapes
    _require("anchor", anchor, 3, "(1, num_anchors, 4)")
    _require("label", label, 3, "(batch, num_labels, label_width >= 5)")
    _require("cls_pred", cls_pred, 3, "(batch, num_classes, num_anchors)")
    if anchor is not None and (anchor[0] not in (0, 1) or anchor[2] not in (0, 4)):
        raise mismatch("anchor", anchor, "(1, num_anchors, 4)", "anchors are shared by the batch")
    if label is not None and 0 < label[2] < 5:
        raise mismatch("label", label, "(batch, num_labels, label_width >= 5)", "")
    if known(anchor) and known(cls_pred) and cls_pred[2] != anchor[1]:
        raise mismatch("cls_pred", cls_pred, f"(batch, num_classes, {anchor[1]})", "anchors")
    if not (known(anchor) and known(label)):
        return in_shapes, out_shapes, aux_shapes
    loc = (label[0], anchor[1] * 4)
    return in_shapes, [loc, loc, (label[0], anchor[1])], aux_shapes


def _valid_labels(labels):
    """How many leading rows are ground truths: the list ends at the first class -1."""
    ended = labels[:, 0] == -1
    count = int(np.argmax(ended)) if ended.any() else len(labels)
    if count < len(labels) and not (labels[count, :5] == -1).all():
        raise ValueError(f"MultiBoxTarget: label row {count} has class -1 but a box; pad with -1")
    return count


def _target_overlaps(anchors, truths):
    """(A, G) IoU as MXNet's target kernel computes it (areas unclamped, x/0 -> 0)."""
    a, g = anchors[:, None, :], truths[None, :, :4]
    zero = anchors.dtype.type(0)
    width = np.maximum(zero, np.minimum(a[..., 2], g[..., 2]) - np.maximum(a[..., 0], g[..., 0]))
    height = np.maximum(zero, np.minimum(a[..., 3], g[..., 3]) - np.maximum(a[..., 1], g[..., 1]))
    inter = width * height
    area_a = (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
    area_g = (g[..., 2] - g[..., 0]) * (g[..., 3] - g[..., 1])
    union = area_a + area_g - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union == 0, zero, inter / union).astype(np.float32)


def _greedy_matches(iou):
    """MXNet's first stage: each ground truth, best pair first, takes one anchor."""
    flags = np.full(iou.shape[0], -1, np.int64)
    match = np.full(iou.shape[0], -1, np.int64)
    taken = np.zeros(iou.shape[1], bool)
    for _ in range(iou.shape[1]):
        free = np.where((flags == 1)[:, None] | taken[None, :], -np.inf, iou)
        best = int(np.argmax(free))  # row-major first maximum, as MXNet's strict ">"
        anchor, truth = divmod(best, iou.shape[1])
        if not free[anchor, truth] > np.float32(1e-6):
            break
        flags[anchor], match[anchor], taken[truth] = 1, truth, True
    return flags, match


def _target_flags(p, iou, cls_pred):
    """Per anchor: 1 positive, 0 negative, -1 ignored; and its ground truth."""
    flags, match = _greedy_matches(iou)
    best, best_iou = np.argmax(iou, axis=1), np.max(iou, axis=1)
    if p.overlap_threshold > 0:
        positive = (flags != 1) & (best_iou > np.float32(p.overlap_threshold))
        flags[positive], match[positive] = 1, best[positive]
    positives = int((flags == 1).sum())
    if p.negative_mining_ratio <= 0:
        flags[flags != 1] = 0
        return flags, match
    if not p.negative_mining_thresh > 0:
        raise ValueError("MultiBoxTarget: negative_mining_thresh must be > 0 when mining")
    wanted = min(int(positives * np.float32(p.negative_mining_ratio)), len(flags) - positives)
    if wanted <= 0:
        return flags, match
    shifted = np.exp(cls_pred - cls_pred.max(axis=0))
    background = shifted[0] / shifted.sum(axis=0)
    candidates = np.nonzero((flags == -1) & (best_iou < np.float32(p.negative_mining_thresh)))[0]
    if len(candidates) < wanted:
        raise ValueError(f"MultiBoxTarget: {wanted} negatives wanted, {len(candidates)} found")
    order = np.argsort(background[candidates], kind="stable")
    flags[candidates[order[:wanted]]] = 0
    return flags, match


def _loc_targets(p, anchors, truths):
    """MXNet's AssignLocTargets, in float32."""
    a, g = anchors.astype(np.float32), truths.astype(np.float32)
    aw, ah = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
    gw, gh = g[:, 2] - g[:, 0], g[:, 3] - g[:, 1]
    half = np.float32(0.5)
    ax, ay = (a[:, 0] + a[:, 2]) * half, (a[:, 1] + a[:, 3]) * half
    gx, gy = (g[:, 0] + g[:, 2]) * half, (g[:, 1] + g[:, 3]) * half
    vx, vy, vw, vh = (np.float32(v) for v in p.variances)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.stack(
            [(gx - ax) / aw / vx, (gy - ay) / ah / vy, np.log(gw / aw) / vw, np.log(gh / ah) / vh],
            -1,
        )


def _target_forward(ctx, p, inputs, aux):
    xp = ctx.xp
    anchor, label, cls_pred = (np.asarray(ctx.backend.to_host(x)) for x in inputs)
    anchors = anchor.reshape(-1, 4)
    batch, num = label.shape[0], anchors.shape[0]
    loc = np.zeros((batch, num, 4), np.float32)
    mask = np.zeros((batch, num, 4), np.float32)
    cls = np.full((batch, num), np.float32(p.ignore_label), np.float32)
    for b in range(batch):
        count = _valid_labels(label[b])
        if count == 0:
            continue
        truths = label[b, :count, 1:5]
        flags, match = _target_flags(p, _target_overlaps(anchors, truths), cls_pred[b])
        positive = flags == 1
        cls[b, flags == 0] = 0
        cls[b, positive] = label[b, match[positive], 0] + 1
        mask[b, positive] = 1
        loc[b, positive] = _loc_targets(p, anchors[positive], truths[match[positive]])
    outs = [loc.reshape(batch, -1), mask.reshape(batch, -1), cls]
    return [xp.asarray(o).astype(anchor.dtype) for o in outs], tuple(inputs)


# -- MultiBoxDetection ------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class MultiBoxDetectionParams:
    clip: bool = param("bool", True)
    threshold: float = param("float", 0.01)
    background_id: int = param("int", 0)
    nms_threshold: float = param("float", 0.5)
    force_suppress: bool = param("bool", False)
    variances: tuple = param("floats", _VARIANCES, validator=_four)
    nms_topk: int = param("int", -1)


def _detection_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    cls_prob, loc_pred, anchor = in_shapes
    _require("cls_prob", cls_prob, 3, "(batch, num_classes, num_anchors)")
    _require("loc_pred", loc_pred, 2, "(batch, num_anchors * 4)")
    _require("anchor", anchor, 3, "(1, num_anchors, 4)")
    if known(anchor) and anchor[2] != 4:
        raise mismatch("anchor", anchor, "(1, num_anchors, 4)", "boxes have 4 coordinates")
    if known(cls_prob) and known(anchor) and cls_prob[2] != anchor[1]:
        raise mismatch("cls_prob", cls_prob, f"(batch, num_classes, {anchor[1]})", "anchors")
    if known(cls_prob) and known(loc_pred) and loc_pred[1] != cls_prob[2] * 4:
        raise mismatch("loc_pred", loc_pred, f"(batch, {cls_prob[2] * 4})", "4 per anchor")
    if not (known(cls_prob) and known(anchor)):
        return in_shapes, out_shapes, aux_shapes
    return in_shapes, [(cls_prob[0], anchor[1], 6)], aux_shapes


def _decode(xp, p, anchors, loc, dtype):
    """MXNet's TransformLocations: (B, A, 4) corner boxes, clipped to [0, 1] if asked."""
    al, at, ar, ab = (anchors[:, i] for i in range(4))
    aw, ah = ar - al, ab - at
    ax, ay = (al + ar) / dtype.type(2), (at + ab) / dtype.type(2)
    vx, vy, vw, vh = (dtype.type(np.float32(v)) for v in p.variances)
    ox, oy = loc[..., 0] * vx * aw + ax, loc[..., 1] * vy * ah + ay
    ow = xp.exp(loc[..., 2] * vw) * aw / dtype.type(2)
    oh = xp.exp(loc[..., 3] * vh) * ah / dtype.type(2)
    boxes = xp.stack([ox - ow, oy - oh, ox + ow, oy + oh], -1)
    return xp.clip(boxes, 0, 1) if p.clip else boxes


def _overlaps(xp, a, b):
    """(B, C, K) IoU as MXNet's CalculateOverlap: areas unclamped, a union <= 0 gives 0."""
    a, b = a[:, :, None, :], b[:, None, :, :]
    w = xp.maximum(0, xp.minimum(a[..., 2], b[..., 2]) - xp.maximum(a[..., 0], b[..., 0]))
    h = xp.maximum(0, xp.minimum(a[..., 3], b[..., 3]) - xp.maximum(a[..., 1], b[..., 1]))
    inter = w * h
    union = (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
    union = union + (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1]) - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return xp.where(union <= 0, 0, inter / union)


def _suppress(xp, rows, alive, p):
    """Greedy NMS over sorted rows (B, K, 6); ``alive`` marks rows still holding a class."""
    boxes, ids = rows[..., 2:], rows[..., 0]
    batch, count = alive.shape
    position = xp.arange(count)
    chunk = max(1, min(count, (1 << 22) // max(1, batch * count)))
    for start in range(0, count, chunk):
        stop = min(count, start + chunk)
        iou = _overlaps(xp, boxes[:, start:stop], boxes)
        hits = (iou >= np.float32(p.nms_threshold)) & (position > position[start:stop, None])
        if not p.force_suppress:
            hits &= ids[:, start:stop, None] == ids[:, None, :]
        for row in range(stop - start):  # a row suppresses only while it is alive itself
            alive = alive & ~(hits[:, row] & alive[:, start + row, None])
    return alive


def _detection_forward(ctx, p, inputs, aux):
    xp, (cls_prob, loc_pred, anchor) = ctx.xp, inputs
    dtype = np.dtype(np.float64 if cls_prob.dtype == np.float64 else np.float32)
    batch, _, num = cls_prob.shape
    probs = cls_prob.astype(dtype)
    anchors = anchor.reshape(-1, 4)[:num].astype(dtype)
    boxes = _decode(xp, p, anchors, loc_pred.reshape(batch, num, 4).astype(dtype), dtype)
    if probs.shape[1] > 1:
        ids = xp.argmax(probs[:, 1:], axis=1) + 1
        score = xp.max(probs[:, 1:], axis=1)
        ids = xp.where(score > -1, ids, 0)  # MXNet starts its search at score -1
        score = xp.maximum(score, -1)
    else:
        ids, score = xp.zeros((batch, num), np.int64), xp.full((batch, num), -1, dtype)
    ids = xp.where((ids > 0) & (score < np.float32(p.threshold)), 0, ids)
    rows = xp.concatenate([(ids - 1).astype(dtype)[..., None], score[..., None], boxes], -1)
    valid = ids > 0
    compact = xp.argsort((~valid).astype(np.int8), axis=1, kind="stable")
    out = xp.where(valid[..., None], rows, -1)
    out = xp.take_along_axis(out, compact[..., None], axis=1)
    valid_count = valid.sum(axis=1)
    if 0 < p.nms_threshold <= 1 and batch > 0 and int(valid_count.max()) > 0:
        out = _sort_and_suppress(xp, p, out, valid_count)
    return [out.astype(cls_prob.dtype)], tuple(inputs)


def _sort_and_suppress(xp, p, out, valid_count):
    """MXNet's second pass: sort the valid rows by score, keep nms_topk, suppress overlaps."""
    num = out.shape[1]
    slot = xp.arange(num)[None, :]
    valid = slot < valid_count[:, None]
    key = xp.where(valid, -out[..., 1], np.inf)
    ordered = xp.take_along_axis(out, xp.argsort(key, axis=1, kind="stable")[..., None], axis=1)
    keep = valid_count if p.nms_topk <= 0 else xp.minimum(valid_count, p.nms_topk)
    kept = slot < keep[:, None]
    out = xp.where(kept[..., None], ordered, out)  # rows past topk keep their unsorted values
    out[..., 0] = xp.where(valid & ~kept, -1, out[..., 0])
    depth = int(keep.max())
    alive = _suppress(xp, out[:, :depth], kept[:, :depth], p)
    out[:, :depth, 0] = xp.where(kept[:, :depth] & ~alive, -1, out[:, :depth, 0])
    return out


OPS = [
    OpDef(
        name="_contrib_MultiBoxPrior",
        params=MultiBoxPriorParams,
        infer_shape=_prior_infer_shape,
        forward=_prior_forward,
        backward=_zero_grads,
        infer_type=float32_only,
        doc="Anchor boxes (1, height * width * anchors, 4) for every cell of a feature map.",
    ),
    OpDef(
        name="_contrib_MultiBoxTarget",
        params=MultiBoxTargetParams,
        arguments=("anchor", "label", "cls_pred"),
        outputs=("loc_target", "loc_mask", "cls_target"),
        infer_shape=_target_infer_shape,
        forward=_target_forward,
        backward=_zero_grads,
        infer_type=float32_only,
        doc="SSD training targets: box offsets, their mask and the class of every anchor.",
    ),
    OpDef(
        name="_contrib_MultiBoxDetection",
        params=MultiBoxDetectionParams,
        arguments=("cls_prob", "loc_pred", "anchor"),
        infer_shape=_detection_infer_shape,
        forward=_detection_forward,
        backward=_zero_grads,
        infer_type=float32_only,
        doc="Detections [class, score, xmin, ymin, xmax, ymax] from SSD predictions, after NMS.",
    ),
]
