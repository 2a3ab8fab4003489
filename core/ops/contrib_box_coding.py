"""box_encode and box_decode (mx.contrib): anchor-relative box coding, as MXNet 1.9.1.

box_encode turns matched ground truths into normalized center offsets
``((x - ax) / aw - mean) / std`` and log size ratios, masked to the anchors
whose sample is positive (> 0.5); box_decode inverts it for corner or center
anchors, clipping the log size ratios at ``clip`` when it is positive. Both
pass zero gradients (MXNet's MakeZeroGradNodes).
"""

import attrs
import numpy as np

from .base import OpDef, merge_shape, mismatch
from .contrib_box import check_boxes, corner_to_center, zero_grads
from .params import param

__all__ = ["OPS"]

_FORMATS = ("corner", "center")


def _encode_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    samples, matches, anchors, refs = in_shapes[:4]
    if samples is not None and len(samples) != 2:
        raise mismatch("samples", samples, "(batch, num_anchors)", "samples must be 2-D")
    if matches is not None and len(matches) < 2:
        raise mismatch("matches", matches, "(batch, num_anchors)", "matches must be 2-D")
    check_boxes("anchors", anchors, min_ndim=3)
    check_boxes("refs", refs, min_ndim=3)
    ins = [*in_shapes[:4], merge_shape(in_shapes[4], (4,), "means")]
    ins.append(merge_shape(in_shapes[5], (4,), "stds"))
    if anchors is None:
        return ins, out_shapes, aux_shapes
    outs = [merge_shape(anchors, o, "output") for o in out_shapes]
    return ins, outs, aux_shapes


def _encode_forward(ctx, p, inputs, aux):
    xp = ctx.xp
    samples, matches, anchors, refs, means, stds = inputs
    batch, num = anchors.shape[0], anchors.shape[1]
    dtype = anchors.dtype
    anchors = anchors.reshape(batch, num, 4)
    refs = refs.reshape(batch, -1, 4).astype(dtype, copy=False)
    index = xp.clip(matches.reshape(batch, num).astype(np.int64), 0, refs.shape[1] - 1)
    ref = xp.take_along_axis(refs, index[..., None], axis=1)
    ref_center, anchor_center = corner_to_center(xp, ref), corner_to_center(xp, anchors)
    with np.errstate(invalid="ignore", divide="ignore"):
        offsets = (ref_center[..., :2] - anchor_center[..., :2]) / anchor_center[..., 2:]
        scales = xp.log(ref_center[..., 2:] / anchor_center[..., 2:])
        encoded = (xp.concatenate([offsets, scales], -1) - means.astype(dtype)) / stds.astype(dtype)
    valid = samples.reshape(batch, num, 1) > 0.5
    targets = xp.where(valid, encoded, dtype.type(0))
    masks = xp.broadcast_to(valid, targets.shape).astype(dtype)
    return [targets, masks], tuple(inputs)


@attrs.frozen(kw_only=True)
class BoxDecodeParams:
    std0: float = param("float", 1.0)
    std1: float = param("float", 1.0)
    std2: float = param("float", 1.0)
    std3: float = param("float", 1.0)
    clip: float = param("float", -1.0)
    format: str = param("str", "center", choices=_FORMATS)


def _decode_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, anchors = in_shapes
    check_boxes("data", data, ndim=3)
    check_boxes("anchors", anchors, min_ndim=3)
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    return in_shapes, [merge_shape(data, out_shapes[0], "output")], aux_shapes


def _decode_forward(ctx, p, inputs, aux):
    xp, (data, anchors) = ctx.xp, inputs
    dtype = data.dtype.type
    anchors = anchors.reshape(-1, 4)[: data.shape[1]].astype(data.dtype, copy=False)
    if p.format == "corner":
        anchors = corner_to_center(xp, anchors)
    stds = [np.float32(s) for s in (p.std0, p.std1, p.std2, p.std3)]  # float parameters
    stds = xp.asarray(stds).astype(data.dtype)
    scaled = data * stds
    center = scaled[..., :2] * anchors[:, 2:] + anchors[:, :2]
    extent = scaled[..., 2:]
    if p.clip > 0:
        extent = xp.minimum(extent, dtype(np.float32(p.clip)))
    half = xp.exp(extent) * anchors[:, 2:] * dtype(0.5)
    return [xp.concatenate([center - half, center + half], -1)], (data, inputs[1])


OPS = [
    OpDef(
        name="_contrib_box_encode",
        arguments=("samples", "matches", "anchors", "refs", "means", "stds"),
        outputs=("output0", "output1"),
        infer_shape=_encode_infer_shape,
        forward=_encode_forward,
        backward=zero_grads,
        doc="Training targets of matched anchors as normalized center offsets, and their mask.",
    ),
    OpDef(
        name="_contrib_box_decode",
        params=BoxDecodeParams,
        arguments=("data", "anchors"),
        infer_shape=_decode_infer_shape,
        forward=_decode_forward,
        backward=zero_grads,
        doc="Boxes (corner format) from predicted center offsets relative to anchors.",
    ),
]
