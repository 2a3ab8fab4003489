"""Export of the image-shaped layers, run in ONNX Runtime against rebind's own forward.

Pad, Crop, depth_to_space / space_to_depth, GroupNorm, the legacy _v1 layers,
ROIPooling, the spatial transformer family, im2col and col2im.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.onnx.errors import OnnxExportError

from .test_nn import data, export_and_compare

X = mx.sym.var("data")


# -- Pad and Crop ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "shape,mode,pad_width,value",
    [
        ((2, 3, 4, 5), "constant", (0, 0, 0, 0, 1, 2, 2, 0), 1.5),
        ((1, 2, 4, 5), "edge", (0, 0, 0, 0, 2, 1, 0, 3), 0.0),
        ((1, 2, 4, 5), "reflect", (0, 0, 0, 0, 3, 1, 2, 4), 0.0),
        ((1, 2, 3, 4, 5), "reflect", (0, 0, 0, 0, 1, 2, 1, 0, 2, 2), 0.0),
        ((1, 2, 3, 4, 5), "constant", (0, 0, 0, 0, 1, 0, 0, 2, 1, 1), -2.0),
    ],
)
def test_pad(tmp_path, shape, mode, pad_width, value):
    net = mx.sym.Pad(X, mode=mode, pad_width=pad_width, constant_value=value, name="pad")
    export_and_compare(net, tmp_path, data=data(*shape))


def test_pad_dynamic_batch(tmp_path):
    net = mx.sym.pad(X, mode="edge", pad_width=(0, 0, 0, 0, 1, 1, 2, 2))
    export_and_compare(net, tmp_path, data=data(2, 3, 4, 4), dynamic=True)


@pytest.mark.parametrize(
    "attrs",
    [
        {"h_w": (2, 3), "offset": (1, 2)},
        {"h_w": (3, 2), "center_crop": True},
        {"h_w": (5, 6)},
    ],
)
def test_crop(tmp_path, attrs):
    net = mx.sym.Crop(X, num_args=1, name="crop", **attrs)
    export_and_compare(net, tmp_path, data=data(2, 3, 5, 6))


@pytest.mark.parametrize("center", [False, True])
def test_crop_like(tmp_path, center):
    like = mx.sym.var("like")
    net = mx.sym.Crop(X, like, num_args=2, offset=(1, 0), center_crop=center, name="crop")
    export_and_compare(net, tmp_path, data=data(2, 3, 7, 6), like=data(2, 1, 4, 3, seed=2))


# -- depth_to_space and space_to_depth --------------------------------------------------
@pytest.mark.parametrize("block", [2, 3])
def test_depth_to_space(tmp_path, block):
    net = mx.sym.depth_to_space(X, block_size=block)
    model = export_and_compare(net, tmp_path, data=data(2, 2 * block * block, 3, 2))
    assert [n.op_type for n in model.graph.node] == ["DepthToSpace"]


@pytest.mark.parametrize("block", [2, 3])
def test_space_to_depth(tmp_path, block):
    net = mx.sym.space_to_depth(X, block_size=block)
    export_and_compare(net, tmp_path, data=data(2, 3, 2 * block, 3 * block))


def test_depth_to_space_round_trip(tmp_path):
    net = mx.sym.space_to_depth(mx.sym.depth_to_space(X, block_size=2), block_size=2)
    export_and_compare(net, tmp_path, data=data(1, 8, 3, 3), dynamic=True)


# -- GroupNorm ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "shape,groups,eps,mean_var",
    [((2, 6, 4, 3), 3, 1e-5, False), ((3, 4, 5), 2, 1e-3, True), ((2, 4, 2, 2, 3), 1, 1e-5, True)],
)
def test_group_norm(tmp_path, shape, groups, eps, mean_var):
    net = mx.sym.GroupNorm(X, num_groups=groups, eps=eps, output_mean_var=mean_var, name="gn")
    export_and_compare(net, tmp_path, data=data(*shape) * 3 + 1, rtol=1e-5, atol=1e-5)


def test_group_norm_dynamic(tmp_path):
    net = mx.sym.GroupNorm(X, num_groups=2, name="gn")
    export_and_compare(net, tmp_path, data=data(3, 4, 5, 2), dynamic=True, atol=1e-5)


# -- the legacy layers -------------------------------------------------------------------
@pytest.mark.parametrize(
    "attrs",
    [
        {"kernel": (3, 3), "pad": (1, 0), "stride": (2, 1), "num_group": 2},
        {"kernel": (2, 2), "dilate": (2, 1), "no_bias": True},
    ],
)
def test_convolution_v1(tmp_path, attrs):
    net = mx.sym.Convolution_v1(X, num_filter=4, name="conv", **attrs)
    export_and_compare(net, tmp_path, data=data(2, 4, 7, 6), atol=1e-5)


@pytest.mark.parametrize(
    "attrs",
    [
        {"kernel": (3, 3), "pool_type": "max", "pad": (1, 1), "stride": (2, 2)},
        {"kernel": (3, 2), "pool_type": "avg", "pad": (1, 1), "pooling_convention": "full"},
        {"kernel": (2, 3), "pool_type": "sum", "stride": (2, 2), "pooling_convention": "full"},
        {"kernel": (3, 3), "pool_type": "avg", "stride": (2, 1)},
        {"global_pool": True, "pool_type": "avg"},
        {"global_pool": True, "pool_type": "max"},
        {"global_pool": True, "pool_type": "sum", "kernel": (2, 2)},
    ],
)
def test_pooling_v1(tmp_path, attrs):
    net = mx.sym.Pooling_v1(X - 2.0, name="pool", **attrs)  # mostly negative: zero pads show
    export_and_compare(net, tmp_path, data=data(2, 3, 7, 6), atol=1e-5)


@pytest.mark.parametrize("fix_gamma,mean_var", [(True, False), (False, True)])
def test_batch_norm_v1(tmp_path, fix_gamma, mean_var):
    net = mx.sym.BatchNorm_v1(X, fix_gamma=fix_gamma, output_mean_var=mean_var, eps=1e-3, name="bn")
    export_and_compare(net, tmp_path, data=data(2, 3, 4, 5), atol=1e-5)


# -- ROIPooling -----------------------------------------------------------------------------
def test_roi_pooling(tmp_path):
    rois = np.array(
        [
            [0, 0.0, 0.0, 7.0, 6.0],
            [1, 1.4, 2.5, 5.5, 4.4],
            [0, 3.0, 1.0, 3.0, 1.0],  # one pixel
            [1, 2.2, 0.5, 9.7, 8.6],  # past the border
            [0, 5.0, 3.0, 7.0, 1.0],  # corners at x.5: rounded half away from zero
            [1, -1.0, -3.0, 3.0, 5.0],  # negative halves
        ],
        dtype=np.float32,
    )
    net = mx.sym.ROIPooling(X, mx.sym.var("rois"), pooled_size=(3, 2), spatial_scale=0.5)
    export_and_compare(net, tmp_path, data=data(2, 3, 5, 4), rois=rois)


# -- the spatial transformer family -----------------------------------------------------------
def _affine(batch, seed=3):
    rng = np.random.default_rng(seed)
    identity = np.array([1, 0, 0, 0, 1, 0], np.float32)
    return (identity + rng.normal(scale=0.3, size=(batch, 6))).astype(np.float32)


def test_bilinear_sampler(tmp_path):
    grid = np.random.default_rng(4).uniform(-1.3, 1.3, size=(2, 2, 3, 5)).astype(np.float32)
    net = mx.sym.BilinearSampler(X, mx.sym.var("grid"), name="bs")
    export_and_compare(net, tmp_path, data=data(2, 3, 4, 6), grid=grid, atol=1e-5)


def test_spatial_transformer(tmp_path):
    net = mx.sym.SpatialTransformer(
        X,
        mx.sym.var("loc"),
        target_shape=(4, 5),
        transform_type="affine",
        sampler_type="bilinear",
        name="st",
    )
    export_and_compare(net, tmp_path, data=data(2, 3, 6, 7), loc=_affine(2), atol=1e-5)


def test_grid_generator_affine_feeds_sampler(tmp_path):
    grid = mx.sym.GridGenerator(mx.sym.var("loc"), transform_type="affine", target_shape=(3, 4))
    net = mx.sym.Group([grid, mx.sym.BilinearSampler(X, grid)])
    export_and_compare(net, tmp_path, data=data(2, 2, 5, 5), loc=_affine(2), atol=1e-5)


def test_grid_generator_warp(tmp_path):
    net = mx.sym.GridGenerator(X, transform_type="warp")
    export_and_compare(net, tmp_path, data=data(2, 2, 4, 5), dynamic=True)


def test_bilinear_sampler_needs_opset_16(tmp_path):
    net = mx.sym.BilinearSampler(X, mx.sym.var("grid"), name="bs")
    with pytest.raises(OnnxExportError, match="opset 16"):
        mx.onnx.export_model(
            net,
            {},
            in_shapes=[(1, 1, 2, 2), (1, 2, 2, 2)],
            in_types=[np.float32] * 2,
            onnx_file_path=str(tmp_path / "m.onnx"),
            opset_version=15,
        )


# -- im2col and col2im -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "shape,attrs",
    [
        ((2, 3, 5, 6), {"kernel": (2, 3)}),
        ((1, 2, 7, 6), {"kernel": (3, 2), "stride": (2, 1), "dilate": (1, 2), "pad": (1, 1)}),
        ((2, 2, 9), {"kernel": (3,), "stride": (2,), "pad": (2,)}),
    ],
)
def test_im2col(tmp_path, shape, attrs):
    export_and_compare(mx.sym.im2col(X, **attrs), tmp_path, data=data(*shape))


@pytest.mark.parametrize(
    "attrs",
    [
        {"output_size": (5, 6), "kernel": (2, 3)},
        {
            "output_size": (7, 6),
            "kernel": (3, 2),
            "stride": (2, 1),
            "dilate": (1, 2),
            "pad": (1, 1),
        },
    ],
)
def test_col2im(tmp_path, attrs):
    net = mx.sym.col2im(X, **attrs)
    _, (out,), _ = mx.sym.im2col(
        X, **{k: v for k, v in attrs.items() if k != "output_size"}
    ).infer_shape(data=(2, 3, *attrs["output_size"]))
    export_and_compare(net, tmp_path, data=data(*out), opset_version=18, atol=1e-5)


def test_col2im_needs_opset_18(tmp_path):
    net = mx.sym.col2im(X, output_size=(3, 3), kernel=(2, 2))
    with pytest.raises(OnnxExportError, match="opset 18"):
        mx.onnx.export_model(
            net,
            {},
            in_shapes=[(1, 8, 4)],
            in_types=[np.float32],
            onnx_file_path=str(tmp_path / "m.onnx"),
        )
