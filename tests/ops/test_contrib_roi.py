"""ROIAlign and PSROIPooling (mx.contrib)."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden


@pytest.mark.parametrize("case_id", case_ids("_contrib_ROIAlign", "_contrib_PSROIPooling"))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _run(ctx, attrs, inputs):
    op = opdef("_contrib_ROIAlign")
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(OpContext(True, ctx.backend, ctx.device_id), op.parse(attrs), arrays, [])
    return [np.asarray(ctx.backend.to_host(o)) for o in outs]


def test_linear_image_averages_to_bin_centres(ctx):
    # bilinear sampling is exact on a linear ramp: each bin's mean is the ramp at its centre
    height, width = 8, 10
    ramp = (np.arange(height)[:, None] * 2.0 + np.arange(width) * 0.5)[None, None]
    rois = np.array([[0, 1.0, 2.0, 7.0, 6.0]])
    (out,) = _run(ctx, {"pooled_size": (2, 3), "spatial_scale": 1, "sample_ratio": 2}, [ramp, rois])
    centres_y = 2.0 + (np.arange(2) + 0.5) * 2.0
    centres_x = 1.0 + (np.arange(3) + 0.5) * 2.0
    np.testing.assert_allclose(out[0, 0], centres_y[:, None] * 2.0 + centres_x * 0.5)


def test_negative_batch_index_gives_zeros(ctx):
    data = np.ones((1, 2, 4, 4), np.float32)
    rois = np.array([[-1, 0, 0, 3, 3], [0, 0, 0, 3, 3]], np.float32)
    (out,) = _run(ctx, {"pooled_size": (2, 2), "spatial_scale": 1}, [data, rois])
    assert (out[0] == 0).all() and np.allclose(out[1], 1)


@pytest.mark.parametrize(
    "attrs",
    [
        {"pooled_size": (2, 2), "spatial_scale": 1.0},
        {"pooled_size": (2, 2), "spatial_scale": 0.5, "aligned": True, "sample_ratio": 2},
        {"pooled_size": (2, 1), "spatial_scale": 1.0, "position_sensitive": True},
    ],
)
def test_numeric_gradient(ctx, attrs):
    data = np.random.default_rng(4).standard_normal((2, 4, 5, 6))
    rois = np.array([[0, 0.5, 1.0, 4.2, 3.9], [1, 1.5, 0.0, 5.5, 4.4], [0, 2, 2, 9, 9]])
    check_numeric_gradient("_contrib_ROIAlign", attrs, [data, rois], ctx, grad_args=[0])


def test_shape_errors_name_argument_and_shapes():
    attrs = {"pooled_size": (2, 2), "spatial_scale": 1}
    with pytest.raises(ShapeError, match=r"_contrib_ROIAlign.*'rois'.*\(3, 4\)"):
        infer("_contrib_ROIAlign", attrs, [(1, 4, 5, 5), (3, 4)])
    with pytest.raises(ShapeError, match=r"'data'.*\(4, 5, 5\).*4-D"):
        infer("_contrib_ROIAlign", attrs, [(4, 5, 5), (3, 5)])
    sensitive = {**attrs, "position_sensitive": True}
    with pytest.raises(ShapeError, match="divisible by 4"):
        infer("_contrib_ROIAlign", sensitive, [(1, 6, 5, 5), (3, 5)])
    assert infer("_contrib_ROIAlign", sensitive, [(1, 8, 5, 5), (3, 5)])[1] == [(3, 2, 2, 2)]


def test_aligned_rejects_empty_roi(ctx):
    data = np.ones((1, 1, 4, 4), np.float32)
    rois = np.array([[0, 1, 1, 1, 3]], np.float32)
    with pytest.raises(ValueError, match="positive width"):
        _run(ctx, {"pooled_size": (2, 2), "spatial_scale": 1, "aligned": True}, [data, rois])


def test_psroi_pooling_numeric_gradient(ctx):
    data = np.random.default_rng(5).standard_normal((2, 8, 6, 7))
    rois = np.array([[0, 1.0, 2.0, 9.0, 11.0], [1, 0.0, 0.0, 13.0, 8.0]])
    attrs = {"spatial_scale": 0.5, "output_dim": 2, "pooled_size": 2}
    check_numeric_gradient("_contrib_PSROIPooling", attrs, [data, rois], ctx, grad_args=[0])


def test_psroi_pooling_shapes():
    attrs = {"spatial_scale": 0.5, "output_dim": 2, "pooled_size": 3}
    assert infer("_contrib_PSROIPooling", attrs, [(1, 18, 6, 6), (4, 5)])[1] == [(4, 2, 3, 3)]
    with pytest.raises(ShapeError, match=r"_contrib_PSROIPooling.*'data'.*at least 18"):
        infer("_contrib_PSROIPooling", attrs, [(1, 12, 6, 6), (4, 5)])
