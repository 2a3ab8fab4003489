"""Image-shaped layers: Crop, Pad (alias pad), LRN, depth_to_space and space_to_depth.

All work on channel-first (N, C, H, W) data (Pad also on 5-D). Their
gradients route the output gradient back to the elements each output was
read from: a slice for Crop, an index fold for Pad's edge and reflect modes,
the inverse permutation for the two block rearrangements.
"""

import attrs

from ..errors import ShapeError
from .base import OpDef, merge_shape, mismatch
from .conv_utils import work_dtype
from .params import param, positive

__all__ = ["OPS"]

_NCHW = "(batch, channel, height, width)"


def _check_4d(argument, shape, why):
    if shape is not None and len(shape) != 4:
        raise mismatch(argument, tuple(shape), _NCHW, why)


# -- Crop -----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class CropParams:
    num_args: int = param("int", choices=(1, 2))
    offset: tuple = param("shape", (0, 0))
    h_w: tuple = param("shape", (0, 0))
    center_crop: bool = param("bool", False)

    def __attrs_post_init__(self):
        for name in ("offset", "h_w"):
            if len(getattr(self, name)) != 2:
                raise ValueError(
                    f"parameter {name}={getattr(self, name)} is invalid: expected (y, x)"
                )


def _crop_arguments(p):
    return tuple(f"arg{i}" for i in range(p.num_args))


def _crop_size(p, in_shapes):
    """(height, width) of the crop, or None while the reference shape is unknown."""
    data = in_shapes[0]
    if p.num_args == 1:
        for axis, (size, name) in enumerate(zip(p.h_w, ("height", "width"), strict=True)):
            if not 1 <= size <= (data[axis + 2] or size):
                raise mismatch(
                    "arg0",
                    tuple(data),
                    f"a {name} of at least h_w[{axis}]={size}",
                    f"the crop {name} must lie in [1, {data[axis + 2]}]",
                )
        return tuple(p.h_w)
    like = in_shapes[1]
    if like is None:
        return None
    if len(like) < 4:
        raise mismatch("arg1", tuple(like), _NCHW, "crop_like gives the crop's height and width")
    return tuple(like[2:4]) if all(like[2:4]) else None


def _crop_offsets(p, data, size):
    """Top-left corner of the crop; ShapeError where the crop leaves the data."""
    if p.center_crop:
        return tuple((n - s) // 2 for n, s in zip(data[2:], size, strict=True))
    for axis in range(2):
        room = data[axis + 2] - size[axis]
        if not 0 <= p.offset[axis] <= room:
            raise mismatch(
                "arg0",
                tuple(data),
                f"room for offset={p.offset} and a crop of {size}",
                f"offset[{axis}] must lie in [0, {room}]",
            )
    return tuple(p.offset)


def _crop_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    _check_4d("arg0", data, "Crop works on 4-D data")
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    size = _crop_size(p, in_shapes)
    if size is None:
        return in_shapes, out_shapes, aux_shapes
    if all(data[2:]):
        if any(s > n for s, n in zip(size, data[2:], strict=True)):
            raise mismatch("arg0", tuple(data), f"height, width of at least {size}", "crop too big")
        _crop_offsets(p, data, size)
    out = merge_shape((data[0], data[1], *size), out_shapes[0], "output")
    return in_shapes, [out], aux_shapes


def _crop_forward(ctx, p, inputs, aux):
    data = inputs[0]
    size = tuple(p.h_w) if p.num_args == 1 else tuple(inputs[1].shape[2:4])
    top, left = _crop_offsets(p, data.shape, size)
    out = data[:, :, top : top + size[0], left : left + size[1]].copy()
    return [out], (data.shape, (top, left), [x.shape for x in inputs[1:]], data.dtype)


def _crop_backward(ctx, p, saved, out_grads, need_grad):
    xp, (shape, (top, left), like_shapes, dtype) = ctx.xp, saved
    grad = out_grads[0]
    grads = [None] * p.num_args
    if need_grad[0]:
        grads[0] = xp.zeros(shape, dtype=dtype)
        grads[0][:, :, top : top + grad.shape[2], left : left + grad.shape[3]] = grad
    for i, like in enumerate(like_shapes, start=1):
        if need_grad[i]:  # crop_like gives only its shape: a zero gradient, as MXNet
            grads[i] = xp.zeros(like, dtype=dtype)
    return grads


CROP = OpDef(
    name="Crop",
    params=CropParams,
    arguments=_crop_arguments,
    variadic="num_args",
    infer_shape=_crop_infer_shape,
    forward=_crop_forward,
    backward=_crop_backward,
    doc="Crops height and width to h_w, or to the second input's size, at offset or centred.",
)


# -- Pad ------------------------------------------------------------------------

PAD_MODES = ("constant", "edge", "reflect")


@attrs.frozen(kw_only=True)
class PadParams:
    mode: str = param("str", choices=PAD_MODES)
    pad_width: tuple = param("shape")
    constant_value: float = param("float", 0.0)


def _pad_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    if len(data) not in (4, 5):
        raise mismatch("data", tuple(data), "4-D or 5-D data", "Pad supports 4-D and 5-D data")
    if len(p.pad_width) != 2 * len(data):
        raise mismatch(
            "data",
            tuple(data),
            f"{len(p.pad_width) // 2}-D data",
            f"pad_width={p.pad_width} has two entries per axis",
        )
    if any(p.pad_width[:4]):
        raise mismatch(
            "data",
            tuple(data),
            "no padding of batch and channel axes",
            f"pad_width={p.pad_width} must start with four zeros",
        )
    widths = list(zip(p.pad_width[::2], p.pad_width[1::2], strict=True))
    if p.mode == "reflect":
        for size, (before, after) in zip(data[2:], widths[2:], strict=True):
            if size and max(before, after) >= size:
                raise mismatch(
                    "data",
                    tuple(data),
                    f"spatial sizes above the padding {p.pad_width}",
                    "reflect padding must be smaller than the axis it pads",
                )
    out = tuple(n + b + a if n else 0 for n, (b, a) in zip(data, widths, strict=True))
    return in_shapes, [merge_shape(out, out_shapes[0], "output")], aux_shapes


def _pad_widths(p):
    return tuple(zip(p.pad_width[::2], p.pad_width[1::2], strict=True))


def _pad_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    widths = _pad_widths(p)
    if p.mode == "constant":
        out = xp.pad(data, widths, mode="constant", constant_values=p.constant_value)
    else:
        out = xp.pad(data, widths, mode=p.mode)
    return [out.astype(data.dtype, copy=False)], data.shape


def _fold_axis(xp, grad, axis, size, before, after, mode):
    """Sum the gradient of each padded position onto the element it was copied from."""
    source = xp.pad(xp.arange(size), (before, after), mode=mode)
    picks = (source[:, None] == xp.arange(size)[None, :]).astype(grad.dtype)
    moved = xp.moveaxis(grad, axis, -1)
    return xp.moveaxis(moved @ picks, -1, axis)


def _pad_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    xp, shape, grad = ctx.xp, saved, out_grads[0]
    widths = _pad_widths(p)
    if p.mode == "constant":
        inner = tuple(slice(b, b + n) for n, (b, _) in zip(shape, widths, strict=True))
        return [grad[inner].copy()]
    dtype = grad.dtype
    grad = grad.astype(work_dtype(dtype), copy=False)
    for axis in range(2, len(shape)):
        before, after = widths[axis]
        if before or after:
            grad = _fold_axis(xp, grad, axis, shape[axis], before, after, p.mode)
    return [xp.ascontiguousarray(grad).astype(dtype, copy=False)]


PAD = OpDef(
    name="Pad",
    aliases=("pad",),
    params=PadParams,
    infer_shape=_pad_infer_shape,
    forward=_pad_forward,
    backward=_pad_backward,
    doc="Pads the spatial axes of 4-D/5-D data with a constant, the edge values or a reflection.",
)


# -- LRN ------------------------------------------------------------------------


def _odd(instance, attribute, value):
    if value % 2 != 1:
        raise ValueError(f"nsize must be odd (LRN supports odd window widths), got {value}")


@attrs.frozen(kw_only=True)
class LRNParams:
    alpha: float = param("float", 1e-4)
    beta: float = param("float", 0.75)
    knorm: float = param("float", 2.0)
    nsize: int = param("int", validator=[positive, _odd])


def _lrn_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = merge_shape(in_shapes[0], out_shapes[0], "data")
    _check_4d("data", data, "LRN normalizes across channels of 4-D data")
    return [data], [data], aux_shapes


def _channel_window_sum(xp, x, nsize):
    """For each channel, the sum of the ``nsize`` channels centred on it (zeros outside)."""
    half = nsize // 2
    padded = xp.pad(x, ((0, 0), (half, half), (0, 0), (0, 0)))
    channels = x.shape[1]
    total = padded[:, 0:channels].copy()
    for offset in range(1, nsize):
        total += padded[:, offset : offset + channels]
    return total


def _lrn_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    x = data.astype(work_dtype(data.dtype), copy=False)
    norm = _channel_window_sum(xp, x * x, p.nsize) * (p.alpha / p.nsize) + p.knorm
    out = x * norm ** (-p.beta)
    return [out.astype(data.dtype, copy=False)], (x, norm, data.dtype)


def _lrn_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    xp, (x, norm, dtype) = ctx.xp, saved
    grad = out_grads[0].astype(x.dtype, copy=False)
    spread = _channel_window_sum(xp, grad * x * norm ** (-p.beta - 1), p.nsize)
    scale = -2.0 * p.beta * p.alpha / p.nsize
    result = grad * norm ** (-p.beta) + scale * spread * x
    return [result.astype(dtype, copy=False)]


LRN = OpDef(
    name="LRN",
    params=LRNParams,
    hidden_outputs=1,  # MXNet's tmp_norm output
    infer_shape=_lrn_infer_shape,
    forward=_lrn_forward,
    backward=_lrn_backward,
    doc="x / (knorm + alpha/nsize * sum of x^2 over nsize neighbouring channels) ** beta.",
)


# -- depth_to_space / space_to_depth --------------------------------------------


@attrs.frozen
class BlockParams:
    block_size: int = param("int", validator=positive)


def _depth_to_space(x, block):
    n, c, h, w = x.shape
    blocks = x.reshape(n, block, block, c // (block * block), h, w)
    return blocks.transpose(0, 3, 4, 1, 5, 2).reshape(n, c // (block * block), h * block, w * block)


def _space_to_depth(x, block):
    n, c, h, w = x.shape
    blocks = x.reshape(n, c, h // block, block, w // block, block)
    return blocks.transpose(0, 3, 5, 1, 2, 4).reshape(n, c * block * block, h // block, w // block)


def _d2s_out(p, data):
    block = p.block_size
    if data[1] and data[1] % (block * block):
        raise mismatch(
            "data",
            tuple(data),
            f"channels divisible by block_size^2={block * block}",
            "depth_to_space moves block_size^2 channels into each block",
        )
    return (data[0], data[1] // (block * block), data[2] * block, data[3] * block)


def _s2d_out(p, data):
    block = p.block_size
    for axis, name in ((2, "height"), (3, "width")):
        if data[axis] % block:
            raise mismatch(
                "data",
                tuple(data),
                f"a {name} divisible by block_size={block}",
                "space_to_depth moves each block into the channels",
            )
    return (data[0], data[1] * block * block, data[2] // block, data[3] // block)


def _block_op(name, compute_shape, forward, inverse, doc):
    def infer_shape(p, in_shapes, out_shapes, aux_shapes):
        data = in_shapes[0]
        _check_4d("data", data, f"{name} works on 4-D data")
        if data is not None:
            out_shapes = [merge_shape(compute_shape(p, data), out_shapes[0], "output")]
        return in_shapes, out_shapes, aux_shapes

    def run(ctx, p, inputs, aux):
        if 0 in inputs[0].shape:  # shape inference reads 0 as unknown; MXNet rejects it
            raise ShapeError(f"{name}: data of shape {inputs[0].shape} has an empty dimension")
        return [ctx.xp.ascontiguousarray(forward(inputs[0], p.block_size))], None

    def backward(ctx, p, saved, out_grads, need_grad):
        grad = inverse(out_grads[0], p.block_size) if need_grad[0] else None
        return [None if grad is None else ctx.xp.ascontiguousarray(grad)]

    return OpDef(
        name=name,
        params=BlockParams,
        infer_shape=infer_shape,
        forward=run,
        backward=backward,
        doc=doc,
    )


DEPTH_TO_SPACE = _block_op(
    "depth_to_space",
    _d2s_out,
    _depth_to_space,
    _space_to_depth,
    "Moves channel blocks into block_size x block_size spatial blocks (DCR order).",
)
SPACE_TO_DEPTH = _block_op(
    "space_to_depth",
    _s2d_out,
    _space_to_depth,
    _depth_to_space,
    "Moves block_size x block_size spatial blocks into the channels (the inverse).",
)

OPS = [CROP, PAD, LRN, DEPTH_TO_SPACE, SPACE_TO_DEPTH]
