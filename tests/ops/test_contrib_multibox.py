"""MultiBoxPrior, MultiBoxTarget, MultiBoxDetection (mx.contrib)."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.harness import case_ids, infer, opdef, replay_golden

MULTIBOX_OPS = ("_contrib_MultiBoxPrior", "_contrib_MultiBoxTarget", "_contrib_MultiBoxDetection")


@pytest.mark.parametrize("case_id", case_ids(*MULTIBOX_OPS))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _run(ctx, name, attrs, inputs):
    op = opdef(name)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(OpContext(True, ctx.backend, ctx.device_id), op.parse(attrs), arrays, [])
    return [np.asarray(ctx.backend.to_host(o)) for o in outs]


def test_prior_by_definition(ctx):
    data = np.zeros((1, 1, 2, 4), np.float32)
    (out,) = _run(ctx, "_contrib_MultiBoxPrior", {"sizes": (0.5,), "ratios": (1, 4)}, [data])
    boxes = out.reshape(2, 4, 2, 4)
    # cell (1, 2): center ((2 + 0.5) / 4, (1 + 0.5) / 2); ratio 4 doubles the width, halves height
    cx, cy = 2.5 / 4, 1.5 / 2
    half_w, half_h = 0.5 * 2 / 4 / 2, 0.5 / 2
    np.testing.assert_allclose(boxes[1, 2, 0], [cx - half_w, cy - half_h, cx + half_w, cy + half_h])
    np.testing.assert_allclose(
        boxes[1, 2, 1], [cx - 2 * half_w, cy - half_h / 2, cx + 2 * half_w, cy + half_h / 2]
    )


def test_detection_keeps_best_box_and_drops_its_overlap(ctx):
    anchors = np.array([[[0.1, 0.1, 0.5, 0.5], [0.12, 0.1, 0.5, 0.5], [0.6, 0.6, 0.9, 0.9]]])
    probs = np.array([[[0.1, 0.2, 0.3], [0.9, 0.8, 0.7]]])  # class 1 for every anchor
    loc = np.zeros((1, 12))
    (out,) = _run(ctx, "_contrib_MultiBoxDetection", {}, [probs, loc, anchors.astype(float)])
    assert out[0, :, 0].tolist() == [0, -1, 0]  # sorted by score; the second overlaps the first
    np.testing.assert_allclose(out[0, :, 1], [0.9, 0.8, 0.7])
    np.testing.assert_allclose(out[0, 0, 2:], anchors[0, 0])


def test_target_positive_anchor_encodes_its_truth(ctx):
    anchors = np.array([[[0.1, 0.1, 0.5, 0.5], [0.6, 0.6, 0.9, 0.9]]], np.float32)
    labels = np.array([[[2, 0.1, 0.1, 0.5, 0.6], [-1, -1, -1, -1, -1]]], np.float32)
    cls_pred = np.zeros((1, 3, 2), np.float32)
    loc, mask, cls = _run(ctx, "_contrib_MultiBoxTarget", {}, [anchors, labels, cls_pred])
    assert cls.tolist() == [[3, 0]] and mask.tolist() == [[1, 1, 1, 1, 0, 0, 0, 0]]
    np.testing.assert_allclose(loc[0, :4], [0, 0.05 / 0.4 / 0.1, 0, np.log(0.5 / 0.4) / 0.2], 1e-5)


def test_target_rejects_a_box_after_the_padding(ctx):
    anchors = np.array([[[0.1, 0.1, 0.5, 0.5]]], np.float32)
    labels = np.array([[[-1, 0.1, 0.1, 0.5, 0.6]]], np.float32)
    with pytest.raises(ValueError, match="label row 0"):
        _run(ctx, "_contrib_MultiBoxTarget", {}, [anchors, labels, np.zeros((1, 2, 1), "f4")])


def test_shape_errors_name_the_argument():
    with pytest.raises(ShapeError, match=r"_contrib_MultiBoxDetection.*'loc_pred'.*\(2, 10\)"):
        infer("_contrib_MultiBoxDetection", {}, [(2, 3, 4), (2, 10), (1, 4, 4)])
    with pytest.raises(ShapeError, match=r"_contrib_MultiBoxTarget.*'anchor'.*\(2, 4, 4\)"):
        infer("_contrib_MultiBoxTarget", {}, [(2, 4, 4), (2, 3, 5), (2, 3, 4)])
    with pytest.raises(ShapeError, match=r"_contrib_MultiBoxPrior.*'data'.*\(3, 4\)"):
        infer("_contrib_MultiBoxPrior", {}, [(3, 4)])
    assert infer("_contrib_MultiBoxTarget", {}, [(1, 4, 4), (2, 3, 5), (2, 3, 4)])[1] == [
        (2, 16),
        (2, 16),
        (2, 4),
    ]


def test_float32_only_as_mxnet():
    op = opdef("_contrib_MultiBoxPrior")
    with pytest.raises(TypeError, match="float32 inputs only.*float64"):
        op.infer_types(op.parse({}), ["float64"])
