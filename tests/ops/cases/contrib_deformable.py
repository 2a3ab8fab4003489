"""Golden cases: DeformableConvolution (offsets inside and past the border, groups, stride,
dilation) and ModulatedDeformableConvolution (forward: MXNet 1.9.1's CPU backward aborts)."""

from tests.ops.cases import arg, case


def _dcn(case_id, attrs, data, offset_range=2.0, dtype="float32", no_bias=False):
    settings = {"kernel": (3, 3), "num_filter": 4}
    settings.update(attrs)
    groups = settings.get("num_deformable_group", 1)
    kh, kw = settings["kernel"]
    n, c, h, w = data
    stride, dilate = settings.get("stride", (1, 1)), settings.get("dilate", (1, 1))
    pad = settings.get("pad", (0, 0))
    out_h = (h + 2 * pad[0] - dilate[0] * (kh - 1) - 1) // stride[0] + 1
    out_w = (w + 2 * pad[1] - dilate[1] * (kw - 1) - 1) // stride[1] + 1
    args = {
        "data": arg(data, dtype),
        "offset": arg(
            (n, 2 * groups * kh * kw, out_h, out_w), dtype, "uniform", -offset_range, offset_range
        ),
        "weight": arg((settings["num_filter"], c // settings.get("num_group", 1), kh, kw), dtype),
    }
    if no_bias:
        settings["no_bias"] = True
    else:
        args["bias"] = arg((settings["num_filter"],), dtype)
    return case(
        case_id,
        "_contrib_DeformableConvolution",
        args,
        settings,
        sym_func="contrib.DeformableConvolution",
    )


def _mdcn(case_id, attrs, data, offset_range=2.0, mask=(0.0, 1.0), dtype="float32"):
    dcn = _dcn(case_id, attrs, data, offset_range, dtype)
    groups = dcn["attrs"].get("num_deformable_group", 1)
    taps = dcn["attrs"]["kernel"][0] * dcn["attrs"]["kernel"][1]
    offset = dcn["args"]["offset"]["shape"]
    args = dict(dcn["args"])
    args = {
        "data": args["data"],
        "offset": args["offset"],
        "mask": arg((offset[0], groups * taps, *offset[2:]), dtype, "uniform", *mask),
        "weight": args["weight"],
        "bias": args["bias"],
    }
    return case(
        case_id,
        "_contrib_ModulatedDeformableConvolution",
        args,
        dcn["attrs"],
        sym_func="contrib.ModulatedDeformableConvolution",
        backward=False,
    )


CASES = [
    _dcn("dcn_default", {"pad": (1, 1)}, (2, 4, 5, 6)),
    _dcn("dcn_no_pad_small_offsets", {}, (1, 3, 6, 6), offset_range=0.7),
    _dcn(
        "dcn_groups_stride_dilate",
        {
            "pad": (2, 1),
            "stride": (2, 1),
            "dilate": (2, 1),
            "num_group": 2,
            "num_deformable_group": 2,
            "num_filter": 6,
        },
        (2, 4, 7, 6),
        no_bias=True,
    ),
    _dcn("dcn_far_offsets", {"pad": (1, 1), "kernel": (2, 3)}, (1, 2, 4, 5), offset_range=6.0),
    _dcn("dcn_f64", {"pad": (1, 1), "num_deformable_group": 2}, (2, 4, 5, 5), dtype="float64"),
    _mdcn("mdcn_default", {"pad": (1, 1)}, (2, 4, 5, 6)),
    _mdcn(
        "mdcn_groups",
        {
            "pad": (2, 2),
            "dilate": (2, 2),
            "num_group": 2,
            "num_deformable_group": 2,
            "num_filter": 4,
        },
        (2, 4, 6, 5),
        offset_range=3.0,
    ),
    _mdcn("mdcn_zero_mask", {"pad": (1, 1)}, (1, 2, 4, 4), mask=(0.0, 0.0)),
    _mdcn(
        "mdcn_far_offsets_f64", {"stride": (2, 2)}, (1, 2, 7, 7), offset_range=5.0, dtype="float64"
    ),
]
