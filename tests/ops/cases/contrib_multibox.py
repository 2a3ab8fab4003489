"""Golden cases: MultiBoxPrior, MultiBoxTarget, MultiBoxDetection (SSD anchors, targets, NMS)."""

import numpy as np

from tests.ops.cases import arg, case


def _values(array, grad=False, dtype="float32"):
    array = np.asarray(array)
    return arg(array.shape, dtype, kind="values", values=array.tolist(), grad=grad)


def _anchors(count, seed):
    rng = np.random.RandomState(seed)
    xy = rng.uniform(0.1, 0.9, (count, 2))
    wh = rng.uniform(0.1, 0.4, (count, 2))
    return np.round(np.concatenate([xy - wh / 2, xy + wh / 2], 1), 4)[None]


def _labels(anchors, picks, classes, pad):
    """Ground truths near chosen anchors, padded with rows of -1."""
    pairs = enumerate(zip(picks, classes))  # noqa: B905 - the recorder runs on Python 3.8
    rows = [[c, *(anchors[0, i] + 0.02 * (k + 1))] for k, (i, c) in pairs]
    return rows + [[-1] * 5] * pad


def _probs(batch, classes, anchors, seed, scale=3.0):
    rng = np.random.RandomState(seed)
    logits = rng.normal(0, scale, (batch, classes, anchors))
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    return np.round(probs, 4)


_A = _anchors(12, 0)
_LABELS = [_labels(_A, [0, 5, 7], [0, 2, 1], 1), _labels(_A, [3], [1], 3)]

PRIOR = [
    case(
        "multibox_prior_default",
        "_contrib_MultiBoxPrior",
        {"data": arg((1, 3, 4, 5))},
        sym_func="contrib.MultiBoxPrior",
    ),
    case(
        "multibox_prior_sizes_ratios_clip",
        "_contrib_MultiBoxPrior",
        {"data": arg((2, 1, 3, 6))},
        {"sizes": (0.75, 0.5, 0.25), "ratios": (1, 2, 0.5), "clip": True},
        sym_func="contrib.MultiBoxPrior",
    ),
    case(
        "multibox_prior_steps_offsets",
        "_contrib_MultiBoxPrior",
        {"data": arg((1, 2, 5, 3))},
        {"sizes": (0.3,), "ratios": (2, 1), "steps": (0.2, 0.25), "offsets": (0.2, 0.7)},
        sym_func="contrib.MultiBoxPrior",
    ),
]

TARGET = [
    case(
        "multibox_target_plain",
        "_contrib_MultiBoxTarget",
        {
            "anchor": _values(_A),
            "label": _values(_LABELS),
            "cls_pred": arg((2, 4, 12)),
        },
        sym_func="contrib.MultiBoxTarget",
    ),
    case(
        "multibox_target_mining",
        "_contrib_MultiBoxTarget",
        {
            "anchor": _values(_A),
            "label": _values(_LABELS),
            "cls_pred": arg((2, 4, 12), high=3.0),
        },
        {"negative_mining_ratio": 2, "negative_mining_thresh": 0.3, "overlap_threshold": 0.3},
        sym_func="contrib.MultiBoxTarget",
    ),
    case(
        "multibox_target_greedy_only",
        "_contrib_MultiBoxTarget",
        {
            "anchor": _values(_A),
            "label": _values(_LABELS),
            "cls_pred": arg((2, 3, 12)),
        },
        {"overlap_threshold": 0, "ignore_label": -2, "variances": (0.2, 0.2, 0.1, 0.1)},
        sym_func="contrib.MultiBoxTarget",
    ),
    case(
        "multibox_target_no_labels",
        "_contrib_MultiBoxTarget",
        {
            "anchor": _values(_A),
            "label": _values([[[-1] * 6] * 2]),
            "cls_pred": arg((1, 2, 12)),
        },
        {"negative_mining_ratio": 3},
        sym_func="contrib.MultiBoxTarget",
    ),
]


def _detection(case_id, attrs, batch=2, classes=4, anchors=12, seed=1, scale=3.0):
    return case(
        case_id,
        "_contrib_MultiBoxDetection",
        {
            "cls_prob": _values(_probs(batch, classes, anchors, seed, scale), grad=True),
            "loc_pred": arg((batch, anchors * 4), low=-0.5, high=0.5),
            "anchor": _values(_anchors(anchors, seed), grad=True),
        },
        attrs,
        sym_func="contrib.MultiBoxDetection",
    )


DETECTION = [
    _detection("multibox_detection_default", {}),
    _detection("multibox_detection_force_topk", {"force_suppress": True, "nms_topk": 3}, seed=2),
    _detection(
        "multibox_detection_no_clip_low_nms",
        {"clip": False, "nms_threshold": 0.1, "threshold": 0.2},
        batch=1,
        anchors=20,
        seed=3,
    ),
    _detection("multibox_detection_no_nms", {"nms_threshold": 0}, seed=4),
    _detection("multibox_detection_nothing_valid", {"threshold": 0.999}, seed=5),
    _detection("multibox_detection_one_class", {}, classes=1, seed=6),
    _detection("multibox_detection_many", {"nms_threshold": 0.3}, anchors=60, seed=7, scale=1.0),
]

CASES = PRIOR + TARGET + DETECTION
