"""DeformablePSROIPooling (mx.contrib)."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

OP = "_contrib_DeformablePSROIPooling"


@pytest.mark.parametrize("case_id", case_ids(OP))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _run(ctx, attrs, inputs):
    op = opdef(OP)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(OpContext(True, ctx.backend, ctx.device_id), op.parse(attrs), arrays, [])
    return [np.asarray(ctx.backend.to_host(o)) for o in outs]


def test_data_numeric_gradient(ctx):
    rng = np.random.default_rng(3)
    attrs = {"spatial_scale": 0.5, "output_dim": 2, "group_size": 2, "pooled_size": 2}
    attrs.update(sample_per_part=2, trans_std=0.2)
    data = rng.standard_normal((2, 8, 6, 7))
    rois = np.array([[0, 1.0, 2.0, 9.0, 11.0], [1, 0.0, 0.0, 13.0, 8.0]])
    trans = rng.uniform(-1, 1, (2, 4, 2, 2))
    check_numeric_gradient(OP, attrs, [data, rois, trans], ctx, grad_args=[0])


def test_constant_image_averages_to_the_constant(ctx):
    # every kept sample reads 3: the average is 3 wherever a sample stayed inside
    attrs = {"spatial_scale": 1.0, "output_dim": 1, "group_size": 1, "pooled_size": 2}
    attrs.update(no_trans=True, sample_per_part=3)
    data = np.full((1, 1, 5, 5), 3.0)
    rois = np.array([[0, 0, 0, 3, 3], [0, 40, 40, 50, 50]])
    (out,) = _run(ctx, attrs, [data, rois])
    assert np.allclose(out[0], 3)
    assert (out[1] == 0).all()  # every sample past the border: nothing to average


def test_shapes_and_errors():
    attrs = {"spatial_scale": 0.5, "output_dim": 2, "group_size": 3, "pooled_size": 3}
    _, outs, _ = infer(OP, attrs, [(1, 18, 6, 6), (4, 5), (4, 4, 3, 3)])
    assert outs == [(4, 2, 3, 3)]
    with pytest.raises(ShapeError, match=rf"{OP}.*'data'.*at least 18"):
        infer(OP, attrs, [(1, 12, 6, 6), (4, 5), None])
    with pytest.raises(ShapeError, match=r"'trans'.*\(4, 4, 2, 2\).*\(4, 2 \* num_classes, 3, 3\)"):
        infer(OP, attrs, [(1, 18, 6, 6), (4, 5), (4, 4, 2, 2)])
    with pytest.raises(ShapeError, match=r"'rois'.*\(4, 6\)"):
        infer(OP, attrs, [(1, 18, 6, 6), (4, 6), None])
    assert opdef(OP).arguments(opdef(OP).parse({**attrs, "no_trans": True})) == ("data", "rois")
