"""Golden cases: vision and legacy layers (Crop, Pad, LRN, im2col, col2im,
depth_to_space, space_to_depth, Convolution_v1, Pooling_v1, BatchNorm_v1,
SoftmaxActivation, SVMOutput, IdentityAttachKLSparseReg, GroupNorm)."""

from tests.ops.cases import arg, case

_CROP = [
    case(
        "vision_crop_hw",
        "Crop",
        {"arg0": arg((2, 3, 6, 7))},
        {"num_args": 1, "h_w": (3, 4), "offset": (1, 2)},
        positional=True,
    ),
    case(
        "vision_crop_hw_center",
        "Crop",
        {"arg0": arg((1, 2, 7, 6))},
        {"num_args": 1, "h_w": (4, 3), "center_crop": True},
        positional=True,
    ),
    case(
        "vision_crop_like",
        "Crop",
        {"arg0": arg((2, 2, 6, 6)), "arg1": arg((2, 3, 3, 4))},
        {"num_args": 2, "offset": (2, 1)},
        positional=True,
    ),
    case(
        "vision_crop_like_center",
        "Crop",
        {"arg0": arg((1, 2, 7, 8)), "arg1": arg((1, 1, 4, 3), grad=False)},
        {"num_args": 2, "center_crop": True},
        positional=True,
    ),
]

_PAD = [
    case(
        "vision_pad_constant",
        "Pad",
        {"data": arg((2, 2, 4, 5))},
        {"mode": "constant", "pad_width": (0, 0, 0, 0, 1, 2, 2, 1), "constant_value": 1.5},
    ),
    case(
        "vision_pad_constant_f64_alias",
        "Pad",
        {"data": arg((1, 2, 3, 3), "float64")},
        {"mode": "constant", "pad_width": (0, 0, 0, 0, 0, 2, 1, 0)},
        sym_func="pad",
    ),
    case(
        "vision_pad_edge",
        "Pad",
        {"data": arg((1, 2, 3, 4))},
        {"mode": "edge", "pad_width": (0, 0, 0, 0, 2, 1, 1, 3)},
    ),
    case(
        "vision_pad_reflect",
        "Pad",
        {"data": arg((2, 1, 4, 5))},
        {"mode": "reflect", "pad_width": (0, 0, 0, 0, 2, 3, 1, 2)},
    ),
    case(
        "vision_pad_edge_5d",
        "Pad",
        {"data": arg((1, 2, 2, 3, 3))},
        {"mode": "edge", "pad_width": (0, 0, 0, 0, 1, 0, 0, 2, 1, 1)},
    ),
    case(
        "vision_pad_reflect_5d",
        "Pad",
        {"data": arg((1, 1, 3, 4, 4))},
        {"mode": "reflect", "pad_width": (0, 0, 0, 0, 1, 1, 2, 1, 1, 2)},
    ),
    case(
        "vision_pad_constant_5d",
        "Pad",
        {"data": arg((1, 1, 2, 2, 3))},
        {"mode": "constant", "pad_width": (0, 0, 0, 0, 1, 1, 0, 1, 2, 0), "constant_value": -2.0},
    ),
]

_LRN = [
    case("vision_lrn_n3", "LRN", {"data": arg((2, 5, 3, 3))}, {"nsize": 3}),
    case(
        "vision_lrn_n5",
        "LRN",
        {"data": arg((1, 7, 2, 2), high=3.0)},
        {"nsize": 5, "alpha": 0.01, "beta": 0.5, "knorm": 1.0},
    ),
    case(
        "vision_lrn_n1", "LRN", {"data": arg((1, 3, 2, 3))}, {"nsize": 1, "alpha": 0.5, "beta": 1.5}
    ),
]

_SLIDING = [
    case(
        "vision_im2col_pad_stride",
        "im2col",
        {"data": arg((2, 3, 5, 6))},
        {"kernel": (2, 3), "stride": (1, 2), "pad": (1, 0)},
    ),
    case(
        "vision_im2col_dilate",
        "im2col",
        {"data": arg((1, 2, 6, 5))},
        {"kernel": (3, 2), "dilate": (2, 1), "pad": (1, 1)},
    ),
    case("vision_im2col_plain", "im2col", {"data": arg((2, 2, 3, 3))}, {"kernel": (2, 2)}),
    case(
        "vision_col2im_pad_stride",
        "col2im",
        {"data": arg((2, 18, 12))},
        {"output_size": (5, 6), "kernel": (2, 3), "stride": (1, 2), "pad": (1, 0)},
    ),
    case(
        "vision_col2im_tiles",
        "col2im",
        {"data": arg((1, 8, 4))},
        {"output_size": (4, 4), "kernel": (2, 2), "stride": (2, 2)},
    ),
    case(
        "vision_col2im_overlap",
        "col2im",
        {"data": arg((1, 12, 4))},
        {"output_size": (3, 4), "kernel": (2, 3), "dilate": (1, 1)},
    ),
]

_BLOCKS = [
    case(
        "vision_depth_to_space_b2", "depth_to_space", {"data": arg((2, 8, 2, 3))}, {"block_size": 2}
    ),
    case(
        "vision_depth_to_space_b3", "depth_to_space", {"data": arg((1, 9, 2, 1))}, {"block_size": 3}
    ),
    case(
        "vision_space_to_depth_b2", "space_to_depth", {"data": arg((2, 2, 4, 6))}, {"block_size": 2}
    ),
    case(
        "vision_space_to_depth_b3", "space_to_depth", {"data": arg((1, 1, 6, 3))}, {"block_size": 3}
    ),
]

_CONV_V1 = [
    case(
        "vision_conv_v1_pad",
        "Convolution_v1",
        {"data": arg((2, 3, 5, 5)), "weight": arg((4, 3, 3, 3)), "bias": arg((4,))},
        {"kernel": (3, 3), "num_filter": 4, "pad": (1, 1)},
    ),
    case(
        "vision_conv_v1_stride_nobias",
        "Convolution_v1",
        {"data": arg((1, 2, 6, 7)), "weight": arg((3, 2, 2, 3))},
        {"kernel": (2, 3), "num_filter": 3, "stride": (2, 2), "no_bias": True},
    ),
    case(
        "vision_conv_v1_groups_dilate",
        "Convolution_v1",
        {"data": arg((2, 4, 6, 6)), "weight": arg((2, 2, 2, 2)), "bias": arg((2,))},
        {"kernel": (2, 2), "num_filter": 2, "num_group": 2, "dilate": (2, 2)},
    ),
]

_POOL_V1 = [
    case(
        "vision_pool_v1_max_pad",
        "Pooling_v1",
        {"data": arg((1, 2, 5, 5))},
        {"kernel": (2, 2), "stride": (2, 2), "pad": (1, 1)},
    ),
    case(
        "vision_pool_v1_max_overlap",
        "Pooling_v1",
        {"data": arg((2, 2, 5, 6))},
        {"kernel": (3, 3), "stride": (1, 2)},
    ),
    case(
        "vision_pool_v1_avg_full",
        "Pooling_v1",
        {"data": arg((2, 2, 5, 7))},
        {"kernel": (3, 3), "stride": (2, 2), "pool_type": "avg", "pooling_convention": "full"},
    ),
    case(
        "vision_pool_v1_avg_pad",
        "Pooling_v1",
        {"data": arg((1, 3, 4, 4))},
        {"kernel": (3, 2), "pad": (1, 1), "pool_type": "avg"},
    ),
    case(
        "vision_pool_v1_sum",
        "Pooling_v1",
        {"data": arg((1, 2, 4, 7))},
        {"kernel": (2, 3), "stride": (1, 2), "pool_type": "sum"},
    ),
    case(
        "vision_pool_v1_global_max",
        "Pooling_v1",
        {"data": arg((2, 3, 3, 4))},
        {"global_pool": True},
    ),
    case(
        "vision_pool_v1_global_avg",
        "Pooling_v1",
        {"data": arg((2, 2, 3, 3))},
        {"global_pool": True, "pool_type": "avg", "kernel": (2, 2)},
    ),
    case(
        "vision_pool_v1_global_sum",
        "Pooling_v1",
        {"data": arg((1, 2, 2, 5))},
        {"global_pool": True, "pool_type": "sum"},
    ),
]


def _bn_args(shape):
    channels = shape[1]
    return {
        "data": arg(shape, kind="normal", high=2.0),
        "gamma": arg((channels,), kind="positive"),
        "beta": arg((channels,)),
    }


_BN_AUX = {
    "moving_mean": arg((3,)),
    "moving_var": arg((3,), kind="positive"),
}

_BN_V1 = [
    case(
        "vision_bn_v1_free_gamma",
        "BatchNorm_v1",
        _bn_args((4, 3, 2, 2)),
        {"fix_gamma": False, "momentum": 0.8},
        aux=_BN_AUX,
    ),
    case("vision_bn_v1_fix_gamma", "BatchNorm_v1", _bn_args((3, 3, 2, 3)), {}, aux=_BN_AUX),
    case(
        "vision_bn_v1_mean_var",
        "BatchNorm_v1",
        _bn_args((4, 3, 3, 2)),
        {"fix_gamma": False, "output_mean_var": True, "eps": 1e-4},
        aux=_BN_AUX,
    ),
    case(
        "vision_bn_v1_global_stats",
        "BatchNorm_v1",
        _bn_args((2, 3, 2, 2)),
        {"fix_gamma": False, "use_global_stats": True},
        aux=_BN_AUX,
    ),
    case("vision_bn_v1_2d", "BatchNorm_v1", _bn_args((5, 3)), {"fix_gamma": False}, aux=_BN_AUX),
]

_HEADS = [
    case("vision_softmax_act_instance", "SoftmaxActivation", {"data": arg((3, 5), high=3.0)}),
    case(
        "vision_softmax_act_instance_3d",
        "SoftmaxActivation",
        {"data": arg((2, 3, 4))},
        {"mode": "instance"},
    ),
    case(
        "vision_softmax_act_channel",
        "SoftmaxActivation",
        {"data": arg((2, 3, 2, 2))},
        {"mode": "channel"},
    ),
    case(
        "vision_svm_l2",
        "SVMOutput",
        {"data": arg((4, 5), high=2.0), "label": arg((4,), kind="int", low=0, high=5)},
    ),
    case(
        "vision_svm_l1",
        "SVMOutput",
        {"data": arg((4, 5), high=2.0), "label": arg((4,), kind="int", low=0, high=5)},
        {"use_linear": True, "margin": 0.5, "regularization_coefficient": 2.0},
    ),
    case(
        "vision_svm_3d",
        "SVMOutput",
        {"data": arg((2, 3, 4), high=1.5), "label": arg((2, 3), kind="int", low=0, high=4)},
        {"margin": 0.8},
    ),
    case(
        "vision_kl_sparse_default",
        "IdentityAttachKLSparseReg",
        {"data": arg((4, 5), low=0.05, high=0.95)},
        aux={"moving_avg": arg((5,), low=0.2, high=0.8)},
    ),
    case(
        "vision_kl_sparse_params",
        "IdentityAttachKLSparseReg",
        {"data": arg((3, 4), low=0.05, high=0.95)},
        {"sparseness_target": 0.3, "penalty": 0.05, "momentum": 0.5},
        aux={"moving_avg": arg((4,), low=0.2, high=0.8)},
    ),
]


def _gn_args(shape, groups, dtype="float32"):
    return {
        "data": arg(shape, dtype, kind="normal", high=2.0),
        "gamma": arg((groups,), dtype, kind="positive"),
        "beta": arg((groups,), dtype),
    }


_GROUP_NORM = [
    case("vision_group_norm_g2", "GroupNorm", _gn_args((2, 4, 3), 2), {"num_groups": 2}),
    case(
        "vision_group_norm_g3_mean_std",
        "GroupNorm",
        _gn_args((2, 6, 2, 2), 3),
        {"num_groups": 3, "eps": 1e-3, "output_mean_var": True},
    ),
    case("vision_group_norm_g1_f64", "GroupNorm", _gn_args((1, 3, 4), 1, "float64")),
]

CASES = [
    *_CROP,
    *_PAD,
    *_LRN,
    *_SLIDING,
    *_BLOCKS,
    *_CONV_V1,
    *_POOL_V1,
    *_BN_V1,
    *_HEADS,
    *_GROUP_NORM,
]
