"""Golden cases: ROIAlign (sample_ratio, aligned, position_sensitive, ROIs past the border)."""

from tests.ops.cases import arg, case

_ROIS = [
    [0, 0.5, 1.0, 4.3, 5.0],
    [1, 2.0, 0.2, 6.9, 3.3],
    [0, -2.0, -1.0, 9.0, 8.0],
    [1, 3.0, 3.0, 3.2, 3.1],
]


def _rois(rows, dtype="float32"):
    return arg((len(rows), 5), dtype, kind="values", values=rows)


def _align(case_id, attrs, data=(2, 8, 6, 7), rois=_ROIS, dtype="float32"):
    settings = {"pooled_size": (2, 2), "spatial_scale": 1.0}
    settings.update(attrs)
    return case(
        case_id,
        "_contrib_ROIAlign",
        {"data": arg(data, dtype), "rois": _rois(rois, dtype)},
        settings,
        sym_func="contrib.ROIAlign",
    )


CASES = [
    _align("roi_align_default", {}),
    _align("roi_align_sample_ratio", {"sample_ratio": 2, "pooled_size": (3, 2)}),
    _align("roi_align_aligned", {"aligned": True}),
    _align("roi_align_position_sensitive", {"position_sensitive": True}),
    _align(
        "roi_align_scaled_f64",
        {"spatial_scale": 0.5, "sample_ratio": 3, "pooled_size": (3, 3)},
        data=(1, 3, 5, 5),
        rois=[[0, 1.0, 2.0, 8.5, 9.0], [0, 0.0, 0.0, 3.0, 3.0]],
        dtype="float64",
    ),
    _align(
        "roi_align_large_grid",
        {"pooled_size": (2, 3), "spatial_scale": 0.25},
        data=(1, 2, 9, 10),
        rois=[[0, 0.0, 0.0, 39.0, 35.0], [0, 10.0, 4.0, 30.0, 20.0]],
    ),
]


def _psroi(case_id, attrs, data, rois, dtype="float32"):
    return case(
        case_id,
        "_contrib_PSROIPooling",
        {"data": arg(data, dtype), "rois": _rois(rois, dtype)},
        attrs,
        sym_func="contrib.PSROIPooling",
    )


_PS_ROIS = [
    [0, 10, 22, 161, 173],
    [1, 20, 15, 154, 160],
    [0, 3.5, 2.5, 40, 30],
    [1, 100, 100, 100.4, 100.2],
]

CASES += [
    _psroi(
        "psroi_pooling",
        {"spatial_scale": 0.0625, "output_dim": 2, "pooled_size": 3},
        (2, 18, 14, 14),
        _PS_ROIS,
    ),
    _psroi(
        "psroi_pooling_group_f64",
        {"spatial_scale": 0.0625, "output_dim": 2, "pooled_size": 3, "group_size": 2},
        (2, 8, 14, 14),
        _PS_ROIS,
        "float64",
    ),
    _psroi(
        "psroi_pooling_border",
        {"spatial_scale": 0.5, "output_dim": 1, "pooled_size": 2},
        (1, 4, 6, 5),
        [[0, -3, -2, 4, 3], [0, 6, 8, 20, 20], [0, 1, 1, 1, 1]],
    ),
]
