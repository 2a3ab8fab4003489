"""Golden cases: MXNet's image operators (``mx.sym.image.*``, the ``_image_*`` family).

Flips use even widths and heights: on an odd one MXNet leaves the middle row
or column unwritten. Gradients are recorded where MXNet's are right
(normalize, crop, adjust_lighting); to_tensor's fails in MXNet, and the flips'
and resize's are a plain copy of the output gradient (tests/ops/test_image_ops.py
checks rebind's by definition). The random augmenters with min_factor ==
max_factor draw their factor exactly, so their values are compared too;
saturation is left out of that (rebind mixes with the true gray value, see
image_random.py).
"""

from tests.ops.cases import arg, case


def _image(shape, dtype="float32"):
    if dtype == "uint8":
        return arg(shape, dtype, kind="int", low=0, high=256)
    return arg(shape, dtype, low=0.0, high=255.0)


# corners of the RGB cube and grays: hue and lighting edge values (saturated, gray, black)
_EDGE_PIXELS = [
    [[0, 0, 0], [255, 255, 255], [255, 0, 0], [0, 255, 0]],
    [[0, 0, 255], [128, 128, 128], [255, 255, 0], [10, 200, 90]],
]


def _edge_image(dtype):
    return arg((2, 4, 3), dtype, kind="values", values=_EDGE_PIXELS)


def _sym(name):
    return f"image.{name}"


_TO_TENSOR = [
    case(
        f"image_to_tensor_{dtype}_{len(shape)}d",
        "_image_to_tensor",
        {"data": _image(shape, dtype)},
        sym_func=_sym("to_tensor"),
        backward=False,
    )
    for dtype, shape in (("uint8", (4, 5, 3)), ("float32", (2, 3, 4, 1)), ("float64", (3, 2, 3)))
]

_NORMALIZE = [
    case(
        "image_normalize_3d_per_channel",
        "_image_normalize",
        {"data": arg((3, 4, 5))},
        {"mean": (0.1, -0.2, 0.3), "std": (0.5, 2.0, 3.0)},
        sym_func=_sym("normalize"),
    ),
    case(
        "image_normalize_4d_scalar",
        "_image_normalize",
        {"data": arg((2, 3, 3, 2), "float64")},
        {"mean": 0.5, "std": 0.25},
        sym_func=_sym("normalize"),
    ),
    case(
        "image_normalize_one_channel",
        "_image_normalize",
        {"data": arg((2, 1, 3, 3))},
        {"mean": (1.0,), "std": (3.0,)},
        sym_func=_sym("normalize"),
    ),
    case(
        "image_normalize_uint8",
        "_image_normalize",
        {"data": arg((3, 2, 4), "uint8", kind="int", low=100, high=256)},
        {"mean": (10, 20, 30), "std": (1.5, 2.0, 3.0)},
        sym_func=_sym("normalize"),
    ),
]

_FLIPS = [
    case(
        f"image_{name}_{dtype}",
        f"_image_{name}",
        {"data": _image((4, 6, channels), dtype)},
        sym_func=_sym(name),
        backward=False,
    )
    for name in ("flip_left_right", "flip_top_bottom")
    for dtype, channels in (("uint8", 3), ("float32", 1))
]

_LIGHTING = [
    case(
        f"image_adjust_lighting_{dtype}",
        "_image_adjust_lighting",
        {"data": _edge_image(dtype)},
        {"alpha": (0.5, -2.0, 1.0)},
        sym_func=_sym("adjust_lighting"),
    )
    for dtype in ("uint8", "float32")
]

_CROP = [
    case(
        "image_crop_3d",
        "_image_crop",
        {"data": _image((5, 6, 3))},
        {"x": 1, "y": 2, "width": 4, "height": 3},
        sym_func=_sym("crop"),
    ),
    case(
        "image_crop_4d_uint8_whole",
        "_image_crop",
        {"data": _image((2, 3, 4, 1), "uint8")},
        {"x": 0, "y": 0, "width": 4, "height": 3},
        sym_func=_sym("crop"),
    ),
]

_RESIZE = [
    case(
        f"image_resize_{label}",
        "_image_resize",
        {"data": _image(shape, dtype)},
        attrs,
        sym_func=_sym("resize"),
        backward=False,
    )
    for label, shape, dtype, attrs in (
        ("bilinear_uint8", (4, 6, 3), "uint8", {"size": (3, 5)}),
        ("square_float", (5, 4, 3), "float32", {"size": 6}),
        ("keep_ratio_tall", (7, 4, 1), "float32", {"size": 3, "keep_ratio": True}),
        ("keep_ratio_wide_4d", (2, 4, 7, 3), "float64", {"size": 3, "keep_ratio": True}),
        ("nearest_4d", (2, 4, 4, 3), "uint8", {"size": (2, 6), "interp": 0}),
        ("bicubic", (6, 6, 3), "float32", {"size": (4, 3), "interp": 2}),
        ("area", (6, 8, 3), "uint8", {"size": (4, 3), "interp": 3}),
    )
]

# factor drawn from U(f, f) is f: the values are MXNet's to compare
_FIXED_FACTOR = [
    case(
        f"image_random_{name}_fixed_{dtype}",
        f"_image_random_{name}",
        {"data": _edge_image(dtype)},
        {"min_factor": factor, "max_factor": factor},
        sym_func=_sym(f"random_{name}"),
        backward=False,
    )
    for name, factor in (("brightness", 1.7), ("contrast", 0.4), ("hue", 0.3))
    for dtype in ("uint8", "float32")
]

_RANDOM = [
    case(
        f"image_random_{name}",
        f"_image_random_{name}",
        {"data": _image((4, 6, 3))},
        attrs,
        sym_func=_sym(f"random_{name}"),
        backward=False,
        random=True,
    )
    for name, attrs in (
        ("flip_left_right", {}),
        ("flip_top_bottom", {}),
        ("saturation", {"min_factor": 0.2, "max_factor": 1.8}),
        ("brightness", {"min_factor": 0.5, "max_factor": 1.5}),
        ("contrast", {"min_factor": 0.5, "max_factor": 1.5}),
        ("hue", {"min_factor": 0.0, "max_factor": 0.5}),
        ("color_jitter", {"brightness": 0.3, "contrast": 0.3, "saturation": 0.3, "hue": 0.1}),
        ("lighting", {"alpha_std": 0.1}),
    )
]

CASES = [
    *_TO_TENSOR,
    *_NORMALIZE,
    *_FLIPS,
    *_LIGHTING,
    *_CROP,
    *_RESIZE,
    *_FIXED_FACTOR,
    *_RANDOM,
]
