"""MXNet's deterministic image operators (``mx.nd.image`` / ``mx.sym.image``).

``_image_to_tensor``, ``_image_normalize``, ``_image_flip_left_right``,
``_image_flip_top_bottom``, ``_image_adjust_lighting``, ``_image_crop`` and
``_image_resize``, as MXNet 1.9.1's src/operator/image/ defines them: images
are HWC (or NHWC where MXNet allows a batch), tensors CHW / NCHW. The random
augmenters are in ``image_random.py`` and share the helpers here.

Where MXNet leaves the output unwritten (the middle row or column of an odd
flip, a one-channel image given to adjust_lighting) or gives a wrong
gradient (``_copy`` of the output gradient), rebind computes the right value;
README's "Differences from MXNet" lists them.
"""

import attrs
import numpy as np

from .base import OpDef, mismatch
from .params import ParamError, param

__all__ = ["OPS", "image_shape", "saturate", "flip", "lighting_shift"]


# -- shared helpers ------------------------------------------------------------------------


def saturate(values, dtype):
    """float32 ``values`` stored as ``dtype``: uint8 clipped to [0, 255], others cast."""
    if np.dtype(dtype) == np.uint8:
        values = values.clip(0.0, 255.0)
    return values.astype(dtype)


def image_shape(p, in_shapes, out_shapes, aux_shapes):
    """MXNet's ImageShape: one (H, W, 1 or 3) image in, the same shape out."""
    shape = in_shapes[0]
    if shape is None:
        return in_shapes, out_shapes, aux_shapes
    if len(shape) != 3:
        raise mismatch("data", shape, "(height, width, channels)", "an image must be 3-D")
    if shape[2] not in (1, 3, 0):
        raise mismatch("data", shape, "(height, width, 1 or 3)", "1 or 3 channels")
    return in_shapes, [tuple(shape)], aux_shapes


def flip(xp, data, axis):
    """``data`` reversed along ``axis``, as a new contiguous array."""
    return xp.ascontiguousarray(xp.flip(data, axis))


def _flip_backward(axis):
    def backward(ctx, p, saved, out_grads, need_grad):
        return [flip(ctx.xp, out_grads[0], axis) if need_grad[0] else None]

    return backward


def _copy_backward(ctx, p, saved, out_grads, need_grad):
    return [ctx.xp.array(out_grads[0]) if need_grad[0] else None]


# -- _image_to_tensor -----------------------------------------------------------------------


def _to_tensor_shape(p, in_shapes, out_shapes, aux_shapes):
    shape = in_shapes[0]
    if shape is None:
        return in_shapes, out_shapes, aux_shapes
    if len(shape) not in (3, 4):
        raise mismatch("data", shape, "(H, W, C) or (N, H, W, C)", "to_tensor takes images")
    out = (shape[2], shape[0], shape[1]) if len(shape) == 3 else (shape[0], shape[3], *shape[1:3])
    return in_shapes, [out], aux_shapes


def _to_tensor_type(p, in_types, out_types, aux_types):
    return in_types, ["float32"], aux_types


def _channels_first(data):
    return (2, 0, 1) if data.ndim == 3 else (0, 3, 1, 2)


def _to_tensor_forward(ctx, p, inputs, aux):
    (data,) = inputs
    xp = ctx.xp
    if data.dtype == np.float64:  # double / 255.0f is computed in double, then stored
        scaled = (data / 255.0).astype(np.float32)
    else:
        scaled = data.astype(np.float32) / np.float32(255.0)
    moved = xp.ascontiguousarray(xp.transpose(scaled, _channels_first(data)))
    return [moved], data.dtype


def _to_tensor_backward(ctx, p, dtype, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    grad = out_grads[0]
    order = (1, 2, 0) if grad.ndim == 3 else (0, 2, 3, 1)
    back = ctx.xp.transpose(grad.astype(np.float64) / 255.0, order)
    return [ctx.xp.ascontiguousarray(back).astype(dtype)]


# -- _image_normalize ---------------------------------------------------------------------------


@attrs.frozen
class NormalizeParams:
    mean: tuple = param("floats", (0.0, 0.0, 0.0, 0.0))
    std: tuple = param("floats", (1.0, 1.0, 1.0, 1.0))


def _normalize_shape(p, in_shapes, out_shapes, aux_shapes):
    shape = in_shapes[0]
    if shape is None:
        return in_shapes, out_shapes, aux_shapes
    if len(shape) not in (3, 4):
        raise mismatch("data", shape, "(C, H, W) or (N, C, H, W)", "normalize takes tensors")
    channels = shape[0] if len(shape) == 3 else shape[1]
    if channels not in (1, 3, 0):
        raise mismatch("data", shape, "1 or 3 channels", "the channel axis has 1 or 3 elements")
    for name in ("mean", "std"):
        values = getattr(p, name)
        if channels and len(values) not in (1, channels):
            raise ParamError(
                f"_image_normalize: invalid {name} for input with shape {tuple(shape)}: it must "
                f"have 1 or {channels} elements, got {values}; pass {name}=(...) per channel"
            )
    return in_shapes, [tuple(shape)], aux_shapes


def _per_channel(xp, values, data, dtype):
    """``values`` (1 or C floats, as float32) broadcast along data's channel axis."""
    channels = data.shape[0] if data.ndim == 3 else data.shape[1]
    column = np.asarray(values, np.float32).astype(dtype)
    column = np.broadcast_to(column, (channels,)) if column.size == 1 else column
    shape = (channels, 1, 1) if data.ndim == 3 else (1, channels, 1, 1)
    return xp.asarray(column.reshape(shape))


def _normalize_forward(ctx, p, inputs, aux):
    (data,) = inputs
    compute = np.float64 if data.dtype == np.float64 else np.float32
    mean = _per_channel(ctx.xp, p.mean, data, compute)
    std = _per_channel(ctx.xp, p.std, data, compute)
    return [((data.astype(compute) - mean) / std).astype(data.dtype)], data


def _normalize_backward(ctx, p, data, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    # MXNet multiplies by 1.0 / std in double
    inverse = 1.0 / _per_channel(ctx.xp, p.std, data, np.float64)
    return [(out_grads[0].astype(np.float64) * inverse).astype(out_grads[0].dtype)]


# -- _image_adjust_lighting -----------------------------------------------------------------

# AlexNet's PCA of ImageNet's RGB values: eigenvalue times eigenvector, stored as float
_EIGEN = np.array(
    [
        [55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
        [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
        [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203],
    ]
).astype(np.float32)


def lighting_shift(xp, data, alpha, op_name):
    """``data`` plus AlexNet's PCA noise of weights ``alpha`` (one per RGB channel)."""
    if data.shape[2] == 1:  # MXNet leaves the output unwritten; the image is unchanged
        return xp.array(data)
    if len(alpha) < 3:
        raise ParamError(f"{op_name}: alpha must have 3 values (R, G, B), got {tuple(alpha)}")
    alpha = np.asarray(alpha[:3], np.float32)
    shift = _EIGEN[:, 0] * alpha[0] + _EIGEN[:, 1] * alpha[1] + _EIGEN[:, 2] * alpha[2]
    return saturate(data.astype(np.float32) + xp.asarray(shift), data.dtype)


@attrs.frozen
class AdjustLightingParams:
    alpha: tuple = param("floats")


def _adjust_lighting_forward(ctx, p, inputs, aux):
    return [lighting_shift(ctx.xp, inputs[0], p.alpha, "_image_adjust_lighting")], None


# -- _image_crop ---------------------------------------------------------------------------------


@attrs.frozen
class CropParams:
    x: int = param("int")
    y: int = param("int")
    width: int = param("int")
    height: int = param("int")


def _crop_shape(p, in_shapes, out_shapes, aux_shapes):
    shape = in_shapes[0]
    if shape is None:
        return in_shapes, out_shapes, aux_shapes
    if len(shape) not in (3, 4) or shape[-1] not in (1, 3):
        raise mismatch("data", shape, "(H, W, 1 or 3) or (N, H, W, 1 or 3)", "crop takes images")
    if p.width <= 0 or p.height <= 0 or p.x < 0 or p.y < 0:
        raise ParamError(
            f"_image_crop: width and height must be positive and x, y non-negative, got "
            f"x={p.x}, y={p.y}, width={p.width}, height={p.height}"
        )
    for name, end, size in (
        ("x + width", p.x + p.width, shape[-2]),
        ("y + height", p.y + p.height, shape[-3]),
    ):
        if end > size:
            raise ParamError(
                f"_image_crop: {name} = {end} exceeds the input's {size} "
                f"(input shape {tuple(shape)})"
            )
    out = (p.height, p.width, shape[-1])
    return in_shapes, [out if len(shape) == 3 else (shape[0], *out)], aux_shapes


def _crop_window(p, ndim):
    window = (slice(p.y, p.y + p.height), slice(p.x, p.x + p.width))
    return window if ndim == 3 else (slice(None), *window)


def _crop_forward(ctx, p, inputs, aux):
    (data,) = inputs
    return [ctx.xp.array(data[_crop_window(p, data.ndim)])], data.shape


def _crop_backward(ctx, p, shape, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    grad = ctx.xp.zeros(shape, out_grads[0].dtype)
    grad[_crop_window(p, len(shape))] = out_grads[0]
    return [grad]


# -- _image_resize ------------------------------------------------------------------------------


@attrs.frozen
class ResizeParams:
    size: tuple = param("shape", ())
    keep_ratio: bool = param("bool", False)
    interp: int = param("int", 1)


def _resized_hw(p, height, width):
    """MXNet's GetHeightAndWidth: (height, width) of the resized image."""
    if len(p.size) not in (1, 2) or min(p.size) <= 0:
        raise ParamError(
            f"_image_resize: size must be 1 or 2 positive integers (width, height), got {p.size}"
        )
    if len(p.size) == 2:
        return p.size[1], p.size[0]
    if not p.keep_ratio:
        return p.size[0], p.size[0]
    if height > width:  # the short edge becomes size; integer arithmetic as MXNet's
        return height * p.size[0] // width, p.size[0]
    return p.size[0], width * p.size[0] // height


def _resize_shape(p, in_shapes, out_shapes, aux_shapes):
    shape = in_shapes[0]
    if shape is None:
        return in_shapes, out_shapes, aux_shapes
    if len(shape) not in (3, 4):
        raise mismatch("data", shape, "(H, W, C) or (N, H, W, C)", "resize takes images")
    height, width = _resized_hw(p, shape[-3], shape[-2])
    out = (height, width, shape[-1])
    return in_shapes, [out if len(shape) == 3 else (shape[0], *out)], aux_shapes


_RESIZABLE = ("float32", "float64", "uint8")  # the types MXNet hands OpenCV correctly


def _resize_forward(ctx, p, inputs, aux):
    (data,) = inputs
    if data.dtype.name not in _RESIZABLE:
        raise ParamError(
            f"_image_resize: OpenCV resizes {', '.join(_RESIZABLE)} images, got {data.dtype.name}; "
            "cast the image first (x.astype('float32'))"
        )
    try:
        import cv2
    except ImportError as exc:
        raise ImportError("_image_resize needs OpenCV: pip install 'rebind[image]'") from exc
    host = np.asarray(ctx.backend.to_host(data))
    height, width = _resized_hw(p, host.shape[-3], host.shape[-2])
    images = host if host.ndim == 4 else host[None]
    resized = [
        cv2.resize(image, (width, height), interpolation=p.interp).reshape(height, width, -1)
        for image in images
    ]
    out = np.stack(resized) if host.ndim == 4 else resized[0]
    return [ctx.backend.asarray(out, out.dtype, ctx.device_id)], None


def _resize_backward(ctx, p, saved, out_grads, need_grad):
    raise NotImplementedError(
        "_image_resize has no gradient in rebind: MXNet's (a copy of the output gradient) "
        "has the wrong shape; wrap the resize in BlockGrad or bind its input with grad_req='null'"
    )


# -- the operators ------------------------------------------------------------------------------


def _flip_op(name, axis):
    return OpDef(
        name=name,
        forward=lambda ctx, p, inputs, aux: ([flip(ctx.xp, inputs[0], axis)], None),
        backward=_flip_backward(axis),
        infer_shape=image_shape,
        doc=f"The (H, W, C) image reversed along axis {axis}.",
    )


OPS = [
    OpDef(
        name="_image_to_tensor",
        forward=_to_tensor_forward,
        backward=_to_tensor_backward,
        infer_shape=_to_tensor_shape,
        infer_type=_to_tensor_type,
        doc="(N, )H, W, C images in [0, 255] as (N, )C, H, W float32 tensors in [0, 1].",
    ),
    OpDef(
        name="_image_normalize",
        params=NormalizeParams,
        forward=_normalize_forward,
        backward=_normalize_backward,
        infer_shape=_normalize_shape,
        doc="(input - mean) / std per channel of a (N, )C, H, W tensor.",
    ),
    _flip_op("_image_flip_left_right", 1),
    _flip_op("_image_flip_top_bottom", 0),
    OpDef(
        name="_image_adjust_lighting",
        params=AdjustLightingParams,
        forward=_adjust_lighting_forward,
        backward=_copy_backward,
        infer_shape=image_shape,
        doc="AlexNet-style lighting: the image plus PCA noise of weights alpha.",
    ),
    OpDef(
        name="_image_crop",
        params=CropParams,
        forward=_crop_forward,
        backward=_crop_backward,
        infer_shape=_crop_shape,
        doc="The height x width window at (x, y) of (N, )H, W, C images.",
    ),
    OpDef(
        name="_image_resize",
        params=ResizeParams,
        forward=_resize_forward,
        backward=_resize_backward,
        infer_shape=_resize_shape,
        doc="(N, )H, W, C images resized with OpenCV (size is (width, height) or one edge).",
    ),
]
