"""AdaptiveAvgPooling2D and BilinearResize2D (mx.contrib)."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

RESIZE_OPS = ("_contrib_AdaptiveAvgPooling2D", "_contrib_BilinearResize2D")


@pytest.mark.parametrize("case_id", case_ids(*RESIZE_OPS))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _run(ctx, name, attrs, inputs):
    op = opdef(name)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(OpContext(True, ctx.backend, ctx.device_id), op.parse(attrs), arrays, [])
    return [np.asarray(ctx.backend.to_host(o)) for o in outs]


def test_adaptive_pooling_by_definition(ctx):
    data = np.random.default_rng(0).standard_normal((2, 3, 7, 5))
    (out,) = _run(ctx, "_contrib_AdaptiveAvgPooling2D", {"output_size": (3, 2)}, [data])
    for oh in range(3):
        for ow in range(2):
            h0, h1 = (oh * 7) // 3, -((-(oh + 1) * 7) // 3)
            w0, w1 = (ow * 5) // 2, -((-(ow + 1) * 5) // 2)
            np.testing.assert_allclose(out[:, :, oh, ow], data[:, :, h0:h1, w0:w1].mean((2, 3)))


def test_bilinear_corners_are_kept_when_aligned(ctx):
    data = np.random.default_rng(1).standard_normal((1, 2, 4, 5))
    (out,) = _run(ctx, "_contrib_BilinearResize2D", {"height": 7, "width": 9}, [data])
    np.testing.assert_allclose(out[..., ::2, ::2], data)


@pytest.mark.parametrize(
    ("name", "attrs"),
    [
        ("_contrib_AdaptiveAvgPooling2D", {"output_size": (2, 3)}),
        ("_contrib_BilinearResize2D", {"height": 5, "width": 2}),
        ("_contrib_BilinearResize2D", {"height": 3, "width": 7, "align_corners": False}),
    ],
)
def test_numeric_gradients(ctx, name, attrs):
    data = np.random.default_rng(2).standard_normal((1, 2, 4, 5))
    check_numeric_gradient(name, attrs, [data], ctx)


def test_shapes_of_every_mode():
    data = (1, 2, 5, 6)
    modes = {
        "to_even_down": (4, 6),
        "to_even_up": (6, 6),
        "to_odd_down": (5, 5),
        "to_odd_up": (5, 7),
    }
    for mode, size in modes.items():
        assert infer("_contrib_BilinearResize2D", {"mode": mode}, [data])[1] == [(1, 2, *size)]
    odd = {"mode": "odd_scale", "scale_height": 2, "scale_width": 0.5}
    assert infer("_contrib_BilinearResize2D", odd, [data])[1] == [(1, 2, 9, 3)]
    like = infer("_contrib_BilinearResize2D", {"mode": "like"}, [data, (1, 1, 3, 8)])
    assert like[1] == [(1, 2, 3, 8)]
    assert infer("_contrib_AdaptiveAvgPooling2D", {}, [data])[1] == [(1, 2, 1, 1)]


def test_errors_name_op_argument_and_shape():
    with pytest.raises(ShapeError, match=r"_contrib_BilinearResize2D.*'data'.*\(2, 5, 6\).*4-D"):
        infer("_contrib_BilinearResize2D", {}, [(2, 5, 6)])
    with pytest.raises(ShapeError, match=r"'like'.*\(3, 8\)"):
        infer("_contrib_BilinearResize2D", {"mode": "like"}, [(1, 2, 5, 6), (3, 8)])
    with pytest.raises(ShapeError, match="scale_height"):
        infer("_contrib_BilinearResize2D", {"mode": "odd_scale"}, [(1, 2, 5, 6)])
    with pytest.raises(ShapeError, match=r"_contrib_AdaptiveAvgPooling2D.*'data'.*\(5, 6\)"):
        infer("_contrib_AdaptiveAvgPooling2D", {}, [(5, 6)])


def test_like_mode_takes_two_inputs():
    op = opdef("_contrib_BilinearResize2D")
    assert op.arguments(op.parse({"mode": "like"})) == ("data", "like")
    assert op.arguments(op.parse({})) == ("data",)


def test_scale_width_alone_scales_the_width():
    # MXNet 1.9.1 ignores scale_width here (documented difference); the doc says it scales
    out = infer("_contrib_BilinearResize2D", {"scale_width": 2.0, "height": 3}, [(1, 1, 4, 6)])
    assert out[1] == [(1, 1, 3, 12)]
    with pytest.raises(ShapeError, match="give both"):
        infer("_contrib_BilinearResize2D", {"scale_height": 2.0}, [(1, 1, 4, 6)])
