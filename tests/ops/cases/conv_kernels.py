"""Golden cases: Convolution layers large enough for the ONNX Runtime kernels (ops/conv_ort.py).

``auto`` runs a layer's forward on ONNX Runtime from 28x28 output positions
and its data gradient from 28x28 input positions: these cases cross both, in
1-D, 2-D and 3-D, with strides, padding, dilation, groups and batch 1.
"""

from tests.ops.cases import arg, case

CASES = [
    case(
        "conv_kernels_2d_same",
        "Convolution",
        {"data": arg((1, 4, 30, 30)), "weight": arg((6, 4, 3, 3)), "bias": arg((6,))},
        {"kernel": (3, 3), "pad": (1, 1), "num_filter": 6},
    ),
    case(
        "conv_kernels_2d_stride_7x7",
        "Convolution",
        {"data": arg((2, 3, 59, 58)), "weight": arg((4, 3, 7, 7)), "bias": arg((4,))},
        {"kernel": (7, 7), "stride": (2, 2), "pad": (3, 3), "num_filter": 4},
    ),
    case(
        "conv_kernels_2d_dilate_group",
        "Convolution",
        {"data": arg((2, 4, 33, 31)), "weight": arg((6, 2, 3, 2))},
        {
            "kernel": (3, 2),
            "dilate": (2, 1),
            "pad": (2, 1),
            "num_filter": 6,
            "num_group": 2,
            "no_bias": True,
        },
    ),
    case(
        "conv_kernels_2d_depthwise",
        "Convolution",
        {"data": arg((1, 3, 29, 29)), "weight": arg((3, 1, 3, 3))},
        {"kernel": (3, 3), "pad": (1, 1), "num_filter": 3, "num_group": 3, "no_bias": True},
    ),
    case(
        "conv_kernels_1d",
        "Convolution",
        {"data": arg((2, 3, 900)), "weight": arg((4, 3, 5)), "bias": arg((4,))},
        {"kernel": (5,), "stride": (1,), "pad": (2,), "num_filter": 4},
    ),
    case(
        "conv_kernels_3d",
        "Convolution",
        {"data": arg((1, 2, 10, 10, 10)), "weight": arg((3, 2, 3, 3, 3)), "bias": arg((3,))},
        {"kernel": (3, 3, 3), "pad": (1, 1, 1), "num_filter": 3},
    ),
]
