"""Crop, Pad, LRN, im2col, col2im, depth_to_space, space_to_depth."""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

VISION_OPS = ("Crop", "Pad", "LRN", "im2col", "col2im", "depth_to_space", "space_to_depth")


@pytest.mark.parametrize("case_id", case_ids(*VISION_OPS))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def test_every_operator_has_golden_cases():
    for name in VISION_OPS:
        assert case_ids(name), name


def _run(ctx, name, attrs, inputs):
    op = opdef(name)
    device = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(OpContext(True, ctx.backend, ctx.device_id), op.parse(attrs), device, [])
    return [np.asarray(ctx.backend.to_host(o)) for o in outs]


def _rng(seed):
    return np.random.default_rng(seed)


# -- Crop -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "attrs",
    [
        {"num_args": "1", "h_w": "(2, 3)", "offset": "(1, 2)"},
        {"num_args": "1", "h_w": "(3, 2)", "center_crop": "True"},
    ],
)
def test_crop_numeric_gradient(attrs, ctx):
    check_numeric_gradient("Crop", attrs, [_rng(1).standard_normal((2, 2, 5, 6))], ctx)


def test_crop_like_gradient_and_zero_reference_gradient(ctx):
    data, like = _rng(2).standard_normal((1, 2, 5, 6)), np.zeros((1, 1, 2, 4))
    attrs = {"num_args": "2", "offset": "(3, 1)"}
    check_numeric_gradient("Crop", attrs, [data, like], ctx, grad_args=[0])
    (out,) = _run(ctx, "Crop", attrs, [data, like])
    np.testing.assert_array_equal(out, data[:, :, 3:5, 1:5])


def test_crop_inference():
    _, outs, _ = infer("Crop", {"num_args": "2"}, [(2, 3, 8, 8), (1, 1, 4, 5)])
    assert outs == [(2, 3, 4, 5)]
    _, outs, _ = infer("Crop", {"num_args": "2"}, [(2, 3, 8, 8), None])
    assert outs == [None]  # the reference shape is not known yet
    with pytest.raises(ShapeError, match="'arg0'"):
        infer("Crop", {"num_args": "1", "h_w": "(9, 2)"}, [(1, 1, 8, 8)])
    with pytest.raises(ShapeError, match="'arg0'.*offset"):
        infer("Crop", {"num_args": "1", "h_w": "(4, 4)", "offset": "(5, 0)"}, [(1, 1, 8, 8)])
    with pytest.raises(ShapeError, match="'arg0'"):
        infer("Crop", {"num_args": "1", "h_w": "(2, 2)"}, [(1, 8, 8)])
    with pytest.raises(ParamError, match="num_args"):
        opdef("Crop").parse({"num_args": "3"})


# -- Pad ------------------------------------------------------------------------

PAD_VARIANTS = [
    ((1, 2, 3, 4), (0, 0, 0, 0, 2, 1, 1, 2)),
    ((1, 1, 3, 3, 4), (0, 0, 0, 0, 1, 2, 2, 0, 1, 3)),
]


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize("shape, widths", PAD_VARIANTS)
def test_pad_matches_numpy_and_gradient(mode, shape, widths, ctx):
    data = _rng(3).standard_normal(shape)
    attrs = {"mode": mode, "pad_width": str(widths), "constant_value": "0.5"}
    (out,) = _run(ctx, "Pad", attrs, [data])
    pairs = list(zip(widths[::2], widths[1::2], strict=True))
    extra = {"constant_values": 0.5} if mode == "constant" else {}
    np.testing.assert_array_equal(out, np.pad(data, pairs, mode=mode, **extra))
    check_numeric_gradient("Pad", attrs, [data], ctx)


def test_pad_inference():
    _, outs, _ = infer("Pad", {"mode": "edge", "pad_width": "(0,0,0,0,1,2,3,4)"}, [(2, 3, 4, 5)])
    assert outs == [(2, 3, 7, 12)]
    with pytest.raises(ShapeError, match="'data'.*smaller than the axis"):
        infer("Pad", {"mode": "reflect", "pad_width": "(0,0,0,0,3,0,0,0)"}, [(1, 1, 3, 4)])
    with pytest.raises(ShapeError, match="'data'"):
        infer("Pad", {"mode": "constant", "pad_width": "(0,0,0,0,1,1)"}, [(1, 1, 3, 4)])
    with pytest.raises(ShapeError, match="'data'.*four zeros"):
        infer("Pad", {"mode": "constant", "pad_width": "(0,0,1,0,1,1,1,1)"}, [(1, 1, 3, 4)])
    with pytest.raises(ShapeError, match="4-D or 5-D"):
        infer("Pad", {"mode": "constant", "pad_width": "(0,0,1,1,1,1)"}, [(1, 3, 4)])
    with pytest.raises(ParamError, match="mode"):
        opdef("pad").parse({"mode": "wrap", "pad_width": "(0,0,0,0,1,1,1,1)"})


# -- LRN ------------------------------------------------------------------------


def _lrn_reference(x, nsize, alpha, beta, knorm):
    channels, half = x.shape[1], nsize // 2
    out = np.empty_like(x)
    for c in range(channels):
        window = x[:, max(0, c - half) : min(channels, c + half + 1)]
        scale = knorm + alpha / nsize * (window**2).sum(axis=1)
        out[:, c] = x[:, c] / scale**beta
    return out


@pytest.mark.parametrize(
    "nsize, alpha, beta, knorm", [(3, 1e-4, 0.75, 2.0), (5, 0.3, 0.5, 1.0), (1, 0.5, 1.5, 2.0)]
)
def test_lrn_reference_and_gradient(nsize, alpha, beta, knorm, ctx):
    data = _rng(4).standard_normal((2, 6, 2, 3))
    attrs = {"nsize": str(nsize), "alpha": str(alpha), "beta": str(beta), "knorm": str(knorm)}
    (out,) = _run(ctx, "LRN", attrs, [data])
    np.testing.assert_allclose(out, _lrn_reference(data, nsize, alpha, beta, knorm), rtol=1e-12)
    check_numeric_gradient("LRN", attrs, [data], ctx)


def test_lrn_inference():
    assert infer("LRN", {"nsize": "3"}, [(2, 3, 4, 5)])[1] == [(2, 3, 4, 5)]
    with pytest.raises(ShapeError, match="'data'"):
        infer("LRN", {"nsize": "3"}, [(2, 3, 4)])
    with pytest.raises(ParamError, match="odd"):
        opdef("LRN").parse({"nsize": "4"})


# -- im2col / col2im --------------------------------------------------------------


def _im2col_reference(x, kernel, stride, dilate, pad):
    """Loop over window positions: the column layout MXNet documents."""
    padded = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    spans = [d * (k - 1) + 1 for k, d in zip(kernel, dilate, strict=True)]
    counts = [(n - e) // s + 1 for n, e, s in zip(padded.shape[2:], spans, stride, strict=True)]
    columns = []
    for start in np.ndindex(*counts):
        taps = tuple(
            slice(i * s, i * s + e, d)
            for i, s, e, d in zip(start, stride, spans, dilate, strict=True)
        )
        columns.append(padded[(slice(None), slice(None), *taps)].reshape(x.shape[0], -1))
    return np.stack(columns, axis=-1)


SLIDING = [
    ((2, 3, 5, 6), {"kernel": (2, 3), "stride": (1, 2), "dilate": (1, 1), "pad": (1, 0)}),
    ((1, 2, 6, 5), {"kernel": (3, 2), "stride": (1, 1), "dilate": (2, 1), "pad": (1, 1)}),
    ((2, 2, 7), {"kernel": (3,), "stride": (2,), "dilate": (1,), "pad": (1,)}),
    (
        (1, 2, 3, 4, 4),
        {"kernel": (2, 2, 3), "stride": (1, 2, 1), "dilate": (1, 1, 1), "pad": (0, 1, 0)},
    ),
]


def _strings(attrs):
    return {k: str(v) for k, v in attrs.items()}


@pytest.mark.parametrize("shape, attrs", SLIDING)
def test_im2col_reference_and_gradient(shape, attrs, ctx):
    data = _rng(5).standard_normal(shape)
    (out,) = _run(ctx, "im2col", _strings(attrs), [data])
    np.testing.assert_array_equal(out, _im2col_reference(data, **attrs))
    check_numeric_gradient("im2col", _strings(attrs), [data], ctx)


@pytest.mark.parametrize("shape, attrs", SLIDING)
def test_col2im_is_the_adjoint_of_im2col(shape, attrs, ctx):
    rng = _rng(6)
    image = rng.standard_normal(shape)
    cols = rng.standard_normal(_im2col_reference(image, **attrs).shape)
    col_attrs = _strings({**attrs, "output_size": shape[2:]})
    (summed,) = _run(ctx, "col2im", col_attrs, [cols])
    assert summed.shape == shape
    lhs = float((_im2col_reference(image, **attrs) * cols).sum())
    np.testing.assert_allclose(lhs, float((image * summed).sum()), rtol=1e-12)
    check_numeric_gradient("col2im", col_attrs, [cols], ctx)


def test_sliding_inference():
    attrs = {"kernel": "(2, 3)", "stride": "(1, 2)", "pad": "(1, 0)"}
    assert infer("im2col", attrs, [(2, 3, 5, 6)])[1] == [(2, 18, 12)]
    col_attrs = {**attrs, "output_size": "(5, 6)"}
    assert infer("col2im", col_attrs, [(2, 18, 12)])[1] == [(2, 3, 5, 6)]
    with pytest.raises(ShapeError, match="'data'.*exceeds"):
        infer("im2col", {"kernel": "(4, 4)"}, [(1, 1, 3, 5)])
    with pytest.raises(ShapeError, match="'data'"):
        infer("im2col", {"kernel": "(2, 2)"}, [(1, 3, 5)])
    with pytest.raises(ShapeError, match="'data'.*12 blocks"):
        infer("col2im", col_attrs, [(2, 18, 10)])
    with pytest.raises(ShapeError, match="'data'.*prod"):
        infer("col2im", col_attrs, [(2, 17, 12)])
    with pytest.raises(ParamError, match="output_size"):
        opdef("col2im").parse({"kernel": "(2, 2)", "output_size": "(4,)"})


# -- depth_to_space / space_to_depth --------------------------------------------


def test_depth_to_space_places_channel_blocks(ctx):
    data = np.arange(2 * 8 * 2 * 3, dtype=np.float64).reshape(2, 8, 2, 3)
    (out,) = _run(ctx, "depth_to_space", {"block_size": "2"}, [data])
    for n, c, h, w in np.ndindex(*out.shape):
        i, j = h % 2, w % 2  # DCR: channel (i * block + j) * C' + c
        assert out[n, c, h, w] == data[n, (i * 2 + j) * 2 + c, h // 2, w // 2]
    (back,) = _run(ctx, "space_to_depth", {"block_size": "2"}, [out])
    np.testing.assert_array_equal(back, data)


@pytest.mark.parametrize(
    "name, shape", [("depth_to_space", (1, 9, 2, 2)), ("space_to_depth", (2, 1, 3, 6))]
)
def test_block_numeric_gradient(name, shape, ctx):
    check_numeric_gradient(name, {"block_size": "3"}, [_rng(7).standard_normal(shape)], ctx)


def test_block_inference():
    assert infer("depth_to_space", {"block_size": "2"}, [(1, 8, 2, 3)])[1] == [(1, 2, 4, 6)]
    assert infer("space_to_depth", {"block_size": "2"}, [(1, 2, 4, 6)])[1] == [(1, 8, 2, 3)]
    with pytest.raises(ShapeError, match="'data'.*block_size"):
        infer("depth_to_space", {"block_size": "2"}, [(1, 6, 2, 3)])
    with pytest.raises(ShapeError, match="'data'.*width"):
        infer("space_to_depth", {"block_size": "2"}, [(1, 2, 4, 5)])
    with pytest.raises(ShapeError, match="'data'"):
        infer("space_to_depth", {"block_size": "2"}, [(2, 4, 4)])
    with pytest.raises(ParamError, match="block_size"):
        opdef("depth_to_space").parse({"block_size": "0"})


@pytest.mark.parametrize("name", ["depth_to_space", "space_to_depth"])
def test_block_ops_reject_empty_dimensions(ctx, name):
    # MXNet's test_depthtospace / test_spacetodepth expect an error, not an empty result
    data = mx.nd.ones((1, 4, 0, 4), ctx=ctx)
    with pytest.raises(ShapeError, match="empty dimension"):
        getattr(mx.nd, name)(data, 2)
