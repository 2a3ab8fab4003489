"""AdaptiveAvgPooling2D and BilinearResize2D (mx.contrib): NCHW resampling as two matrix products.

Both are separable: each output row mixes input rows with fixed weights, and
likewise for columns, so the forward is ``rows @ x @ cols.T`` and the gradient
``rows.T @ g @ cols``. The weights follow MXNet 1.9.1's CPU kernels
(adaptive_avg_pooling.cc, bilinear_resize.cc): pooling windows run from
``floor(o * I / O)`` to ``ceil((o + 1) * I / O)`` (computed in float32);
bilinear source positions are ``o * (I - 1) / (O - 1)`` with
``align_corners`` and ``(o + 0.5) * I / O - 0.5`` (clamped at 0) without,
taking the two neighbours ``floor`` and ``floor + 1`` (the last row reads itself).

Difference from MXNet: with mode="size", ``scale_width`` alone scales the
width; MXNet 1.9.1 ignores it unless ``scale_height`` is also given (and fails
with "bad optional access" for ``scale_height`` alone, which rebind reports).
"""

import attrs
import numpy as np

from .base import OpDef, merge_shape, mismatch
from .conv_utils import work_dtype
from .params import param, positive

__all__ = ["OPS"]


def _check_4d(name, shape):
    if shape is not None and len(shape) != 4:
        raise mismatch(name, shape, "(batch, channel, height, width)", f"{name} must be 4-D")


def _resample(xp, x, rows, cols):
    """``rows @ x @ cols.T`` over the last two axes, computed in float32 or wider."""
    dtype = np.dtype(work_dtype(x.dtype))
    rows, cols = xp.asarray(rows, dtype=dtype), xp.asarray(cols, dtype=dtype)
    out = xp.matmul(xp.matmul(rows, x.astype(dtype, copy=False)), cols.T)
    return out.astype(x.dtype, copy=False)


# -- AdaptiveAvgPooling2D --------------------------------------------------------------


@attrs.frozen(kw_only=True)
class AdaptiveAvgPoolingParams:
    output_size: tuple = param("shape", ())


def _pool_size(p):
    size = p.output_size or ()
    if len(size) == 1:
        return size[0], size[0]
    return tuple(size) if len(size) == 2 else (1, 1)  # MXNet: none or >2 values mean (1, 1)


def _pool_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    _check_4d("data", data)
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    out = (data[0], data[1], *_pool_size(p))
    return in_shapes, [merge_shape(out, out_shapes[0], "output")], aux_shapes


def _pool_matrix(inputs, outputs):
    """(outputs, inputs) averaging weights of MXNet's adaptive windows."""
    steps = np.arange(outputs + 1, dtype=np.float32) * np.float32(inputs) / np.float32(outputs)
    begin = np.floor(steps[:-1]).astype(np.int64)
    end = np.ceil(steps[1:]).astype(np.int64)
    position = np.arange(inputs)
    inside = (position >= begin[:, None]) & (position < end[:, None])
    return inside / (end - begin)[:, None]


def _pool_forward(ctx, p, inputs, aux):
    data = inputs[0]
    height, width = _pool_size(p)
    rows, cols = _pool_matrix(data.shape[2], height), _pool_matrix(data.shape[3], width)
    return [_resample(ctx.xp, data, rows, cols)], (rows, cols)


def _pool_backward(ctx, p, saved, out_grads, need_grad):
    rows, cols = saved
    return [_resample(ctx.xp, out_grads[0], rows.T, cols.T) if need_grad[0] else None]


# -- BilinearResize2D -------------------------------------------------------------------

_MODES = ("size", "odd_scale", "like", "to_even_down", "to_even_up", "to_odd_down", "to_odd_up")


@attrs.frozen(kw_only=True)
class BilinearResizeParams:
    height: int = param("int", 1, validator=positive)
    width: int = param("int", 1, validator=positive)
    scale_height: float = param("float", None, optional=True)
    scale_width: float = param("float", None, optional=True)
    mode: str = param("str", "size", choices=_MODES)
    align_corners: bool = param("bool", True)


def _resize_arguments(p):
    return ("data", "like") if p.mode == "like" else ("data",)


def _scaled(size, scale):
    return int(np.float32(scale) * np.float32(size))  # MXNet truncates a float product


def _odd_scaled(size, scale, name):
    if scale is None:
        raise mismatch("data", size, f"{name} to be set", "mode='odd_scale' scales by it")
    return _scaled(size, scale) if size % 2 == 0 else _scaled(size - 1, scale) + 1


_PARITY = {  # mode -> (wanted remainder mod 2, step taken from a size without it)
    "to_even_down": (0, -1),
    "to_even_up": (0, 1),
    "to_odd_down": (1, -1),
    "to_odd_up": (1, 1),
}


def _resized(p, shape, like):
    """(height, width) of the output of data ``shape`` (``like``: the second input's shape)."""
    height, width = shape[2], shape[3]
    if p.mode == "size":
        if p.scale_height is not None and p.scale_width is None:  # MXNet: "bad optional access"
            reason = "MXNet 1.9.1 reads scale_width whenever scale_height is set; give both"
            raise mismatch("data", shape, "scale_width as well as scale_height", reason)
        return (
            p.height if p.scale_height is None else _scaled(height, p.scale_height),
            p.width if p.scale_width is None else _scaled(width, p.scale_width),
        )
    if p.mode == "odd_scale":
        return (
            _odd_scaled(height, p.scale_height, "scale_height"),
            _odd_scaled(width, p.scale_width, "scale_width"),
        )
    if p.mode == "like":
        return like[2], like[3]
    remainder, step = _PARITY[p.mode]
    return tuple(s if s % 2 == remainder else s + step for s in (height, width))


def _resize_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    for name, shape in zip(_resize_arguments(p), in_shapes, strict=True):
        _check_4d(name, shape)
    data, like = in_shapes[0], (in_shapes[1] if p.mode == "like" else None)
    if data is None or (p.mode == "like" and like is None):
        return in_shapes, out_shapes, aux_shapes
    height, width = _resized(p, data, like)
    if min(height, width) < 1:
        raise mismatch("data", data, "an input that resizes to at least 1 x 1", f"{p.mode}")
    out = merge_shape((data[0], data[1], height, width), out_shapes[0], "output")
    return in_shapes, [out], aux_shapes


def _bilinear_matrix(inputs, outputs, align_corners):
    """(outputs, inputs) interpolation weights of MXNet's bilinear kernel."""
    weights = np.zeros((outputs, inputs), dtype=np.float32)
    if inputs == outputs:
        return np.eye(inputs, dtype=np.float32)
    scale = np.float32(0)  # one output row reads input row 0
    if outputs > 1 and align_corners:
        scale = np.float32(inputs - 1) / np.float32(outputs - 1)
    elif outputs > 1:
        scale = np.float32(inputs) / np.float32(outputs)
    target = np.arange(outputs, dtype=np.float32)
    if align_corners:
        source = scale * target
    else:
        source = np.maximum(scale * (target + np.float32(0.5)) - np.float32(0.5), 0)
    lower = source.astype(np.int64)
    upper = lower + (lower < inputs - 1)
    far = (source - lower).astype(np.float32)
    rows = np.arange(outputs)
    np.add.at(weights, (rows, lower), np.float32(1) - far)
    np.add.at(weights, (rows, upper), far)
    return weights


def _resize_forward(ctx, p, inputs, aux):
    data = inputs[0]
    like = inputs[1].shape if p.mode == "like" else None
    height, width = _resized(p, data.shape, like)
    rows = _bilinear_matrix(data.shape[2], height, p.align_corners)
    cols = _bilinear_matrix(data.shape[3], width, p.align_corners)
    return [_resample(ctx.xp, data, rows, cols)], (rows, cols, like, inputs[-1].dtype)


def _resize_backward(ctx, p, saved, out_grads, need_grad):
    rows, cols, like, like_dtype = saved
    grads = [_resample(ctx.xp, out_grads[0], rows.T, cols.T) if need_grad[0] else None]
    if like is not None:  # MXNet writes zeros for the shape donor
        grads.append(ctx.xp.zeros(like, dtype=like_dtype) if need_grad[1] else None)
    return grads


OPS = [
    OpDef(
        name="_contrib_AdaptiveAvgPooling2D",
        params=AdaptiveAvgPoolingParams,
        infer_shape=_pool_infer_shape,
        forward=_pool_forward,
        backward=_pool_backward,
        doc="Average pooling of NCHW data to a given output (height, width).",
    ),
    OpDef(
        name="_contrib_BilinearResize2D",
        params=BilinearResizeParams,
        arguments=_resize_arguments,
        infer_shape=_resize_infer_shape,
        forward=_resize_forward,
        backward=_resize_backward,
        doc="Bilinear resizing of NCHW data to a size, a scale, a parity or another input's size.",
    ),
]
