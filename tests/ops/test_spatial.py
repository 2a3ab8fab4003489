"""BilinearSampler, GridGenerator, SpatialTransformer, ROIPooling, Correlation."""

import itertools

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

SPATIAL_OPS = (
    "BilinearSampler",
    "GridGenerator",
    "SpatialTransformer",
    "ROIPooling",
    "Correlation",
)


@pytest.mark.parametrize("case_id", case_ids(*SPATIAL_OPS))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _run(ctx, name, attrs, inputs):
    op = opdef(name)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(OpContext(True, ctx.backend, ctx.device_id), op.parse(attrs), arrays, [])
    return [np.asarray(ctx.backend.to_host(o)) for o in outs]


# -- references written from MXNet's definitions ------------------------------


def _bilinear_reference(data, grid):
    n, c, height, width = data.shape
    out = np.zeros((n, c, *grid.shape[2:]))
    for b, i, j in itertools.product(range(n), range(grid.shape[2]), range(grid.shape[3])):
        x = (grid[b, 0, i, j] + 1) * (width - 1) / 2
        y = (grid[b, 1, i, j] + 1) * (height - 1) / 2
        x0, y0 = int(np.floor(x)), int(np.floor(y))
        for row, col in itertools.product((y0, y0 + 1), (x0, x0 + 1)):
            if 0 <= row < height and 0 <= col < width:
                weight = (1 - abs(y - row)) * (1 - abs(x - col))
                out[b, :, i, j] += weight * data[b, :, row, col]
    return out


def _correlation_reference(a, b, kernel, max_disp, stride1, stride2, pad, multiply):
    a = np.pad(a, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    b = np.pad(b, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, height, width = a.shape
    border = max_disp + (kernel - 1) // 2
    top_h = int(np.ceil((height - 2 * border) / stride1))
    top_w = int(np.ceil((width - 2 * border) / stride1))
    radius = max_disp // stride2
    grid = 2 * radius + 1
    out = np.zeros((n, grid * grid, top_h, top_w))
    for q, i, j in itertools.product(range(grid * grid), range(top_h), range(top_w)):
        y1, x1 = i * stride1 + max_disp, j * stride1 + max_disp
        y2 = y1 + (q // grid - radius) * stride2
        x2 = x1 + (q % grid - radius) * stride2
        p1 = a[:, :, y1 : y1 + kernel, x1 : x1 + kernel]
        p2 = b[:, :, y2 : y2 + kernel, x2 : x2 + kernel]
        term = p1 * p2 if multiply else np.abs(p1 - p2)
        out[:, q, i, j] = term.sum(axis=(1, 2, 3)) / (kernel * kernel * c)
    return out


# -- BilinearSampler / GridGenerator / SpatialTransformer ----------------------

_DOC_DATA = np.array([[[[1, 4, 3, 6], [1, 8, 8, 9], [0, 4, 1, 5], [1, 0, 1, 3]]]], np.float32)


def test_bilinear_sampler_matches_mxnet_doc_examples(ctx):
    affine = np.array([[2, 0, 0, 0, 2, 0]], np.float32)
    (grid,) = _run(
        ctx, "GridGenerator", {"transform_type": "affine", "target_shape": "(4, 4)"}, [affine]
    )
    (zoomed,) = _run(ctx, "BilinearSampler", {}, [_DOC_DATA, grid])
    expected = [[0, 0, 0, 0], [0, 3.5, 6.5, 0], [0, 1.25, 2.5, 0], [0, 0, 0, 0]]
    np.testing.assert_allclose(zoomed[0, 0], expected, atol=1e-5)
    flow = np.concatenate([np.ones((1, 1, 4, 4)), np.zeros((1, 1, 4, 4))], axis=1)
    (grid,) = _run(ctx, "GridGenerator", {"transform_type": "warp"}, [flow.astype(np.float32)])
    (shifted,) = _run(ctx, "BilinearSampler", {}, [_DOC_DATA, grid])
    expected = [[4, 3, 6, 0], [8, 8, 9, 0], [4, 1, 5, 0], [0, 1, 3, 0]]
    np.testing.assert_allclose(shifted[0, 0], expected, atol=1e-5)


def test_bilinear_sampler_reference(ctx):
    rng = np.random.default_rng(1)
    data, grid = rng.standard_normal((2, 3, 4, 5)), rng.uniform(-1.3, 1.3, (2, 2, 3, 2))
    (out,) = _run(ctx, "BilinearSampler", {}, [data, grid])
    np.testing.assert_allclose(out, _bilinear_reference(data, grid), rtol=1e-12, atol=1e-12)


def test_spatial_transformer_is_grid_generator_then_sampler(ctx):
    rng = np.random.default_rng(2)
    data, loc = rng.standard_normal((2, 2, 5, 4)), rng.uniform(-1, 1, (2, 6))
    attrs = {"target_shape": "(3, 4)", "transform_type": "affine", "sampler_type": "bilinear"}
    (out,) = _run(ctx, "SpatialTransformer", {**attrs, "cudnn_off": "True"}, [data, loc])
    ys, xs = np.meshgrid(np.linspace(-1, 1, 3), np.linspace(-1, 1, 4), indexing="ij")
    target = np.stack([xs.ravel(), ys.ravel(), np.ones(12)])
    grid = (loc.reshape(2, 2, 3) @ target).reshape(2, 2, 3, 4)
    np.testing.assert_allclose(out, _bilinear_reference(data, grid), rtol=1e-12, atol=1e-12)


def test_bilinear_sampler_numeric_gradient(ctx):
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal((2, 2, 4, 3)), rng.uniform(-1.2, 1.2, (2, 2, 3, 3))]
    check_numeric_gradient("BilinearSampler", {}, inputs, ctx, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "attrs, shape",
    [
        ({"transform_type": "affine", "target_shape": "(3, 4)"}, (2, 6)),
        ({"transform_type": "warp"}, (2, 2, 3, 4)),
    ],
)
def test_grid_generator_numeric_gradient(attrs, shape, ctx):
    inputs = [np.random.default_rng(4).standard_normal(shape)]
    check_numeric_gradient("GridGenerator", attrs, inputs, ctx)


def test_spatial_transformer_numeric_gradient(ctx):
    rng = np.random.default_rng(5)
    loc = np.array([[0.8, 0.15, 0.1, -0.1, 0.9, 0.05], [1.1, -0.2, 0.0, 0.3, 0.7, -0.1]])
    inputs = [rng.standard_normal((2, 2, 4, 5)), loc + rng.uniform(-0.05, 0.05, loc.shape)]
    attrs = {"target_shape": "(3, 3)", "transform_type": "affine", "sampler_type": "bilinear"}
    check_numeric_gradient("SpatialTransformer", attrs, inputs, ctx, rtol=1e-5, atol=1e-7)


def test_spatial_ops_names_and_hidden_outputs():
    expected = {
        "BilinearSampler": ({}, ("data", "grid"), 1),
        "GridGenerator": ({"transform_type": "warp"}, ("data",), 1),
        "SpatialTransformer": (
            {"transform_type": "affine", "sampler_type": "bilinear"},
            ("data", "loc"),
            2,
        ),
        "ROIPooling": ({"pooled_size": "(2, 2)", "spatial_scale": "1"}, ("data", "rois"), 1),
        "Correlation": ({}, ("data1", "data2"), 2),
    }
    for name, (attrs, arguments, hidden) in expected.items():
        op = opdef(name)
        params = op.parse(attrs)
        assert op.arguments(params) == arguments and op.outputs(params) == ("output",)
        assert op.num_hidden(params) == hidden


def test_spatial_shape_inference():
    assert infer("BilinearSampler", {}, [(2, 3, 5, 6), (2, 2, 4, 7)])[1] == [(2, 3, 4, 7)]
    assert infer("BilinearSampler", {}, [None, (2, 2, 4, 7)])[1] == [(2, 0, 4, 7)]
    attrs = {"transform_type": "affine", "target_shape": "(3, 5)"}
    assert infer("GridGenerator", attrs, [(4, 6)])[1] == [(4, 2, 3, 5)]
    assert infer("GridGenerator", {"transform_type": "warp"}, [(1, 2, 3, 4)])[1] == [(1, 2, 3, 4)]
    st = {"transform_type": "affine", "sampler_type": "bilinear", "target_shape": "(2, 3)"}
    assert infer("SpatialTransformer", st, [(2, 4, 6, 6), (2, 6)])[1] == [(2, 4, 2, 3)]


@pytest.mark.parametrize(
    "name, attrs, shapes, argument",
    [
        ("BilinearSampler", {}, [(2, 3, 5, 6), (2, 3, 4, 4)], "grid"),
        ("BilinearSampler", {}, [(2, 3, 5, 6), (3, 2, 4, 4)], "grid"),
        ("BilinearSampler", {}, [(3, 5, 6), (2, 2, 4, 4)], "data"),
        ("GridGenerator", {"transform_type": "affine", "target_shape": "(2, 2)"}, [(2, 5)], "data"),
        ("GridGenerator", {"transform_type": "affine"}, [(2, 6)], "data"),
        ("GridGenerator", {"transform_type": "warp"}, [(2, 3, 4, 4)], "data"),
        (
            "SpatialTransformer",
            {"transform_type": "affine", "sampler_type": "bilinear", "target_shape": "(2, 2)"},
            [(2, 3, 4, 4), (2, 4)],
            "loc",
        ),
        (
            "ROIPooling",
            {"pooled_size": "(2, 2)", "spatial_scale": "1"},
            [(1, 3, 8, 8), (4, 4)],
            "rois",
        ),
        (
            "ROIPooling",
            {"pooled_size": "(2, 2)", "spatial_scale": "1"},
            [(3, 8, 8), (4, 5)],
            "data",
        ),
        ("Correlation", {}, [(1, 3, 8, 8), (1, 3, 8, 9)], "data2"),
        ("Correlation", {"max_displacement": "4"}, [(1, 3, 8, 8), (1, 3, 8, 8)], "data1"),
    ],
)
def test_spatial_bad_shapes_name_the_argument(name, attrs, shapes, argument):
    with pytest.raises(ShapeError, match=f"argument '{argument}'"):
        infer(name, attrs, shapes)


# -- ROIPooling ------------------------------------------------------------------

_ROI_DATA = np.arange(48, dtype=np.float32).reshape(1, 1, 8, 6)


@pytest.mark.parametrize(
    "scale, expected", [("1.0", [[14, 16], [26, 28]]), ("0.7", [[7, 9], [19, 21]])]
)
def test_roi_pooling_matches_mxnet_doc_example(scale, expected, ctx):
    rois = np.array([[0, 0, 0, 4, 4]], np.float32)
    (out,) = _run(
        ctx, "ROIPooling", {"pooled_size": "(2, 2)", "spatial_scale": scale}, [_ROI_DATA, rois]
    )
    np.testing.assert_array_equal(out[0, 0], expected)


def test_roi_pooling_invalid_batch_gives_zeros_and_no_gradient(ctx):
    op = opdef("ROIPooling")
    params = op.parse({"pooled_size": "(2, 2)", "spatial_scale": "1"})
    rois = np.array([[1, 0, 0, 3, 3], [0, 0, 0, 3, 3]], np.float64)
    data = np.random.default_rng(6).standard_normal((1, 2, 4, 4))
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    dev = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in (data, rois)]
    outs, saved = op.forward(op_ctx, params, dev, [])
    out = np.asarray(ctx.backend.to_host(outs[0]))
    np.testing.assert_array_equal(out[0], 0)
    blocks = data[0].reshape(2, 2, 2, 2, 2).max(axis=(2, 4))
    np.testing.assert_array_equal(out[1], blocks)
    head = ctx.backend.asarray(np.ones((2, 2, 2, 2)), np.float64, ctx.device_id)
    grads = op.backward(op_ctx, params, saved, [head], [True, True])
    grad = np.asarray(ctx.backend.to_host(grads[0]))
    assert grad.sum() == 8 and set(np.unique(grad)) == {0.0, 1.0}
    np.testing.assert_array_equal(np.asarray(ctx.backend.to_host(grads[1])), 0)


def test_roi_pooling_numeric_gradient(ctx):
    data = np.random.default_rng(7).permutation(2 * 2 * 6 * 6).reshape(2, 2, 6, 6) / 10.0
    rois = np.array([[0, 0, 0, 5, 5], [1, 1.2, 0.4, 4.6, 3.3], [1, 2, 2, 2, 2]])
    attrs = {"pooled_size": "(2, 3)", "spatial_scale": "1"}
    check_numeric_gradient("ROIPooling", attrs, [data, rois], ctx, grad_args=[0], eps=1e-4)


def test_roi_pooling_params_validated():
    from rebind.ops.params import ParamError

    with pytest.raises(ParamError, match="pooled_size"):
        opdef("ROIPooling").parse({"pooled_size": "(2, 0)", "spatial_scale": "1"})
    with pytest.raises(ParamError, match="spatial_scale"):
        opdef("ROIPooling").parse({"pooled_size": "(2, 2)", "spatial_scale": "2"})


# -- Correlation -----------------------------------------------------------------

_CORRELATION_SETTINGS = [
    (1, 1, 1, 1, 0, True),
    (3, 2, 2, 1, 2, True),
    (1, 2, 1, 2, 1, False),
    (3, 1, 1, 1, 1, False),
]


@pytest.mark.parametrize("kernel, disp, stride1, stride2, pad, multiply", _CORRELATION_SETTINGS)
def test_correlation_reference(kernel, disp, stride1, stride2, pad, multiply, ctx):
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((2, 3, 7, 6)), rng.standard_normal((2, 3, 7, 6))
    attrs = {
        "kernel_size": kernel,
        "max_displacement": disp,
        "stride1": stride1,
        "stride2": stride2,
        "pad_size": pad,
        "is_multiply": multiply,
    }
    (out,) = _run(ctx, "Correlation", attrs, [a, b])
    expected = _correlation_reference(a, b, kernel, disp, stride1, stride2, pad, multiply)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    _, out_shapes, _ = infer("Correlation", attrs, [a.shape, b.shape])
    assert out_shapes == [expected.shape]


@pytest.mark.parametrize("kernel, disp, stride1, stride2, pad, multiply", _CORRELATION_SETTINGS)
def test_correlation_numeric_gradient(kernel, disp, stride1, stride2, pad, multiply, ctx):
    rng = np.random.default_rng(9)
    inputs = [rng.standard_normal((1, 2, 6, 5)), rng.standard_normal((1, 2, 6, 5))]
    attrs = {
        "kernel_size": str(kernel),
        "max_displacement": str(disp),
        "stride1": str(stride1),
        "stride2": str(stride2),
        "pad_size": str(pad),
        "is_multiply": str(multiply),
    }
    check_numeric_gradient("Correlation", attrs, inputs, ctx)


def test_correlation_even_kernel_rejected(ctx):
    a = np.zeros((1, 1, 6, 6), np.float32)
    with pytest.raises(ValueError, match="odd"):
        _run(ctx, "Correlation", {"kernel_size": "2"}, [a, a])
