"""Golden cases: DeformablePSROIPooling (offsets, no_trans, part_size, samples past the border)."""

from tests.ops.cases import arg, case

_ROIS = [
    [0, 10, 22, 161, 173],
    [1, 20, 15, 154, 160],
    [0, 3.5, 2.5, 40, 30],
    [1, 100, 100, 100.4, 100.2],
]


def _dpsroi(case_id, attrs, data, rois=_ROIS, classes=2, trans=1.0, dtype="float32"):
    settings = {"spatial_scale": 0.0625, "sample_per_part": 2, "trans_std": 0.1}
    settings.update(attrs)
    args = {
        "data": arg(data, dtype),
        "rois": arg((len(rois), 5), dtype, kind="values", values=rois, grad=False),
    }
    if not settings.get("no_trans"):
        parts = settings.get("part_size") or settings["pooled_size"]
        args["trans"] = arg((len(rois), 2 * classes, parts, parts), dtype, "uniform", -trans, trans)
    return case(
        case_id,
        "_contrib_DeformablePSROIPooling",
        args,
        settings,
        sym_func="contrib.DeformablePSROIPooling",
    )


CASES = [
    _dpsroi(
        "dpsroi_default", {"output_dim": 2, "group_size": 3, "pooled_size": 3}, (2, 18, 14, 14)
    ),
    _dpsroi(
        "dpsroi_no_trans",
        {
            "output_dim": 2,
            "group_size": 2,
            "pooled_size": 3,
            "no_trans": True,
            "sample_per_part": 3,
        },
        (2, 8, 14, 14),
    ),
    _dpsroi(
        "dpsroi_parts_classes",
        {"output_dim": 4, "group_size": 2, "pooled_size": 3, "part_size": 2, "sample_per_part": 3},
        (2, 16, 12, 13),
        classes=2,
    ),
    _dpsroi(
        "dpsroi_past_border",
        {
            "output_dim": 1,
            "group_size": 2,
            "pooled_size": 2,
            "trans_std": 1.0,
            "spatial_scale": 0.5,
        },
        (1, 4, 6, 5),
        rois=[[0, -3, -2, 4, 3], [0, 6, 8, 20, 20], [0, 1, 1, 1, 1]],
        classes=1,
        trans=1.5,
    ),
    _dpsroi(
        "dpsroi_f64",
        {
            "output_dim": 3,
            "group_size": 2,
            "pooled_size": 2,
            "sample_per_part": 4,
            "trans_std": 0.3,
        },
        (2, 12, 10, 9),
        classes=3,
        dtype="float64",
    ),
]
