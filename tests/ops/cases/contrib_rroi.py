"""Golden cases: RROIAlign (forward only: MXNet 1.9.1's backward aborts)."""

from tests.ops.cases import arg, case

_ROIS = [
    [0, 3.0, 4.0, 5.0, 3.0, 30.0],
    [1, 6.5, 2.0, 8.0, 4.0, 135.0],
    [0, 0.0, 0.0, 12.0, 9.0, -60.0],
    [1, 4.0, 4.0, 0.5, 0.2, 0.0],
    [0, 20.0, 20.0, 6.0, 6.0, 45.0],
]


def _rroi(case_id, attrs, data=(2, 3, 7, 8), rois=_ROIS, dtype="float32"):
    settings = {"pooled_size": (2, 3), "spatial_scale": 1.0}
    settings.update(attrs)
    args = {
        "data": arg(data, dtype),
        "rois": arg((len(rois), 6), dtype, kind="values", values=rois),
    }
    return case(
        case_id, "_contrib_RROIAlign", args, settings, sym_func="contrib.RROIAlign", backward=False
    )


CASES = [
    _rroi("rroi_align_default", {}),
    _rroi("rroi_align_sampling_ratio", {"sampling_ratio": 2, "pooled_size": (3, 3)}),
    _rroi("rroi_align_scaled", {"spatial_scale": 0.5, "pooled_size": (1, 2)}, data=(2, 2, 5, 6)),
    _rroi("rroi_align_f64", {"sampling_ratio": 3}, dtype="float64"),
]
