"""Converters of the image-shaped layers: Pad, Crop, depth_to_space, space_to_depth,
GroupNorm, the legacy Convolution_v1 / Pooling_v1 / BatchNorm_v1, ROIPooling,
the spatial transformer family (GridGenerator, BilinearSampler,
SpatialTransformer), im2col and col2im.

The legacy layers run their successors' converters (nn.py, nn_norm.py) on a
node whose params are the successor's; only what the old versions compute
differently (Pooling_v1's zero padding and full-kernel averages, BatchNorm_v1's
``var`` output holding the variance) is added here. Bilinear sampling is
ONNX's GridSample (opset 16 on) with ``align_corners=1``: rebind maps -1 and 1
to the centres of the first and last pixels and reads zeros outside, which is
that mode with zero padding.
"""

import math

import attrs
import numpy as np

from ...ops.conv_utils import fill_window_params
from ...ops.legacy import _bn_v1_inner, _pool_v1_inner
from ...ops.spatial import _target_grid
from ...ops.vision import _crop_offsets
from . import converter
from .nn import convert_convolution, convert_pooling, narrow, wide, work_dtype
from .nn_norm import convert_batch_norm
from .tensor_helpers import axes_input, cast, fail, ints, scalar

__all__ = []


def _op(g, node, op_type, inputs, hint, **attributes):
    return g.add_node(op_type, list(inputs), [g.fresh(node.name + hint)], **attributes)


def _zero_pad(g, node, data, begins, ends, dtype):
    """``data`` padded with zeros: ``begins``/``ends`` per spatial axis (batch, channel: 0)."""
    if not any(begins) and not any(ends):
        return data
    pads = ints(g, [0, 0, *begins, 0, 0, *ends], node.name + "_pads")
    zero = scalar(g, 0, dtype, node.name + "_zero")
    return _op(g, node, "Pad", [data, pads, zero], "_padded", mode="constant")


# -- Pad and Crop ----------------------------------------------------------------------
@converter("Pad")
def convert_pad(node, g):
    """MXNet's (before, after) pairs per axis become ONNX's begins then ends."""
    p, dtype = node.params, node.in_dtypes[0]
    pads = ints(g, [*p.pad_width[::2], *p.pad_width[1::2]], node.name + "_pads")
    inputs = [node.inputs[0], pads]
    if p.mode == "constant":
        inputs.append(scalar(g, p.constant_value, dtype, node.name + "_value"))
    g.add_node("Pad", inputs, [node.outputs[0]], mode=p.mode)


@converter("Crop")
def convert_crop(node, g):
    """A Slice of height and width; the size is h_w or the second input's (static) size."""
    p, data = node.params, node.in_shapes[0]
    size = tuple(p.h_w) if p.num_args == 1 else tuple(node.in_shapes[1][2:4])
    top, left = _crop_offsets(p, data, size)
    starts = ints(g, [top, left], node.name + "_starts")
    ends = ints(g, [top + size[0], left + size[1]], node.name + "_ends")
    axes = ints(g, [2, 3], node.name + "_axes")
    g.add_node("Slice", [node.inputs[0], starts, ends, axes], [node.outputs[0]])


# -- depth_to_space and space_to_depth ----------------------------------------------
@converter("depth_to_space")
def convert_depth_to_space(node, g):
    """rebind's order is ONNX's DCR mode (depth, then column, then row)."""
    block = node.params.block_size
    g.add_node("DepthToSpace", [node.inputs[0]], [node.outputs[0]], blocksize=block, mode="DCR")


@converter("space_to_depth")
def convert_space_to_depth(node, g):
    block = node.params.block_size
    g.add_node("SpaceToDepth", [node.inputs[0]], [node.outputs[0]], blocksize=block)


# -- GroupNorm ------------------------------------------------------------------------
@converter("GroupNorm")
def convert_group_norm(node, g):
    """(x - mean) / sqrt(var + eps) * gamma + beta per (sample, group) of the (N, G, rest) view."""
    p, dtype = node.params, node.in_dtypes[0]
    data, gamma, beta = node.inputs
    work = work_dtype(dtype)
    x = wide(g, data, dtype)
    grouped = _op(g, node, "Reshape", [x, ints(g, [0, p.num_groups, -1])], "_grouped")
    mean = axes_input(g, node, "ReduceMean", grouped, [2], g.fresh(node.name + "_mean"), keepdims=1)
    centered = _op(g, node, "Sub", [grouped, mean], "_centered")
    square = _op(g, node, "Mul", [centered, centered], "_square")
    var = axes_input(g, node, "ReduceMean", square, [2], g.fresh(node.name + "_var"), keepdims=1)
    std = _op(g, node, "Sqrt", [_op(g, node, "Add", [var, scalar(g, p.eps, work)], "_ve")], "_std")
    xhat = _op(g, node, "Div", [centered, std], "_xhat")
    column = ints(g, [-1, 1], node.name + "_column")
    scale = _op(g, node, "Reshape", [cast(g, gamma, work, node.in_dtypes[1]), column], "_g")
    shift = _op(g, node, "Reshape", [cast(g, beta, work, node.in_dtypes[2]), column], "_b")
    result = _op(g, node, "Add", [_op(g, node, "Mul", [xhat, scale], "_scaled"), shift], "_out")
    shape = _op(g, node, "Shape", [data], "_shape")
    narrow(g, _op(g, node, "Reshape", [result, shape], "_back"), dtype, node.outputs[0], work)
    if p.output_mean_var:  # (N, num_groups) each
        for value, output, hint in ((mean, node.outputs[1], "_m"), (std, node.outputs[2], "_s")):
            flat = axes_input(g, node, "Squeeze", value, [2], g.fresh(node.name + hint))
            narrow(g, flat, node.out_dtypes[1], output, work)


# -- the legacy layers -----------------------------------------------------------------
def _channel_first(node, g):
    layout = getattr(node.params, "layout", None)
    if layout not in (None, "NCHW", "NCDHW"):
        raise fail(node, g, f"{node.op.name} with layout={layout!r}")


@converter("Convolution_v1")
def convert_convolution_v1(node, g):
    """Convolution's maths; its params carry every field Convolution's converter reads."""
    _channel_first(node, g)
    convert_convolution(node, g)


@converter("Pooling_v1")
def convert_pooling_v1(node, g):
    """Zero padding (also for max), then Pooling of that; averages over the full kernel."""
    p, dtype = node.params, node.in_dtypes[0]
    inner = _pool_v1_inner(p)
    data, shape = node.inputs[0], tuple(node.in_shapes[0])
    if not p.global_pool and p.pad and any(p.pad):
        data = _zero_pad(g, node, data, list(p.pad), list(p.pad), dtype)
        shape = (*shape[:2], *(n + 2 * q for n, q in zip(shape[2:], p.pad, strict=True)))
    if p.pool_type != "avg":
        convert_pooling(attrs.evolve(node, params=inner, inputs=(data,), in_shapes=(shape,)), g)
        return
    total = g.fresh(node.name + "_sum")
    convert_pooling(
        attrs.evolve(node, params=inner, inputs=(data,), in_shapes=(shape,), outputs=(total,)), g
    )
    count = shape[2] * shape[3] if p.global_pool else math.prod(p.kernel)
    x = wide(g, total, dtype)
    mean = _op(g, node, "Mul", [x, scalar(g, 1.0 / count, work_dtype(dtype))], "_mean")
    narrow(g, mean, dtype, node.outputs[0])


@converter("BatchNorm_v1")
def convert_batch_norm_v1(node, g):
    """BatchNorm on axis 1; its mean and var outputs are the moving statistics themselves."""
    inner = attrs.evolve(_bn_v1_inner(node.params), output_mean_var=False)
    convert_batch_norm(attrs.evolve(node, params=inner, outputs=node.outputs[:1]), g)
    if node.params.output_mean_var:
        stats = zip(node.inputs[3:5], node.outputs[1:3], node.in_dtypes[3:5], strict=True)
        for stat, output, dtype in stats:
            g.add_node("Identity", [cast(g, stat, node.out_dtypes[1], dtype)], [output])


# -- ROIPooling -----------------------------------------------------------------------
@converter("ROIPooling")
def convert_roi_pooling(node, g):
    """ONNX's MaxRoiPool is Caffe's kernel, as MXNet's: corners rounded half away from zero,
    bins floor(i * size / pooled) to ceil((i + 1) * size / pooled), empty bins 0."""
    p, dtype = node.params, node.in_dtypes[0]
    data, rois = wide(g, node.inputs[0], dtype), wide(g, node.inputs[1], node.in_dtypes[1])
    pooled = _op(
        g,
        node,
        "MaxRoiPool",
        [data, rois],
        "_pool",
        pooled_shape=list(p.pooled_size),
        spatial_scale=float(np.float32(p.spatial_scale)),
    )
    narrow(g, pooled, dtype, node.outputs[0])


# -- the spatial transformer family ---------------------------------------------------
def _need_grid_sample(node, g):
    if g.opset < 16:
        raise fail(node, g, f"{node.op.name} (bilinear sampling needs GridSample, opset 16)")


def _grid_sample(node, g, data, grid_nchw):
    """Sample (N, C, H, W) ``data`` at the (N, 2, h, w) grid of normalised (x, y)."""
    dtype = node.in_dtypes[0]
    grid = _op(g, node, "Transpose", [grid_nchw], "_grid_nhwc", perm=[0, 2, 3, 1])
    mode = "bilinear" if g.opset < 20 else "linear"
    attributes = {"align_corners": 1, "mode": mode, "padding_mode": "zeros"}
    sampled = _op(g, node, "GridSample", [wide(g, data, dtype), grid], "_sampled", **attributes)
    narrow(g, sampled, dtype, node.outputs[0])


def _affine_grid(node, g, loc, dtype, height, width):
    """(N, 6) affine matrices -> the (N, 2, H, W) source grid of rebind's ``grid_dst``."""
    target = g.const(_target_grid(np, height, width, dtype), dtype, node.name + "_grid_dst")
    matrices = _op(g, node, "Reshape", [loc, ints(g, [-1, 2, 3])], "_affine")
    grid = _op(g, node, "MatMul", [matrices, target], "_grid_src")
    return _op(g, node, "Reshape", [grid, ints(g, [-1, 2, height, width])], "_grid")


@converter("BilinearSampler")
def convert_bilinear_sampler(node, g):
    _need_grid_sample(node, g)
    grid = wide(g, node.inputs[1], node.in_dtypes[1])
    _grid_sample(node, g, node.inputs[0], grid)


@converter("SpatialTransformer")
def convert_spatial_transformer(node, g):
    _need_grid_sample(node, g)
    work = work_dtype(node.in_dtypes[0])
    loc = cast(g, node.inputs[1], work, node.in_dtypes[1])
    grid = _affine_grid(node, g, loc, work, *node.params.target_shape)
    _grid_sample(node, g, node.inputs[0], grid)


@converter("GridGenerator")
def convert_grid_generator(node, g):
    """Affine: the matrices times rebind's target grid; warp: (flow + pixel) / scale - 1."""
    p, dtype = node.params, node.in_dtypes[0]
    if p.transform_type == "affine":
        grid = _affine_grid(node, g, node.inputs[0], dtype, *p.target_shape)
        g.add_node("Identity", [grid], [node.outputs[0]])
        return
    height, width = node.in_shapes[0][2:]
    columns = np.broadcast_to(np.arange(width), (height, width))
    rows = np.broadcast_to(np.arange(height)[:, None], (height, width))
    pixels = g.const(np.stack([columns, rows])[None], dtype, node.name + "_pixels")
    scale = np.array([(width - 1) / 2, (height - 1) / 2], dtype).reshape(1, 2, 1, 1)
    moved = _op(g, node, "Add", [node.inputs[0], pixels], "_moved")
    scaled = _op(g, node, "Div", [moved, g.const(scale, dtype, node.name + "_scale")], "_scaled")
    g.add_node("Sub", [scaled, scalar(g, 1, dtype, node.name + "_one")], [node.outputs[0]])


# -- im2col and col2im -------------------------------------------------------------------
_MAX_WINDOWS = 1024  # kernel offsets im2col writes as one Slice each


@converter("im2col")
def convert_im2col(node, g):
    """One strided Slice of the zero-padded data per kernel offset, stacked on a new axis 2
    (row c * prod(kernel) + k of the columns), then the window positions flattened."""
    kernel, stride, dilate, pad = fill_window_params(node.params)
    if math.prod(kernel) > _MAX_WINDOWS:
        raise fail(node, g, f"im2col with {math.prod(kernel)} kernel offsets (over {_MAX_WINDOWS})")
    dtype, shape = node.in_dtypes[0], node.in_shapes[0]
    data = _zero_pad(g, node, node.inputs[0], list(pad), list(pad), dtype)
    positions = [
        (n + 2 * q - d * (k - 1) - 1) // s + 1
        for n, k, s, d, q in zip(shape[2:], kernel, stride, dilate, pad, strict=True)
    ]
    axes = ints(g, range(2, len(shape)), node.name + "_axes")
    steps = ints(g, stride, node.name + "_steps")
    slices = []
    for offset in np.ndindex(*kernel):
        begin = [o * d for o, d in zip(offset, dilate, strict=True)]
        end = [b + (m - 1) * s + 1 for b, m, s in zip(begin, positions, stride, strict=True)]
        window = _op(g, node, "Slice", [data, ints(g, begin), ints(g, end), axes, steps], "_k")
        slices.append(axes_input(g, node, "Unsqueeze", window, [2], g.fresh(node.name + "_u")))
    stacked = _op(g, node, "Concat", slices, "_stacked", axis=2)
    rows = shape[1] * math.prod(kernel)
    g.add_node("Reshape", [stacked, ints(g, [0, rows, -1], node.name + "_cols")], node.outputs)


@converter("col2im")
def convert_col2im(node, g):
    """ONNX's Col2Im (opset 18) sums the blocks back as rebind does."""
    if g.opset < 18:
        raise fail(node, g, "col2im (ONNX's Col2Im needs opset 18)")
    p = node.params
    kernel, stride, dilate, pad = fill_window_params(p)
    g.add_node(
        "Col2Im",
        [node.inputs[0], ints(g, p.output_size, "image_shape"), ints(g, kernel, "block_shape")],
        [node.outputs[0]],
        dilations=list(dilate),
        pads=[*pad, *pad],
        strides=list(stride),
    )
