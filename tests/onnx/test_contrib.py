"""Export of the contrib resamplers (AdaptiveAvgPooling2D, BilinearResize2D), run in ONNX
Runtime, and the refusal of the contrib detection operators ONNX cannot express."""

import numpy as np
import pytest

import rebind as mx
from rebind.onnx.errors import OnnxExportError

from .test_nn import data, export_and_compare


@pytest.mark.parametrize("output_size", [(), 3, (2, 5)])
def test_adaptive_avg_pooling(tmp_path, output_size):
    net = mx.sym.contrib.AdaptiveAvgPooling2D(mx.sym.var("data"), output_size=output_size)
    export_and_compare(net, tmp_path, data=data(2, 3, 7, 9))


@pytest.mark.parametrize(
    "attrs",
    [
        {"height": 9, "width": 4},
        {"height": 5, "width": 11, "align_corners": False},
        {"mode": "to_odd_up"},
        {"mode": "odd_scale", "scale_height": 2.0, "scale_width": 0.5},
    ],
)
def test_bilinear_resize(tmp_path, attrs):
    net = mx.sym.contrib.BilinearResize2D(mx.sym.var("data"), **attrs)
    export_and_compare(net, tmp_path, data=data(1, 2, 6, 7))


def test_bilinear_resize_like(tmp_path):
    net = mx.sym.contrib.BilinearResize2D(mx.sym.var("data"), mx.sym.var("ref"), mode="like")
    export_and_compare(net, tmp_path, data=data(1, 2, 4, 5), ref=data(1, 1, 8, 3))


def test_multibox_detection_is_refused_with_the_reason(tmp_path):
    net = mx.sym.contrib.MultiBoxDetection(
        mx.sym.var("cls_prob"), mx.sym.var("loc_pred"), mx.sym.var("anchor")
    )
    with pytest.raises(OnnxExportError, match="ONNX has no equivalent operator"):
        mx.onnx.export_model(
            net,
            {},
            in_shapes=[(1, 3, 4), (1, 16), (1, 4, 4)],
            in_types=[np.float32] * 3,
            onnx_file_path=str(tmp_path / "m.onnx"),
        )


_ROIS = np.array(
    [[0, 0.5, 1.0, 4.3, 5.0], [1, 2.0, 0.2, 6.9, 3.3], [0, -2, -1, 9, 8], [1, 3, 3, 3.2, 3.1]],
    np.float32,
)


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"sample_ratio": 2, "pooled_size": (3, 2)},
        {"aligned": True},
        {"spatial_scale": 0.5, "sample_ratio": 3},
    ],
)
def test_roi_align(tmp_path, attrs):
    settings = {"pooled_size": (2, 2), "spatial_scale": 1.0, **attrs}
    net = mx.sym.contrib.ROIAlign(mx.sym.var("data"), mx.sym.var("rois"), **settings)
    export_and_compare(net, tmp_path, data=data(2, 3, 6, 7), rois=_ROIS, atol=1e-5)


def test_position_sensitive_roi_align_is_refused(tmp_path):
    net = mx.sym.contrib.ROIAlign(
        mx.sym.var("data"),
        mx.sym.var("rois"),
        pooled_size=(2, 2),
        spatial_scale=1.0,
        position_sensitive=True,
    )
    with pytest.raises(OnnxExportError, match="position_sensitive"):
        export_and_compare(net, tmp_path, data=data(2, 8, 6, 7), rois=_ROIS)


def test_roi_align_before_opset_16(tmp_path):
    net = mx.sym.contrib.ROIAlign(
        mx.sym.var("data"), mx.sym.var("rois"), pooled_size=(2, 3), spatial_scale=0.5
    )
    export_and_compare(
        net, tmp_path, data=data(2, 3, 6, 7), rois=_ROIS, atol=1e-5, opset_version=13
    )


def test_resamplers_with_dynamic_batch(tmp_path):
    net = mx.sym.contrib.BilinearResize2D(
        mx.sym.contrib.AdaptiveAvgPooling2D(mx.sym.var("data"), output_size=(3, 4)),
        height=6,
        width=5,
    )
    export_and_compare(net, tmp_path, data=data(3, 2, 7, 9), dynamic=True)


def test_aligned_roi_align_needs_opset_16(tmp_path):
    net = mx.sym.contrib.ROIAlign(
        mx.sym.var("data"), mx.sym.var("rois"), pooled_size=(2, 2), spatial_scale=1, aligned=True
    )
    with pytest.raises(OnnxExportError, match="opset 16"):
        export_and_compare(net, tmp_path, data=data(2, 3, 6, 7), rois=_ROIS, opset_version=15)


@pytest.mark.parametrize(
    "build",
    [
        lambda x: mx.sym.contrib.div_sqrt_dim(x),
        lambda x: mx.sym.contrib.gradientmultiplier(x, scalar=3.0),
        lambda x: mx.sym.contrib.round_ste(x * 2.5),
        lambda x: mx.sym.contrib.sign_ste(x),
    ],
)
def test_elementwise_helpers(tmp_path, build):
    export_and_compare(build(mx.sym.var("data")), tmp_path, data=data(2, 3, 16))
