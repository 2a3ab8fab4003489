"""Golden cases of UpSampling's bilinear mode (a depthwise Deconvolution in MXNet)."""

from tests.ops.cases import arg, case

CASES = [
    case(
        f"upsampling_bilinear_scale{scale}",
        "UpSampling",
        {
            "data": arg((2, 3, 4, 5)),
            "weight": arg((3, 1, 2 * scale - scale % 2, 2 * scale - scale % 2)),
        },
        {"scale": scale, "sample_type": "bilinear", "num_filter": 3, "num_args": 2},
        positional=False,
    )
    for scale in (2, 3)
]
