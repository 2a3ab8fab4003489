"""Golden cases: Proposal and MultiProposal (padding, small boxes, iou_loss, cycling rows)."""

from tests.ops.cases import arg, case

_SMALL = {"scales": (2, 4), "ratios": (0.5, 1, 2), "rpn_pre_nms_top_n": 60}


def _proposal(case_id, attrs, info, batch=1, op="_contrib_Proposal", height=5, width=6):
    anchors = len(attrs.get("scales", _SMALL["scales"])) * len(attrs.get("ratios", (0.5, 1, 2)))
    settings = dict(_SMALL)
    settings.update(attrs)
    return case(
        case_id,
        op,
        {
            "cls_prob": arg((batch, 2 * anchors, height, width), low=0.0, high=1.0),
            "bbox_pred": arg((batch, 4 * anchors, height, width), kind="normal", high=0.3),
            "im_info": arg((batch, 3), kind="values", values=info, grad=False),
        },
        settings,
        sym_func="contrib." + op[len("_contrib_") :],
    )


CASES = [
    _proposal("proposal_basic", {"rpn_post_nms_top_n": 20}, [[80, 96, 1.0]]),
    _proposal(
        "proposal_padded_small_scores",
        {"rpn_post_nms_top_n": 15, "rpn_min_size": 40, "output_score": True},
        [[60, 70, 1.0]],
    ),
    _proposal(
        "proposal_iou_loss",
        {"iou_loss": True, "rpn_post_nms_top_n": 10, "feature_stride": 8},
        [[40, 48, 0.5]],
    ),
    _proposal(
        "proposal_cycles_kept_rows",
        {"threshold": 0.05, "rpn_post_nms_top_n": 30, "rpn_pre_nms_top_n": -1},
        [[80, 96, 2.0]],
    ),
    _proposal(
        "multi_proposal_batch",
        {"rpn_post_nms_top_n": 12, "output_score": True},
        [[80, 96, 1.0], [64, 80, 1.5]],
        batch=2,
        op="_contrib_MultiProposal",
    ),
]
