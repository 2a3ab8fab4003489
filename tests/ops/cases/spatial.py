"""Golden cases: BilinearSampler, GridGenerator, SpatialTransformer, ROIPooling, Correlation,
CTCLoss."""

from tests.ops.cases import arg, case


def _grid(shape, dtype="float32"):
    # a little past [-1, 1]: some corners fall outside the input and read 0
    return arg(shape, dtype, low=-1.2, high=1.2)


def _rois(rows, dtype="float32"):
    return arg((len(rows), 5), dtype, kind="values", values=rows, grad=False)


def _labels(rows, dtype="float32"):
    return arg((len(rows), len(rows[0])), dtype, kind="values", values=rows, grad=False)


def _lengths(values, dtype="float32"):
    return arg((len(values),), dtype, kind="values", values=values, grad=False)


_AFFINE = {"transform_type": "affine", "sampler_type": "bilinear"}

SAMPLING = [
    case(
        "bilinear_sampler_f32",
        "BilinearSampler",
        {"data": arg((2, 3, 4, 5)), "grid": _grid((2, 2, 3, 4))},
    ),
    case(
        "bilinear_sampler_f64",
        "BilinearSampler",
        {"data": arg((1, 2, 5, 4), "float64"), "grid": _grid((1, 2, 4, 6), "float64")},
        {"cudnn_off": True},
    ),
    case(
        "bilinear_sampler_f16",
        "BilinearSampler",
        {"data": arg((1, 2, 3, 3), "float16"), "grid": _grid((1, 2, 2, 2), "float16")},
    ),
    case(
        "grid_generator_affine",
        "GridGenerator",
        {"data": arg((2, 6))},
        {"transform_type": "affine", "target_shape": (3, 4)},
    ),
    case(
        "grid_generator_affine_tall",
        "GridGenerator",
        {"data": arg((1, 6))},
        {"transform_type": "affine", "target_shape": (5, 2)},
    ),
    case(
        "grid_generator_warp",
        "GridGenerator",
        {"data": arg((2, 2, 3, 4), high=2.0)},
        {"transform_type": "warp"},
    ),
    case(
        "spatial_transformer_f32",
        "SpatialTransformer",
        {"data": arg((2, 3, 5, 6)), "loc": arg((2, 6))},
        {"target_shape": (4, 3), **_AFFINE},
    ),
    case(
        "spatial_transformer_f64",
        "SpatialTransformer",
        {
            "data": arg((1, 2, 4, 4), "float64"),
            "loc": arg((1, 6), "float64", kind="values", values=[[0.9, 0.1, 0.05, -0.2, 1.1, 0.1]]),
        },
        {"target_shape": (3, 5), "cudnn_off": True, **_AFFINE},
    ),
]

ROI = [
    case(
        "roi_pooling_basic",
        "ROIPooling",
        {
            "data": arg((2, 3, 8, 8)),
            "rois": _rois([[0, 0, 0, 4, 4], [1, 2, 1, 7, 6], [0, 1.3, 2.6, 5.5, 7.2]]),
        },
        {"pooled_size": (2, 2), "spatial_scale": 1.0},
    ),
    case(
        "roi_pooling_scaled",
        "ROIPooling",
        {
            "data": arg((1, 2, 12, 10)),
            "rois": _rois([[0, 4, 3, 18, 14], [0, -2, -3, 6, 8], [0, 10, 10, 30, 30]]),
        },
        {"pooled_size": (3, 2), "spatial_scale": 0.5},
    ),
    case(
        "roi_pooling_edge_boxes_f64",
        "ROIPooling",
        # a reversed box (pooled as 1x1), a batch index out of range (zeros), a box past the edge
        {
            "data": arg((2, 2, 6, 7), "float64"),
            "rois": _rois(
                [[1, 5, 4, 2, 1], [3, 0, 0, 3, 3], [0, 3, 2, 11, 9], [1, 0, 0, 6, 5]], "float64"
            ),
        },
        {"pooled_size": (2, 3), "spatial_scale": 0.7},
    ),
]

CORRELATION = [
    case(
        "correlation_default",
        "Correlation",
        {"data1": arg((2, 3, 6, 7)), "data2": arg((2, 3, 6, 7))},
    ),
    case(
        "correlation_kernel3_pad",
        "Correlation",
        {"data1": arg((1, 2, 9, 8)), "data2": arg((1, 2, 9, 8))},
        {"kernel_size": 3, "max_displacement": 2, "stride1": 2, "stride2": 1, "pad_size": 2},
    ),
    case(
        "correlation_absdiff_stride2",
        "Correlation",
        {"data1": arg((2, 2, 5, 6)), "data2": arg((2, 2, 5, 6))},
        {"max_displacement": 2, "stride2": 2, "pad_size": 1, "is_multiply": False},
    ),
    case(
        "correlation_absdiff_kernel3_f64",
        "Correlation",
        {"data1": arg((1, 3, 6, 6), "float64"), "data2": arg((1, 3, 6, 6), "float64")},
        {"kernel_size": 3, "max_displacement": 1, "pad_size": 1, "is_multiply": False},
    ),
]

CTC = [
    case(
        "ctc_loss_blank_first",
        "CTCLoss",
        {"data": arg((6, 2, 4), kind="normal"), "label": _labels([[1, 2, 0], [3, 3, 1]])},
    ),
    case(
        "ctc_loss_blank_last",
        "CTCLoss",
        {
            "data": arg((7, 3, 5), kind="normal", high=2.0),
            "label": _labels([[0, 1, -1, -1], [2, 2, 3, 1], [3, -1, -1, -1]]),
        },
        {"blank_label": "last"},
    ),
    case(
        "ctc_loss_lengths",
        "CTCLoss",
        {
            "data": arg((8, 3, 4), kind="normal"),
            "label": _labels([[1, 2, 2], [3, 1, 0], [2, 0, 0]]),
            "data_lengths": _lengths([8, 5, 6]),
            "label_lengths": _lengths([2, 3, 0]),
        },
        {"use_data_lengths": True, "use_label_lengths": True},
    ),
    case(
        "ctc_loss_label_lengths_int",
        "CTCLoss",
        {
            "data": arg((5, 2, 3), kind="normal"),
            "label": _labels([[1, 1], [2, 0]], "int32"),
            "label_lengths": _lengths([2, 2], "int32"),
        },
        {"use_label_lengths": True},
        sym_func="ctc_loss",
    ),
    case(
        "ctc_loss_data_lengths_last",
        "CTCLoss",
        {
            "data": arg((6, 2, 4), kind="normal"),
            "label": _labels([[0, 2, -1], [1, 1, 2]]),
            "data_lengths": _lengths([4, 6]),
        },
        {"use_data_lengths": True, "blank_label": "last"},
    ),
]

CASES = SAMPLING + ROI + CORRELATION + CTC
