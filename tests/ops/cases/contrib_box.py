"""Golden cases: the bounding-box contrib operators (box_nms, box_iou, box_encode, box_decode,
bipartite_matching), with their edge cases (nothing valid, everything suppressed, topk)."""

import numpy as np

from tests.ops.cases import arg, case

_NAN = float("nan")

_BOXES = [  # [id, score, xmin, ymin, xmax, ymax]: MXNet's documented example
    [0, 0.5, 0.1, 0.1, 0.2, 0.2],
    [1, 0.4, 0.1, 0.1, 0.2, 0.2],
    [0, 0.3, 0.1, 0.1, 0.14, 0.14],
    [2, 0.6, 0.5, 0.5, 0.7, 0.8],
]


def _values(rows, dtype="float32", grad=True):
    shape = np.array(rows).shape
    return arg(shape, dtype, kind="values", values=rows, grad=grad)


def _detections(batch, num, seed):
    """Clustered boxes with repeated scores and three classes, so suppression and ties occur."""
    rng = np.random.RandomState(seed)
    centers = rng.uniform(0.2, 0.8, size=(batch, 3, 2))
    pick = rng.randint(0, 3, size=(batch, num))
    xy = np.take_along_axis(centers, pick[..., None], axis=1) + rng.normal(0, 0.03, (batch, num, 2))
    wh = rng.uniform(0.1, 0.3, size=(batch, num, 2))
    ids = rng.randint(0, 3, size=(batch, num, 1)).astype(float)
    scores = np.round(rng.uniform(0, 1, size=(batch, num, 1)), 1)  # ties on purpose
    rows = np.concatenate([ids, scores, xy - wh / 2, xy + wh / 2], -1)
    return np.round(rows, 4).tolist()


_MANY = _detections(2, 24, 0)

NMS = [
    case(
        "box_nms_default", "_contrib_box_nms", {"data": _values(_BOXES)}, sym_func="contrib.box_nms"
    ),
    case(
        "box_nms_force_id",
        "_contrib_box_nms",
        {"data": _values(_BOXES)},
        {"overlap_thresh": 0.1, "id_index": 0, "force_suppress": True},
        sym_func="contrib.box_nms",
    ),
    case(
        "box_nms_per_class",
        "_contrib_box_nms",
        {"data": _values(_BOXES, "float64")},
        {"overlap_thresh": 0.1, "id_index": 0},
        sym_func="contrib.box_non_maximum_suppression",
    ),
    case(
        "box_nms_background",
        "_contrib_box_nms",
        {"data": _values([[0, 0.5, 0.1, 0.1, 0.2, 0.2], [-1, 0.6, 0.5, 0.5, 0.7, 0.8]] * 2)},
        {"id_index": 0, "background_id": 0, "force_suppress": True},
        sym_func="contrib.box_nms",
    ),
    case(
        "box_nms_none_valid",
        "_contrib_box_nms",
        {"data": _values([_BOXES, _BOXES])},
        {"valid_thresh": 0.9},
        sym_func="contrib.box_nms",
    ),
    case(
        "box_nms_all_suppressed_but_one",
        "_contrib_box_nms",
        {"data": _values([[1, 0.9 - 0.1 * i, 0, 0, 10, 10] for i in range(5)])},
        {"overlap_thresh": 0.0},
        sym_func="contrib.box_nms",
    ),
    case(
        "box_nms_topk_valid_batches",
        "_contrib_box_nms",
        {"data": _values([[[k, s, 0, 0, 10, 10] for s in (1, 0.4, 0.3)] for k in (1, 2, 3)])},
        {"valid_thresh": 0.5, "topk": 2, "id_index": 0},
        sym_func="contrib.box_nms",
    ),
    case(
        "box_nms_topk_zero",
        "_contrib_box_nms",
        {"data": _values(_BOXES)},
        {"topk": 0},
        sym_func="contrib.box_nms",
    ),
    case(
        "box_nms_nan_score",
        "_contrib_box_nms",
        {"data": _values([[0, _NAN, 0.1, 0.1, 0.2, 0.2], *_BOXES[1:]])},
        sym_func="contrib.box_nms",
    ),
    case(
        "box_nms_zero_area",
        "_contrib_box_nms",
        {"data": _values([[0, 0.9, 0.1, 0.1, 0.1, 0.1], [0, 0.8, 0.1, 0.1, 0.1, 0.1], *_BOXES])},
        sym_func="contrib.box_nms",
    ),
    case(
        "box_nms_center_in",
        "_contrib_box_nms",
        {"data": _values([[k, s, x + 0.3, y + 0.3, 0.2, 0.3] for k, s, x, y, *_ in _BOXES])},
        {"in_format": "center", "overlap_thresh": 0.2},
        sym_func="contrib.box_nms",
    ),
    case(
        "box_nms_center_out",
        "_contrib_box_nms",
        {"data": _values(_BOXES)},
        {"out_format": "center", "id_index": 0},
        sym_func="contrib.box_nms",
    ),
    case(
        "box_nms_moved_columns",
        "_contrib_box_nms",
        {"data": _values([[0.7, x0, y0, x1, y1, s, 9.0, k] for k, s, x0, y0, x1, y1 in _BOXES])},
        {"coord_start": 1, "score_index": 5, "id_index": 7, "overlap_thresh": 0.1},
        sym_func="contrib.box_nms",
    ),
    case(
        "box_nms_many_classes_4d",
        "_contrib_box_nms",
        {"data": _values([_MANY, _MANY[::-1]])},
        {"overlap_thresh": 0.3, "valid_thresh": 0.15, "topk": 15, "id_index": 0},
        sym_func="contrib.box_nms",
    ),
    case(
        "box_nms_many_force_f16",
        "_contrib_box_nms",
        {"data": _values(_MANY, "float16")},
        {"overlap_thresh": 0.45, "id_index": 0, "force_suppress": True},
        sym_func="contrib.box_nms",
    ),
]

IOU = [
    case(
        "box_iou_corner",
        "_contrib_box_iou",
        {"lhs": arg((2, 3, 4), low=0, high=1), "rhs": arg((5, 4), low=0, high=1)},
        sym_func="contrib.box_iou",
    ),
    case(
        "box_iou_center_f64",
        "_contrib_box_iou",
        {"lhs": arg((4, 4), "float64", low=0.1, high=1), "rhs": arg((3, 1, 4), "float64", 0.1)},
        {"format": "center"},
        sym_func="contrib.box_iou",
    ),
    case(
        "box_iou_touching_and_empty",
        "_contrib_box_iou",
        {
            "lhs": _values([[0, 0, 1, 1], [1, 1, 1, 1], [0, 0, 2, 2]]),
            "rhs": _values([[1, 0, 2, 1], [0.5, 0.5, 1.5, 1.5]]),
        },
        sym_func="contrib.box_iou",
    ),
]

CODING = [
    case(
        "box_encode",
        "_contrib_box_encode",
        {
            "samples": _values([[1, -1, 0, 1], [0, 1, 1, 1]]),
            "matches": _values([[0, 1, 2, 2], [1, 0, 2, 1]]),
            "anchors": arg((2, 4, 4), low=0.5, high=1.5),
            "refs": _values([[[0.1, 0.2, 0.6, 0.9], [0.3, 0.3, 0.5, 0.8], [0, 0, 1, 1]]] * 2),
            "means": _values([0.0, 0.1, 0.0, -0.1]),
            "stds": _values([0.1, 0.1, 0.2, 0.2]),
        },
        sym_func="contrib.box_encode",
    ),
    case(
        "box_decode_center",
        "_contrib_box_decode",
        {"data": arg((2, 5, 4)), "anchors": arg((1, 5, 4), low=0.2, high=1.0)},
        {"std0": 0.1, "std1": 0.1, "std2": 0.2, "std3": 0.2},
        sym_func="contrib.box_decode",
    ),
    case(
        "box_decode_corner_clip",
        "_contrib_box_decode",
        {"data": arg((1, 6, 4), high=3.0), "anchors": arg((1, 6, 4), "float32", 0.0, 1.0)},
        {"format": "corner", "clip": 1.5, "std2": 2.0},
        sym_func="contrib.box_decode",
    ),
]

MATCHING = [
    case(
        "bipartite_matching_doc",
        "_contrib_bipartite_matching",
        {"data": _values([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]])},
        {"threshold": 1e-12},
        sym_func="contrib.bipartite_matching",
    ),
    case(
        "bipartite_matching_ascend",
        "_contrib_bipartite_matching",
        {"data": _values([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]], "float64")},
        {"threshold": 100, "is_ascend": True},
        sym_func="contrib.bipartite_matching",
    ),
    case(
        "bipartite_matching_batch_threshold",
        "_contrib_bipartite_matching",
        {"data": arg((2, 3, 5, 4), low=0, high=1)},
        {"threshold": 0.3},
        sym_func="contrib.bipartite_matching",
    ),
    case(
        "bipartite_matching_ties",
        "_contrib_bipartite_matching",
        {"data": _values([[[0.5, 0.5, 0.2], [0.5, 0.5, 0.2]], [[0, 0, 0], [0, 0, 0]]])},
        {"threshold": 0.1},
        sym_func="contrib.bipartite_matching",
    ),
]

CASES = NMS + IOU + CODING + MATCHING
