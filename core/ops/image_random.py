"""MXNet's random image augmenters: ``_image_random_*`` on one (H, W, 1 or 3) image.

Each draws its factor from the random stream of the device it runs on (seeded
by ``mx.random.seed``), so the draws differ from MXNet's while the
distributions are MXNet's: a fair coin for the flips, U(min_factor,
max_factor) for brightness, contrast, saturation and hue, N(0, alpha_std)
per channel for lighting, and for color jitter a random order of the four
adjustments with factors 1 + U(-x, x) (hue: U(-hue, hue)).

Arithmetic is MXNet's: float32, then stored in the image's type (uint8
clipped to [0, 255]). rebind's saturation mixes each pixel with its true gray
value (0.299 R + 0.587 G + 0.114 B); MXNet 1.9.1's loop keeps only 0.114 B.
"""

import attrs
import numpy as np

from .base import OpDef
from .image_ops import flip, image_shape, lighting_shift, saturate
from .params import non_negative, param

__all__ = ["OPS"]

_GRAY = np.array([0.299, 0.587, 0.114], np.float32)


def _uniform(ctx, low, high):
    drawn = ctx.backend.uniform(low, high, (), "float32", ctx.device_id)
    return np.float32(ctx.backend.to_host(drawn))


# -- the adjustments: (image as float32, factor) -> float32, and their gradients ------------


def _brightness(xp, image, alpha):
    return image * alpha


def _gray_mean(xp, image):
    if image.shape[2] == 1:
        return image.sum() / np.float32(image.shape[0] * image.shape[1])
    return (image * xp.asarray(_GRAY)).sum() / np.float32(image.shape[0] * image.shape[1])


def _contrast(xp, image, alpha):
    return image * alpha + (1 - alpha) * _gray_mean(xp, image)


def _saturation(xp, image, alpha):
    if image.shape[2] == 1:
        return image
    gray = (image * xp.asarray(_GRAY)).sum(axis=2, keepdims=True)
    return gray * (1 - alpha) + image * alpha


def _hls(xp, rgb):
    """MXNet's RGB2HLSConvert on [0, 1] values: hue in degrees, lightness, saturation."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    high, low = rgb.max(axis=2), rgb.min(axis=2)
    diff, light = high - low, (high + low) * np.float32(0.5)
    colored = diff > np.finfo(np.float32).eps
    one = np.float32(1)
    sat = xp.where(
        light < 0.5,
        diff / xp.where(colored, high + low, one),
        diff / xp.where(colored, 2 - high - low, one),
    )
    scale = np.float32(60) / xp.where(colored, diff, one)
    hue = xp.where(
        high == r,
        (g - b) * scale,
        xp.where(high == g, (b - r) * scale + 120, (r - g) * scale + 240),
    )
    hue = hue + (hue < 0) * np.float32(360)
    return xp.where(colored, hue, 0), light, xp.where(colored, sat, 0), colored


# MXNet's c_HlsSectorData: which of (p2, p1, falling, rising) are b, g, r in each sector
_SECTORS = np.array([[1, 3, 0], [1, 0, 2], [3, 0, 1], [0, 2, 1], [0, 1, 3], [2, 1, 0]])


def _hue(xp, image, alpha):
    """MXNet's hue rotation by ``alpha`` turns, through HLS."""
    if image.shape[2] == 1:
        return image
    hue, light, sat, colored = _hls(xp, image / np.float32(255.0))
    hue = ((hue + np.float32(alpha) * np.float32(360)) * np.float32(1.0 / 60.0)) % 6
    p2 = xp.where(light <= 0.5, light * (1 + sat), light + sat - light * sat)
    p1 = 2 * light - p2
    sector = xp.minimum(xp.floor(hue), 5).astype(np.int64)  # % 6 may round up to 6.0
    frac = hue - sector
    table = xp.stack([p2, p1, p1 + (p2 - p1) * (1 - frac), p1 + (p2 - p1) * frac], axis=-1)
    picks = xp.asarray(_SECTORS)[sector][..., ::-1]  # (r, g, b)
    out = xp.take_along_axis(table, picks, axis=-1)
    out = xp.where((colored & (sat != 0))[..., None], out, light[..., None])
    return (out * np.float32(255.0)).astype(np.float32)


def _brightness_grad(xp, image, alpha, grad):
    return grad * alpha


def _contrast_grad(xp, image, alpha, grad):
    weights = xp.asarray(_GRAY) if image.shape[2] == 3 else xp.ones(1, np.float32)
    spread = (1 - alpha) * grad.sum() / np.float32(image.shape[0] * image.shape[1])
    return grad * alpha + spread * weights


def _saturation_grad(xp, image, alpha, grad):
    if image.shape[2] == 1:
        return grad
    return grad * alpha + (1 - alpha) * grad.sum(axis=2, keepdims=True) * xp.asarray(_GRAY)


ADJUSTMENTS = {  # name -> (forward, gradient or None)
    "brightness": (_brightness, _brightness_grad),
    "contrast": (_contrast, _contrast_grad),
    "saturation": (_saturation, _saturation_grad),
    "hue": (_hue, None),
}


# -- operators --------------------------------------------------------------------------------


@attrs.frozen
class RandomEnhanceParams:
    min_factor: float = param("float", validator=non_negative)
    max_factor: float = param("float", validator=non_negative)


def _enhance_forward(name):
    adjust = ADJUSTMENTS[name][0]

    def forward(ctx, p, inputs, aux):
        (data,) = inputs
        alpha = _uniform(ctx, p.min_factor, p.max_factor)
        out = adjust(ctx.xp, data.astype(np.float32), alpha)
        return [saturate(out, data.dtype)], (data, alpha)

    return forward


def _enhance_backward(name):
    gradient = ADJUSTMENTS[name][1]

    def backward(ctx, p, saved, out_grads, need_grad):
        if not need_grad[0]:
            return [None]
        if gradient is None:
            raise NotImplementedError(
                f"_image_random_{name} has no gradient in rebind (MXNet's passes the output "
                "gradient through unchanged, which is wrong); bind its input with grad_req='null'"
            )
        data, alpha = saved
        grad = out_grads[0]
        return [gradient(ctx.xp, data, alpha, grad.astype(np.float32)).astype(grad.dtype)]

    return backward


def _random_flip_forward(axis):
    def forward(ctx, p, inputs, aux):
        (data,) = inputs
        flipped = bool(_uniform(ctx, 0.0, 1.0) >= 0.5)
        return [flip(ctx.xp, data, axis) if flipped else ctx.xp.array(data)], flipped

    return forward


def _random_flip_backward(axis):
    def backward(ctx, p, flipped, out_grads, need_grad):
        if not need_grad[0]:
            return [None]
        return [flip(ctx.xp, out_grads[0], axis) if flipped else ctx.xp.array(out_grads[0])]

    return backward


@attrs.frozen
class RandomColorJitterParams:
    brightness: float = param("float")
    contrast: float = param("float")
    saturation: float = param("float")
    hue: float = param("float")


def _color_jitter_forward(ctx, p, inputs, aux):
    (data,) = inputs
    order = ctx.backend.to_host(ctx.backend.permutation(4, ctx.device_id))
    image = data  # MXNet stores (and clips) after each adjustment
    for index in np.asarray(order).tolist():
        name = ("brightness", "contrast", "saturation", "hue")[index]
        amount = getattr(p, name)
        if amount <= 0:
            continue
        alpha = _uniform(ctx, -amount, amount) + (np.float32(1) if name != "hue" else 0)
        image = saturate(ADJUSTMENTS[name][0](ctx.xp, image.astype(np.float32), alpha), data.dtype)
    return [ctx.xp.array(image)], None


def _color_jitter_backward(ctx, p, saved, out_grads, need_grad):
    raise NotImplementedError(
        "_image_random_color_jitter has no gradient in rebind (MXNet's passes the output "
        "gradient through unchanged, which is wrong); bind its input with grad_req='null'"
    )


@attrs.frozen
class RandomLightingParams:
    alpha_std: float = param("float", 0.05)


def _random_lighting_forward(ctx, p, inputs, aux):
    (data,) = inputs
    drawn = ctx.backend.normal(0.0, p.alpha_std, (3,), "float32", ctx.device_id)
    alpha = np.asarray(ctx.backend.to_host(drawn), np.float32)
    return [lighting_shift(ctx.xp, data, tuple(alpha), "_image_random_lighting")], None


def _identity_backward(ctx, p, saved, out_grads, need_grad):
    return [ctx.xp.array(out_grads[0]) if need_grad[0] else None]


def _op(name, forward, backward, params=None, doc=""):
    extra = {"params": params} if params is not None else {}
    return OpDef(
        name=name, forward=forward, backward=backward, infer_shape=image_shape, doc=doc, **extra
    )


OPS = [
    _op(
        "_image_random_flip_left_right",
        _random_flip_forward(1),
        _random_flip_backward(1),
        doc="The (H, W, C) image mirrored left-right with probability 1/2.",
    ),
    _op(
        "_image_random_flip_top_bottom",
        _random_flip_forward(0),
        _random_flip_backward(0),
        doc="The (H, W, C) image mirrored top-bottom with probability 1/2.",
    ),
    *(
        _op(
            f"_image_random_{name}",
            _enhance_forward(name),
            _enhance_backward(name),
            RandomEnhanceParams,
            f"The image's {name} scaled by a factor drawn from U(min_factor, max_factor).",
        )
        for name in ADJUSTMENTS
    ),
    _op(
        "_image_random_color_jitter",
        _color_jitter_forward,
        _color_jitter_backward,
        RandomColorJitterParams,
        "Brightness, contrast, saturation and hue jittered in a random order.",
    ),
    _op(
        "_image_random_lighting",
        _random_lighting_forward,
        _identity_backward,
        RandomLightingParams,
        "AlexNet-style PCA lighting noise with weights drawn from N(0, alpha_std).",
    ),
]
