"""DeformableConvolution and ModulatedDeformableConvolution (mx.contrib)."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

DCN = "_contrib_DeformableConvolution"
MDCN = "_contrib_ModulatedDeformableConvolution"


@pytest.mark.parametrize("case_id", case_ids(DCN, MDCN))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _run(ctx, name, attrs, inputs):
    op = opdef(name)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(OpContext(True, ctx.backend, ctx.device_id), op.parse(attrs), arrays, [])
    return np.asarray(ctx.backend.to_host(outs[0]))


def _inputs(rng, data, taps, groups, weight, spread):
    n, _, h, w = data
    return [
        rng.standard_normal(data),
        # offsets away from integers: bilinear sampling is not differentiable there
        np.round(rng.uniform(-spread, spread, (n, 2 * groups * taps, h, w)), 1) + 0.37,
        rng.standard_normal(weight),
        rng.standard_normal(weight[0]),
    ]


@pytest.mark.parametrize("spread", [0.8, 3.0])
@pytest.mark.parametrize("groups", [1, 2])
def test_numeric_gradient(ctx, spread, groups):
    rng = np.random.default_rng(7)
    attrs = {"kernel": (2, 2), "pad": (1, 0), "num_filter": 2, "num_deformable_group": groups}
    data, offset, weight, bias = _inputs(rng, (1, 2, 3, 4), 4, groups, (2, 2, 2, 2), spread)
    offset = offset[:, :, :4, :3]  # the output is 4 x 3
    check_numeric_gradient(DCN, attrs, [data, offset, weight, bias], ctx, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("spread", [0.8, 3.0])
def test_modulated_numeric_gradient(ctx, spread):
    rng = np.random.default_rng(8)
    attrs = {"kernel": (2, 2), "stride": (2, 1), "num_filter": 2, "num_group": 2}
    data, offset, weight, bias = _inputs(rng, (2, 2, 4, 4), 4, 1, (2, 1, 2, 2), spread)
    offset = offset[:, :, :2, :3]  # the output is 2 x 3
    mask = rng.uniform(0, 1, (2, 4, 2, 3))
    inputs = [data, offset, mask, weight, bias]
    check_numeric_gradient(MDCN, attrs, inputs, ctx, rtol=1e-5, atol=1e-6)


def test_zero_offsets_and_unit_mask_are_a_convolution(ctx):
    rng = np.random.default_rng(9)
    data, weight = rng.standard_normal((2, 4, 5, 6)), rng.standard_normal((6, 2, 3, 3))
    offset = np.zeros((2, 36, 5, 6))
    attrs = {"kernel": (3, 3), "pad": (1, 1), "num_filter": 6, "num_group": 2, "no_bias": True}
    attrs["num_deformable_group"] = 2
    padded = np.pad(data, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    want = np.concatenate(
        [
            np.einsum("nchwij,fcij->nfhw", windows[:, 2 * g : 2 * g + 2], weight[3 * g : 3 * g + 3])
            for g in range(2)
        ],
        axis=1,
    )
    np.testing.assert_allclose(_run(ctx, DCN, attrs, [data, offset, weight]), want, atol=1e-12)
    mask = np.ones((2, 18, 5, 6))
    got = _run(ctx, MDCN, attrs, [data, offset, mask, weight])
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_empty_batch(ctx):
    attrs = {"kernel": (3, 3), "pad": (1, 1), "num_filter": 3}
    data, offset = np.zeros((0, 2, 4, 4)), np.zeros((0, 18, 4, 4))
    weight, bias = np.ones((3, 2, 3, 3)), np.ones(3)
    assert _run(ctx, DCN, attrs, [data, offset, weight, bias]).shape == (0, 3, 4, 4)
    mask = np.zeros((0, 9, 4, 4))
    assert _run(ctx, MDCN, attrs, [data, offset, mask, weight, bias]).shape == (0, 3, 4, 4)


def test_shapes_and_errors():
    attrs = {"kernel": (3, 3), "pad": (1, 1), "num_filter": 4, "num_deformable_group": 2}
    shapes, outs, _ = infer(DCN, attrs, [(2, 4, 5, 6), None, None, None])
    assert shapes[2:] == [(4, 4, 3, 3), (4,)] and outs == [(2, 4, 5, 6)]
    with pytest.raises(ShapeError, match=rf"{DCN}.*'offset'.*\(2, 18, 5, 6\).*36 channels"):
        infer(DCN, attrs, [(2, 4, 5, 6), (2, 18, 5, 6), None, None])
    with pytest.raises(ShapeError, match=r"'offset'.*\(2, 36, 4, 6\).*\(5, 6\)"):
        infer(DCN, attrs, [(2, 4, 5, 6), (2, 36, 4, 6), None, None])
    with pytest.raises(ShapeError, match=r"'data'.*\(2, 3, 5, 6\).*num_deformable_group=2"):
        infer(DCN, attrs, [(2, 3, 5, 6), None, None, None])
    with pytest.raises(ShapeError, match=rf"{MDCN}.*'mask'.*\(2, 9, 5, 6\).*18 channels"):
        infer(MDCN, attrs, [(2, 4, 5, 6), (2, 36, 5, 6), (2, 9, 5, 6), None, None])
    with pytest.raises(ShapeError, match=r"'data'.*\(66, 4, 5, 6\).*im2col_step=64"):
        infer(MDCN, attrs, [(66, 4, 5, 6), None, None, None, None])
    with pytest.raises(NotImplementedError, match="2-D only"):
        opdef(DCN).parse({"kernel": (3,), "num_filter": 2})
