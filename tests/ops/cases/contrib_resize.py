"""Golden cases: AdaptiveAvgPooling2D and BilinearResize2D (every mode, scales, align_corners)."""

from tests.ops.cases import arg, case


def _pool(case_id, shape, attrs, dtype="float32"):
    return case(
        case_id,
        "_contrib_AdaptiveAvgPooling2D",
        {"data": arg(shape, dtype)},
        attrs,
        sym_func="contrib.AdaptiveAvgPooling2D",
    )


def _resize(case_id, shape, attrs, dtype="float32", like=None):
    args = {"data": arg(shape, dtype)}
    if like is not None:
        args["like"] = arg(like, dtype)
    return case(
        case_id, "_contrib_BilinearResize2D", args, attrs, sym_func="contrib.BilinearResize2D"
    )


POOLING = [
    _pool("adaptive_avg_pool_global", (2, 3, 5, 7), {}),
    _pool("adaptive_avg_pool_int", (1, 2, 7, 9), {"output_size": 3}),
    _pool("adaptive_avg_pool_tuple", (2, 2, 6, 10), {"output_size": (4, 3)}),
    _pool("adaptive_avg_pool_upsample_f64", (1, 2, 3, 4), {"output_size": (5, 7)}, "float64"),
    _pool("adaptive_avg_pool_same_f16", (1, 3, 4, 4), {"output_size": (4, 4)}, "float16"),
]

RESIZE = [
    _resize("bilinear_resize_size_up", (2, 2, 3, 4), {"height": 7, "width": 6}),
    _resize("bilinear_resize_size_down", (1, 3, 9, 8), {"height": 4, "width": 3}),
    _resize(
        "bilinear_resize_size_unaligned",
        (1, 2, 5, 4),
        {"height": 8, "width": 3, "align_corners": False},
    ),
    _resize("bilinear_resize_to_one", (1, 1, 4, 5), {"height": 1, "width": 2}),
    _resize("bilinear_resize_same_f64", (1, 2, 3, 3), {"height": 3, "width": 3}, "float64"),
    _resize(
        "bilinear_resize_scales",
        (1, 2, 4, 6),
        {"scale_height": 1.5, "scale_width": 0.7},
    ),
    _resize(
        "bilinear_resize_odd_scale_odd",
        (1, 1, 5, 7),
        {"mode": "odd_scale", "scale_height": 2.0, "scale_width": 0.5},
    ),
    _resize(
        "bilinear_resize_odd_scale_even",
        (1, 2, 4, 6),
        {"mode": "odd_scale", "scale_height": 1.5, "scale_width": 2.0, "align_corners": False},
    ),
    _resize("bilinear_resize_like", (2, 2, 3, 5), {"mode": "like"}, like=(2, 4, 6, 2)),
    _resize("bilinear_resize_to_even_down", (1, 2, 5, 6), {"mode": "to_even_down"}),
    _resize("bilinear_resize_to_even_up", (1, 2, 5, 6), {"mode": "to_even_up"}),
    _resize("bilinear_resize_to_odd_down", (1, 2, 5, 6), {"mode": "to_odd_down"}),
    _resize(
        "bilinear_resize_to_odd_up_f16",
        (1, 2, 5, 6),
        {"mode": "to_odd_up", "align_corners": False},
        "float16",
    ),
]

CASES = POOLING + RESIZE
