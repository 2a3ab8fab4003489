"""RROIAlign (mx.contrib)."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

OP = "_contrib_RROIAlign"


@pytest.mark.parametrize("case_id", case_ids(OP))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _run(ctx, attrs, inputs):
    op = opdef(OP)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(OpContext(True, ctx.backend, ctx.device_id), op.parse(attrs), arrays, [])
    return np.asarray(ctx.backend.to_host(outs[0]))


def test_zero_angle_is_roi_align(ctx):
    rng = np.random.default_rng(1)
    data = rng.standard_normal((2, 3, 8, 9))
    boxes = np.array([[0, 1.0, 2.0, 6.0, 7.0], [1, 0.5, 0.5, 8.0, 4.0]])
    centred = np.column_stack(
        [boxes[:, 0], (boxes[:, 1] + boxes[:, 3]) / 2, (boxes[:, 2] + boxes[:, 4]) / 2]
        + [boxes[:, 3] - boxes[:, 1], boxes[:, 4] - boxes[:, 2], np.zeros(2)]
    )
    attrs = {"pooled_size": (2, 3), "spatial_scale": 1.0}
    got = _run(ctx, {**attrs, "sampling_ratio": 2}, [data, centred])
    op = opdef("_contrib_ROIAlign")
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in (data, boxes)]
    params = op.parse({**attrs, "sample_ratio": 2})
    want, _ = op.forward(OpContext(True, ctx.backend, ctx.device_id), params, arrays, [])
    np.testing.assert_allclose(got, np.asarray(ctx.backend.to_host(want[0])), atol=1e-12)


def test_numeric_gradient(ctx):
    data = np.random.default_rng(2).standard_normal((2, 2, 6, 7))
    rois = np.array([[0, 3.1, 2.7, 4.3, 3.2, 33.0], [1, 2.2, 4.1, 5.0, 2.9, -120.0]])
    attrs = {"pooled_size": (2, 2), "spatial_scale": 1.0}
    check_numeric_gradient(OP, attrs, [data, rois], ctx, grad_args=[0])


def test_no_rois(ctx):
    out = _run(
        ctx,
        {"pooled_size": (2, 2), "spatial_scale": 1.0},
        [np.ones((1, 3, 4, 4)), np.zeros((0, 6))],
    )
    assert out.shape == (0, 3, 2, 2)


def test_shapes_and_errors():
    attrs = {"pooled_size": (2, 3), "spatial_scale": 0.5}
    assert infer(OP, attrs, [(2, 4, 5, 5), (7, 6)])[1] == [(7, 4, 2, 3)]
    with pytest.raises(ShapeError, match=rf"{OP}.*'rois'.*\(7, 5\).*\(num_rois, 6\)"):
        infer(OP, attrs, [(2, 4, 5, 5), (7, 5)])
    with pytest.raises(ShapeError, match=r"'data'.*\(4, 5, 5\).*4-D"):
        infer(OP, attrs, [(4, 5, 5), (7, 6)])
