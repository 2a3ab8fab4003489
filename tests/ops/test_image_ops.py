"""MXNet's image operators (``_image_*``) and the ``mx.nd.image`` / ``mx.sym.image`` modules.

Values come from MXNet 1.9.1 (the golden cases of tests/ops/cases/image.py)
or from definitions; the random augmenters are checked by their
distributions. Where MXNet is wrong (odd flips, unwritten outputs, copied
gradients, its saturation's gray value) the expected values are by definition.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

IMAGE_OPS = [
    name
    for name in (
        "to_tensor",
        "normalize",
        "flip_left_right",
        "flip_top_bottom",
        "random_flip_left_right",
        "random_flip_top_bottom",
        "random_brightness",
        "random_contrast",
        "random_saturation",
        "random_hue",
        "random_color_jitter",
        "adjust_lighting",
        "random_lighting",
        "crop",
        "resize",
    )
]
GRAY = np.array([0.299, 0.587, 0.114])


def _run(ctx, op_name, data, attrs=None, is_train=True):
    """(host output, saved) of one forward of ``op_name`` on host array ``data``."""
    op = opdef(op_name)
    params = op.parse(attrs or {})
    array = ctx.backend.asarray(data, data.dtype, ctx.device_id)
    outs, saved = op.forward(OpContext(is_train, ctx.backend, ctx.device_id), params, [array], [])
    return np.asarray(ctx.backend.to_host(outs[0])), saved


def _backward(ctx, op_name, attrs, saved, grad):
    op = opdef(op_name)
    head = ctx.backend.asarray(grad, grad.dtype, ctx.device_id)
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    (result,) = op.backward(op_ctx, op.parse(attrs or {}), saved, [head], [True])
    return np.asarray(ctx.backend.to_host(result))


def _image(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(0, 255, shape).astype(dtype)


@pytest.mark.parametrize("case_id", case_ids(*(f"_image_{n}" for n in IMAGE_OPS)))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def test_every_image_operator_has_golden_cases():
    assert len(case_ids(*(f"_image_{n}" for n in IMAGE_OPS))) >= len(IMAGE_OPS)
    for name in IMAGE_OPS:
        assert case_ids(f"_image_{name}"), name


@pytest.mark.parametrize("name", IMAGE_OPS)
def test_namespaces_offer_the_operators_under_short_names(name):
    assert mx.nd.image.__getattr__(name).__name__ == name
    assert mx.sym.image.__getattr__(name).__name__ == name
    assert name in dir(mx.nd.image) and name in dir(mx.sym.image)


def test_sym_image_composes_the_operator():
    node = mx.sym.image.crop(mx.sym.var("x"), x=0, y=1, width=2, height=3, name="c")
    assert node.tojson().count('"op": "_image_crop"') == 1
    assert node.list_arguments() == ["x"]


def test_namespaces_have_only_image_operators():
    with pytest.raises(AttributeError, match="relu"):
        mx.nd.image.relu  # noqa: B018 - the attribute access is the test
    assert "_image_crop" not in dir(mx.nd._internal)


# -- deterministic operators by definition -------------------------------------------------


def test_mxnet_test_image_normalize_on_an_executor(ctx):
    data = mx.sym.var("data")
    norm = mx.sym.image.normalize(data=data, mean=(0, 1, 2), std=(3, 2, 1))
    x = _image((2, 3, 4, 4), dtype=np.float32) / 255
    grad = mx.nd.zeros(x.shape, ctx=ctx)
    exe = norm.bind(ctx, {"data": mx.nd.array(x, ctx=ctx)}, args_grad={"data": grad})
    out = exe.forward(is_train=True)[0].asnumpy()
    expected = (x - np.array([0, 1, 2]).reshape(1, 3, 1, 1)) / np.array([3, 2, 1]).reshape(
        1, 3, 1, 1
    )
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    exe.backward(mx.nd.ones(x.shape, ctx=ctx))
    np.testing.assert_allclose(grad.asnumpy()[0, :, 0, 0], [1 / 3, 1 / 2, 1], rtol=1e-6)


def test_normalize_default_mean_is_refused_as_in_mxnet():
    """MXNet's defaults have 4 values, which fit no 1- or 3-channel tensor."""
    with pytest.raises(ParamError, match="invalid mean .* 1 or 3 elements"):
        infer("_image_normalize", {}, [(3, 4, 4)])
    with pytest.raises(ParamError, match="invalid std"):
        infer("_image_normalize", {"mean": (1, 2, 3)}, [(2, 3, 4, 4)])


@pytest.mark.parametrize(
    ("op_name", "attrs", "shape", "message"),
    [
        ("_image_to_tensor", {}, (4, 4), "to_tensor takes images"),
        ("_image_normalize", {"mean": 0}, (2, 4, 4), "1 or 3 elements"),
        ("_image_flip_left_right", {}, (1, 2, 2, 3), "3-D"),
        ("_image_random_hue", {"min_factor": 0, "max_factor": 1}, (2, 2, 4), "1 or 3 channels"),
        ("_image_crop", {"x": 0, "y": 0, "width": 2, "height": 2}, (4, 4, 2), "crop takes"),
        ("_image_resize", {"size": 2}, (4, 4), "resize takes images"),
    ],
)
def test_shape_errors_name_the_argument(op_name, attrs, shape, message):
    with pytest.raises(ShapeError, match=message):
        infer(op_name, attrs, [shape])


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"x": 3, "y": 0, "width": 2, "height": 2}, "x \\+ width = 5 exceeds the input's 4"),
        ({"x": 0, "y": 3, "width": 2, "height": 2}, "y \\+ height = 5 exceeds"),
        ({"x": -1, "y": 0, "width": 2, "height": 2}, "non-negative"),
        ({"x": 0, "y": 0, "width": 0, "height": 2}, "must be positive"),
    ],
)
def test_crop_window_must_fit(attrs, message):
    with pytest.raises(ParamError, match=message):
        infer("_image_crop", attrs, [(4, 4, 3)])


def test_shapes_infer_from_partial_and_known_inputs():
    assert infer("_image_to_tensor", {}, [(2, 4, 5, 3)])[1] == [(2, 3, 4, 5)]
    assert infer("_image_to_tensor", {}, [None])[1] == [None]
    assert infer("_image_resize", {"size": 3, "keep_ratio": True}, [(9, 6, 3)])[1] == [(4, 3, 3)]
    crop = {"x": 1, "y": 1, "width": 2, "height": 3}
    assert infer("_image_crop", crop, [(2, 5, 5, 1)])[1] == [(2, 3, 2, 1)]


@pytest.mark.parametrize(("op_name", "axis"), [("flip_left_right", 1), ("flip_top_bottom", 0)])
def test_odd_flips_and_their_gradients_are_right(ctx, op_name, axis):
    """MXNet leaves the middle unwritten and passes the gradient unflipped."""
    data = _image((5, 7, 3))
    out, saved = _run(ctx, f"_image_{op_name}", data)
    np.testing.assert_array_equal(out, np.flip(data, axis))
    grad = _image((5, 7, 3), seed=1)
    back = _backward(ctx, f"_image_{op_name}", {}, saved, grad)
    np.testing.assert_array_equal(back, np.flip(grad, axis))


def test_to_tensor_gradient_is_the_transposed_scaled_head(ctx):
    """MXNet's gradient (a copy of the head) fails on the shape; rebind's is the derivative."""
    check_numeric_gradient(
        "_image_to_tensor", {}, [_image((3, 4, 2))], ctx, eps=1.0, rtol=1e-3, atol=1e-6
    )
    check_numeric_gradient(
        "_image_to_tensor", {}, [_image((2, 3, 4, 3))], ctx, eps=1.0, rtol=1e-3, atol=1e-6
    )


@pytest.mark.parametrize(
    ("op_name", "attrs", "shape", "tolerance"),
    [
        ("_image_normalize", {"mean": (1, 2, 3), "std": (2, 3, 4)}, (2, 3, 3, 2), 1e-6),
        ("_image_crop", {"x": 1, "y": 0, "width": 2, "height": 3}, (2, 4, 4, 3), 1e-6),
        # computed in float32, as MXNet's, whatever the input's type: a looser bound
        ("_image_adjust_lighting", {"alpha": (0.1, 0.2, 0.3)}, (3, 3, 3), 1e-3),
    ],
)
def test_gradients_match_finite_differences(ctx, op_name, attrs, shape, tolerance):
    data = [_image(shape)]
    check_numeric_gradient(op_name, attrs, data, ctx, eps=0.5, rtol=tolerance, atol=tolerance)


def test_one_channel_images_pass_lighting_and_hue_unchanged(ctx):
    """MXNet leaves the output unwritten for them; the adjustments do not apply to gray."""
    data = _image((3, 4, 1))
    out, _ = _run(ctx, "_image_adjust_lighting", data, {"alpha": (1, 2, 3)})
    np.testing.assert_array_equal(out, data)
    out, _ = _run(ctx, "_image_random_hue", data, {"min_factor": 0.2, "max_factor": 0.4})
    np.testing.assert_array_equal(out, data)


def test_adjust_lighting_needs_three_alphas_for_rgb(ctx):
    with pytest.raises(ParamError, match="alpha must have 3 values"):
        _run(ctx, "_image_adjust_lighting", _image((2, 2, 3)), {"alpha": (1, 2)})


def test_resize_refuses_types_opencv_does_not_get(ctx):
    with pytest.raises(ParamError, match="cast the image first"):
        _run(ctx, "_image_resize", _image((4, 4, 3)).astype(np.float16), {"size": 2})


def test_resize_has_no_gradient(ctx):
    with pytest.raises(NotImplementedError, match="BlockGrad"):
        _backward(ctx, "_image_resize", {"size": 2}, None, _image((2, 2, 3)))


# -- the random augmenters ----------------------------------------------------------------


@pytest.mark.parametrize(("op_name", "axis"), [("flip_left_right", 1), ("flip_top_bottom", 0)])
def test_random_flips_are_fair_coins_with_matching_gradients(ctx, op_name, axis):
    data = _image((2, 4, 3))
    flips = 0
    for _ in range(400):
        out, saved = _run(ctx, f"_image_random_{op_name}", data)
        flipped = np.array_equal(out, np.flip(data, axis))
        assert flipped or np.array_equal(out, data)
        flips += flipped
        back = _backward(ctx, f"_image_random_{op_name}", {}, saved, out)
        np.testing.assert_array_equal(back, data)  # the flipped head flips back
    assert 140 < flips < 260  # 400 fair coins: within 6 standard deviations


def _factors(ctx, op_name, attrs, count=300):
    """The factor each call drew, read off a constant image: brightness's out / in."""
    data = np.full((2, 2, 3), 100.0, np.float32)
    return np.array([_run(ctx, op_name, data, attrs)[0][0, 0, 0] / 100.0 for _ in range(count)])


def test_random_brightness_draws_uniform_factors(ctx):
    factors = _factors(ctx, "_image_random_brightness", {"min_factor": 0.5, "max_factor": 1.5})
    assert factors.min() >= 0.5 and factors.max() <= 1.5
    assert abs(factors.mean() - 1.0) < 0.06 and abs(factors.std() - 1 / np.sqrt(12)) < 0.04


def test_random_lighting_draws_normal_alphas(ctx):
    data = np.full((1, 1, 3), 100.0, np.float32)
    shifts = np.array(
        [
            _run(ctx, "_image_random_lighting", data, {"alpha_std": 0.1})[0][0, 0] - 100
            for _ in range(400)
        ]
    )
    # the red shift is eig[0] . alpha: its spread is 0.1 * |eig row 0|
    eig_row = np.array([55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009])
    assert abs(shifts[:, 0].mean()) < 0.5
    assert abs(shifts[:, 0].std() / (0.1 * np.linalg.norm(eig_row)) - 1) < 0.15


def test_saturation_mixes_with_the_true_gray(ctx):
    """MXNet 1.9.1 keeps only 0.114 * B as the gray value (a loop bug); rebind the weighted sum."""
    data = _image((3, 4, 3))
    attrs = {"min_factor": 0.25, "max_factor": 0.25}
    out, _ = _run(ctx, "_image_random_saturation", data, attrs)
    gray = (data.astype(np.float64) * GRAY).sum(axis=2, keepdims=True)
    np.testing.assert_allclose(out, 0.75 * gray + 0.25 * data, rtol=1e-5)


@pytest.mark.parametrize("name", ["brightness", "contrast", "saturation"])
def test_enhance_gradients_match_finite_differences(ctx, name):
    attrs = {"min_factor": 0.6, "max_factor": 0.6}
    check_numeric_gradient(
        f"_image_random_{name}", attrs, [_image((3, 4, 3))], ctx, eps=0.5, rtol=1e-3, atol=1e-3
    )


def test_hue_and_color_jitter_refuse_a_gradient(ctx):
    attrs = {"min_factor": 0.1, "max_factor": 0.1}
    _, saved = _run(ctx, "_image_random_hue", _image((2, 2, 3)), attrs)
    with pytest.raises(NotImplementedError, match="grad_req='null'"):
        _backward(ctx, "_image_random_hue", attrs, saved, _image((2, 2, 3)))
    with pytest.raises(NotImplementedError, match="color_jitter has no gradient"):
        jitter = {"brightness": 0.1, "contrast": 0, "saturation": 0, "hue": 0}
        _backward(ctx, "_image_random_color_jitter", jitter, None, _image((2, 2, 3)))


def test_color_jitter_without_jitter_is_the_image(ctx):
    """MXNet leaves the output unwritten when every amount is 0."""
    data = _image((3, 3, 3))
    zero = {"brightness": 0, "contrast": 0, "saturation": 0, "hue": 0}
    np.testing.assert_array_equal(_run(ctx, "_image_random_color_jitter", data, zero)[0], data)


def test_color_jitter_brightness_alone_draws_one_plus_uniform(ctx):
    attrs = {"brightness": 0.3, "contrast": 0, "saturation": 0, "hue": 0}
    factors = _factors(ctx, "_image_random_color_jitter", attrs)
    assert factors.min() >= 0.7 and factors.max() <= 1.3 and abs(factors.mean() - 1) < 0.04


def test_uint8_results_saturate(ctx):
    data = np.array([[[200, 10, 255]]], np.uint8)
    out, _ = _run(ctx, "_image_random_brightness", data, {"min_factor": 2, "max_factor": 2})
    np.testing.assert_array_equal(out, [[[255, 20, 255]]])


def test_random_parameters_are_validated():
    with pytest.raises(ParamError, match="min_factor must be non-negative"):
        opdef("_image_random_brightness").parse({"min_factor": "-1", "max_factor": "1"})


def test_two_equal_random_nodes_draw_separately(ctx):
    """The executor's common-expression pass must not merge random image nodes."""
    x = mx.sym.var("x")
    first = mx.sym.image.random_brightness(x, min_factor=0.0, max_factor=10.0)
    second = mx.sym.image.random_brightness(x, min_factor=0.0, max_factor=10.0)
    exe = (first - second).bind(ctx, {"x": mx.nd.ones((2, 2, 3), ctx=ctx)})
    assert np.abs(exe.forward()[0].asnumpy()).max() > 0


def test_monitor_names_inputs_as_mxnet(ctx):
    """MXNet registers only to_tensor and normalize with input names; the others show input0."""
    x, y = mx.sym.var("x"), mx.sym.var("y")
    group = mx.sym.Group(
        [
            mx.sym.image.flip_left_right(x, name="f"),
            mx.sym.image.crop(x, x=0, y=0, width=1, height=1, name="c"),
            mx.sym.image.adjust_lighting(x, alpha=(1, 1, 1), name="l"),
            mx.sym.image.to_tensor(x, name="t"),
            mx.sym.image.normalize(y, mean=1, std=1, name="n"),
        ]
    )
    exe = group.simple_bind(ctx, x=(4, 4, 3), y=(3, 4, 4), grad_req="null")
    names = []
    exe.set_monitor_callback(lambda name, _: names.append(name), monitor_all=True)
    exe.forward()
    inputs = {n for n in names if not n.endswith("_output") and n not in ("x", "y")}
    assert inputs == {"f_input0", "c_input0", "l_input0", "t_data", "n_data"}
