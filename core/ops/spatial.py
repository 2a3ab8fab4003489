"""Spatial transformer operators: GridGenerator, BilinearSampler, SpatialTransformer.

A sampling grid holds, for every output pixel, the source position (x, y)
normalised to [-1, 1] over the input's width and height (channel 0 is x,
channel 1 is y). BilinearSampler reads the input there by bilinear
interpolation, corners outside the input counting as 0; GridGenerator makes
the grid from an affine matrix or an optical flow; SpatialTransformer does
both in one op (affine grid, bilinear sampling). As in MXNet, each keeps
hidden outputs (the sampled grids) that only the JSON ``node_row_ptr`` shows.
"""

import attrs
import numpy as np

from .base import OpDef, known, merge_shape, mismatch
from .conv_utils import work_dtype
from .indexing import scatter_add
from .params import param

__all__ = ["OPS"]


@attrs.frozen(kw_only=True)
class BilinearSamplerParams:
    cudnn_off: bool = param("bool", None, optional=True)


@attrs.frozen(kw_only=True)
class GridGeneratorParams:
    transform_type: str = param("str", choices=("affine", "warp"))
    target_shape: tuple = param("shape", (0, 0))


@attrs.frozen(kw_only=True)
class SpatialTransformerParams:
    target_shape: tuple = param("shape", (0, 0))
    transform_type: str = param("str", choices=("affine",))
    sampler_type: str = param("str", choices=("bilinear",))
    cudnn_off: bool = param("bool", None, optional=True)


# -- bilinear sampling (shared by BilinearSampler and SpatialTransformer) ------

# (row offset, column offset) of the four neighbours of a sampling point
_CORNERS = ((0, 0), (0, 1), (1, 0), (1, 1))


def _corners(xp, gx, gy, height, width):
    """The four neighbours of each grid point: (flat indices, in-bounds masks), and weights.

    ``wx``/``wy`` are the weights of the top-left corner along x and y (MXNet's
    ``top_left_x_w``/``top_left_y_w``).
    """
    x = (gx + 1) * (width - 1) / 2
    y = (gy + 1) * (height - 1) / 2
    x0, y0 = xp.floor(x), xp.floor(y)
    wx, wy = 1 - (x - x0), 1 - (y - y0)
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
    indices, masks = [], []
    for dy, dx in _CORNERS:
        row, col = y0 + dy, x0 + dx
        inside = (row >= 0) & (row < height) & (col >= 0) & (col < width)
        indices.append(xp.where(inside, row * width + col, 0))
        masks.append(inside)
    return indices, masks, wx, wy


def _corner_weights(wx, wy):
    return (wy * wx, wy * (1 - wx), (1 - wy) * wx, (1 - wy) * (1 - wx))


def _gather(xp, flat, index, inside):
    """``flat[n, c, index[n, p]]`` (0 outside the input) for (N, C, H*W) ``flat``."""
    n, c, _ = flat.shape
    full = xp.broadcast_to(index[:, None, :], (n, c, index.shape[1]))
    return xp.take_along_axis(flat, full, axis=2) * inside[:, None, :]


def _sample(xp, data, gx, gy):
    """Bilinear sampling of (N, C, H, W) ``data`` at grid (N, P) -> (N, C, P)."""
    n, c, height, width = data.shape
    flat = data.reshape(n, c, height * width)
    indices, masks, wx, wy = _corners(xp, gx, gy, height, width)
    out = 0
    for index, inside, weight in zip(indices, masks, _corner_weights(wx, wy), strict=True):
        out = out + _gather(xp, flat, index, inside) * weight[:, None, :]
    return out


def _sample_backward(xp, data, gx, gy, grad, need_data):
    """Gradients of the sampling w.r.t. data (or None) and the grid's x and y."""
    n, c, height, width = data.shape
    flat = data.reshape(n, c, height * width)
    indices, masks, wx, wy = _corners(xp, gx, gy, height, width)
    values = [_gather(xp, flat, i, m) for i, m in zip(indices, masks, strict=True)]
    top_left, top_right, bottom_left, bottom_right = values
    cross = top_left - top_right - bottom_left + bottom_right
    dwy = (grad * (top_right - bottom_right + cross * wx[:, None, :])).sum(axis=1)
    dwx = (grad * (bottom_left - bottom_right + cross * wy[:, None, :])).sum(axis=1)
    grad_gx, grad_gy = -dwx * (width - 1) / 2, -dwy * (height - 1) / 2
    grad_data = None
    if need_data:
        grad_data = xp.zeros(n * c * height * width, dtype=grad.dtype)
        base = (xp.arange(n * c).reshape(n, c, 1) * (height * width)).astype(np.int64)
        for index, inside, weight in zip(indices, masks, _corner_weights(wx, wy), strict=True):
            part = grad * (weight * inside)[:, None, :]
            scatter_add(xp, grad_data, (base + index[:, None, :]).reshape(-1), part.reshape(-1))
        grad_data = grad_data.reshape(data.shape)
    return grad_data, grad_gx, grad_gy


def _target_grid(xp, height, width, dtype):
    """MXNet's ``grid_dst``: rows x, y, 1 of every target pixel in [-1, 1], shape (3, H*W)."""
    pixel = np.arange(height * width)
    x = -1.0 + (pixel % width) * 2.0 / (width - 1) if width > 1 else np.full(pixel.shape, np.nan)
    y = -1.0 + (pixel // width) * 2.0 / (height - 1) if height > 1 else np.full(x.shape, np.nan)
    grid = np.stack([x, y, np.ones(pixel.shape)])
    return xp.asarray(grid.astype(dtype))


def _check_4d(name, shape, layout):
    if shape is not None and len(shape) != 4:
        raise mismatch(name, shape, layout, f"{name} must be 4-D")


# -- BilinearSampler ------------------------------------------------------------


def _sampler_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, grid = in_shapes
    _check_4d("data", data, "(batch, channel, height, width)")
    _check_4d("grid", grid, "(batch, 2, height, width)")
    if grid is not None and grid[1] and grid[1] != 2:
        raise mismatch("grid", grid, (grid[0], 2, grid[2], grid[3]), "grid holds x and y")
    if data is not None and grid is not None and data[0] and grid[0] and data[0] != grid[0]:
        raise mismatch("grid", grid, (data[0], 2, grid[2], grid[3]), "batch sizes differ")
    if data is None and grid is None:
        return in_shapes, out_shapes, aux_shapes
    data, grid = data or (0, 0, 0, 0), grid or (0, 2, 0, 0)
    out = (data[0] or grid[0], data[1], grid[2], grid[3])
    return in_shapes, [merge_shape(out, out_shapes[0], "output")], aux_shapes


def _split_grid(grid):
    n = grid.shape[0]
    return grid[:, 0].reshape(n, -1), grid[:, 1].reshape(n, -1)


def _sampler_forward(ctx, p, inputs, aux):
    xp, (data, grid) = ctx.xp, inputs
    work = work_dtype(data.dtype)
    data_w, grid_w = data.astype(work, copy=False), grid.astype(work, copy=False)
    gx, gy = _split_grid(grid_w)
    out = _sample(xp, data_w, gx, gy).reshape(data.shape[:2] + grid.shape[2:])
    return [out.astype(data.dtype, copy=False)], (data_w, grid_w, data.dtype)


def _sampler_backward(ctx, p, saved, out_grads, need_grad):
    data, grid, dtype = saved
    if not any(need_grad):
        return [None, None]
    grad = out_grads[0].astype(data.dtype, copy=False).reshape(data.shape[:2] + (-1,))
    gx, gy = _split_grid(grid)
    grad_data, grad_gx, grad_gy = _sample_backward(ctx.xp, data, gx, gy, grad, need_grad[0])
    grad_grid = ctx.xp.stack([grad_gx, grad_gy], axis=1).reshape(grid.shape)
    return [
        grad_data.astype(dtype, copy=False) if need_grad[0] else None,
        grad_grid.astype(dtype, copy=False) if need_grad[1] else None,
    ]


# -- GridGenerator --------------------------------------------------------------


def _generator_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    if p.transform_type == "affine":
        if len(data) != 2 or (data[1] and data[1] != 6):
            raise mismatch("data", data, (data[0], 6), "affine data is a (batch, 6) matrix")
        if not all(d > 0 for d in p.target_shape) or len(p.target_shape) != 2:
            raise mismatch("data", data, "a positive target_shape (H, W)", "for affine grids")
        out = (data[0], 2, *p.target_shape)
    else:
        if len(data) != 4 or (data[1] and data[1] != 2):
            raise mismatch("data", data, "(batch, 2, height, width)", "warp data is a flow field")
        out = tuple(data)
    return in_shapes, [merge_shape(out, out_shapes[0], "output")], aux_shapes


def _flow_scale(xp, shape, dtype):
    """(W-1)/2 for x and (H-1)/2 for y, shaped (1, 2, 1, 1)."""
    height, width = shape[2], shape[3]
    return xp.asarray(np.array([(width - 1) / 2, (height - 1) / 2], dtype).reshape(1, 2, 1, 1))


def _generator_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    if p.transform_type == "affine":
        height, width = p.target_shape
        grid_dst = _target_grid(xp, height, width, data.dtype)
        out = xp.matmul(data.reshape(-1, 2, 3), grid_dst).reshape(-1, 2, height, width)
        return [out], (grid_dst,)
    height, width = data.shape[2:]
    pixels = xp.stack(
        [
            xp.broadcast_to(xp.arange(width, dtype=data.dtype), (height, width)),
            xp.broadcast_to(xp.arange(height, dtype=data.dtype)[:, None], (height, width)),
        ]
    )
    out = (data + pixels[None]) / _flow_scale(xp, data.shape, data.dtype) - 1
    return [out.astype(data.dtype, copy=False)], (data.shape,)


def _generator_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    grad = out_grads[0]
    if p.transform_type == "affine":
        (grid_dst,) = saved
        flat = grad.reshape(grad.shape[0], 2, -1)
        return [ctx.xp.matmul(flat, grid_dst.T).reshape(grad.shape[0], 6)]
    scale = _flow_scale(ctx.xp, saved[0], grad.dtype)
    return [(grad / scale).astype(grad.dtype, copy=False)]


# -- SpatialTransformer ---------------------------------------------------------


def _transformer_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data, loc = in_shapes
    _check_4d("data", data, "(batch, channel, height, width)")
    if loc is not None and (len(loc) != 2 or (loc[1] and loc[1] != 6)):
        raise mismatch("loc", loc, "(batch, 6)", "loc is an affine matrix per sample")
    if not known(data) or not known(loc):
        return in_shapes, out_shapes, aux_shapes
    if len(p.target_shape) != 2 or not all(d > 0 for d in p.target_shape):
        raise mismatch("data", data, "a positive target_shape (H, W)", "target_shape unset")
    out = (data[0], data[1], *p.target_shape)
    return in_shapes, [merge_shape(out, out_shapes[0], "output")], aux_shapes


def _transformer_forward(ctx, p, inputs, aux):
    xp, (data, loc) = ctx.xp, inputs
    work = work_dtype(data.dtype)
    data_w, loc_w = data.astype(work, copy=False), loc.astype(work, copy=False)
    height, width = p.target_shape
    grid_dst = _target_grid(xp, height, width, work)
    grid_src = xp.matmul(loc_w.reshape(-1, 2, 3), grid_dst)  # (N, 2, H*W)
    out = _sample(xp, data_w, grid_src[:, 0], grid_src[:, 1])
    out = out.reshape(data.shape[:2] + (height, width))
    return [out.astype(data.dtype, copy=False)], (data_w, grid_dst, grid_src, data.dtype)


def _transformer_backward(ctx, p, saved, out_grads, need_grad):
    data, grid_dst, grid_src, dtype = saved
    if not any(need_grad):
        return [None, None]
    grad = out_grads[0].astype(data.dtype, copy=False).reshape(data.shape[:2] + (-1,))
    grad_data, grad_gx, grad_gy = _sample_backward(
        ctx.xp, data, grid_src[:, 0], grid_src[:, 1], grad, need_grad[0]
    )
    grad_loc = ctx.xp.matmul(ctx.xp.stack([grad_gx, grad_gy], axis=1), grid_dst.T)
    return [
        grad_data.astype(dtype, copy=False) if need_grad[0] else None,
        grad_loc.reshape(-1, 6).astype(dtype, copy=False) if need_grad[1] else None,
    ]


OPS = [
    OpDef(
        name="BilinearSampler",
        params=BilinearSamplerParams,
        arguments=("data", "grid"),
        hidden_outputs=1,  # MXNet's "tmp"
        infer_shape=_sampler_infer_shape,
        forward=_sampler_forward,
        backward=_sampler_backward,
        doc="Samples NCHW data at a normalised (x, y) grid by bilinear interpolation.",
    ),
    OpDef(
        name="GridGenerator",
        params=GridGeneratorParams,
        hidden_outputs=1,  # MXNet's "grid_dst"
        infer_shape=_generator_infer_shape,
        forward=_generator_forward,
        backward=_generator_backward,
        doc="Makes a sampling grid from an affine matrix or an optical flow.",
    ),
    OpDef(
        name="SpatialTransformer",
        params=SpatialTransformerParams,
        arguments=("data", "loc"),
        hidden_outputs=2,  # MXNet's "grid_dst" and "grid_src"
        infer_shape=_transformer_infer_shape,
        forward=_transformer_forward,
        backward=_transformer_backward,
        doc="Affine spatial transformer: an affine grid sampled bilinearly.",
    ),
]
