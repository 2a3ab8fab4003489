"""Proposal and MultiProposal (mx.contrib)."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.harness import case_ids, infer, opdef, replay_golden


@pytest.mark.parametrize("case_id", case_ids("_contrib_Proposal", "_contrib_MultiProposal"))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _run(ctx, name, attrs, inputs):
    op = opdef(name)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(OpContext(True, ctx.backend, ctx.device_id), op.parse(attrs), arrays, [])
    return [np.asarray(ctx.backend.to_host(o)) for o in outs]


def test_best_anchor_comes_first_unmoved(ctx):
    # one ratio and scale: 16 x 16 anchors at every 16 pixels; zero deltas keep them
    attrs = {"scales": (1,), "ratios": (1,), "rpn_post_nms_top_n": 3, "rpn_min_size": 1}
    scores = np.zeros((1, 2, 2, 3), np.float32)
    scores[0, 1] = [[0.1, 0.9, 0.2], [0.3, 0.4, 0.5]]
    deltas = np.zeros((1, 4, 2, 3), np.float32)
    info = np.array([[32, 48, 1]], np.float32)
    (rois,) = _run(ctx, "_contrib_Proposal", attrs, [scores, deltas, info])
    assert rois.tolist()[0] == [0, 16, 0, 31, 15]  # cell (0, 1), the best score
    assert rois.tolist()[1] == [0, 32, 16, 47, 31]  # cell (1, 2): 0.5


def test_proposal_takes_one_image(ctx):
    inputs = [np.zeros((2, 2, 2, 2), "f4"), np.zeros((2, 4, 2, 2), "f4"), np.ones((2, 3), "f4")]
    with pytest.raises(ValueError, match="MultiProposal"):
        _run(ctx, "_contrib_Proposal", {"scales": (1,), "ratios": (1,)}, inputs)


def test_shapes_and_errors():
    _, outs, _ = infer(
        "_contrib_MultiProposal", {"output_score": True}, [(2, 24, 5, 6), None, None]
    )
    assert outs == [(600, 5), (600, 1)]
    ins, outs, _ = infer("_contrib_Proposal", {}, [(1, 24, 5, 6), None, None])
    assert ins[1:] == [(1, 48, 5, 6), (1, 3)] and outs == [(300, 5)]
    with pytest.raises(ShapeError, match=r"_contrib_Proposal.*'cls_prob'.*\(1, 20, 5, 6\)"):
        infer("_contrib_Proposal", {}, [(1, 20, 5, 6), None, None])
