"""Converters of slicing, flipping, tiling and broadcasting: slice (crop), slice_axis,
slice_like, reverse (flip), tile, repeat, broadcast_to, broadcast_axis,
broadcast_like, zeros_like and ones_like.

Bounds stay relative (negative indices, INT64_MAX for "to the end") and
target shapes come from ``Shape`` where an input dimension decides them, so
every converter here works with a dynamic batch.
"""

import numpy as np

from ..errors import require_onnx
from . import converter
from .tensor_helpers import INT64_MAX, INT64_MIN, axes_input, ints, reshape, shape_of

__all__ = []


def _axis(axis, ndim):
    return axis + ndim if axis < 0 else axis


def _slice(g, data, starts, ends, axes, steps, output):
    inputs = [data, ints(g, starts, "starts"), ints(g, ends, "ends"), ints(g, axes, "axes")]
    return g.add_node("Slice", [*inputs, ints(g, steps, "steps")], [output])


@converter("slice")
def convert_slice(node, g):
    p = node.params
    starts, ends, axes, steps = [], [], [], []
    for axis, (begin, end) in enumerate(zip(p.begin, p.end, strict=True)):
        step = p.step[axis] if p.step and p.step[axis] is not None else 1
        if step > 0:
            starts.append(0 if begin is None else begin)
            ends.append(INT64_MAX if end is None else end)
        else:  # ONNX clamps INT64_MAX to the last element, INT64_MIN to "before 0"
            starts.append(INT64_MAX if begin is None else begin)
            ends.append(INT64_MIN if end is None else end)
        axes.append(axis)
        steps.append(step)
    if not axes:
        g.add_node("Identity", [node.inputs[0]], [node.outputs[0]])
        return
    _slice(g, node.inputs[0], starts, ends, axes, steps, node.outputs[0])


@converter("slice_axis")
def convert_slice_axis(node, g):
    p = node.params
    axis = _axis(p.axis, len(node.in_shapes[0]))
    end = INT64_MAX if p.end is None else p.end
    _slice(g, node.inputs[0], [p.begin], [end], [axis], [1], node.outputs[0])


@converter("slice_like")
def convert_slice_like(node, g):
    ndim = len(node.in_shapes[0])
    axes = [_axis(a, ndim) for a in node.params.axes] or list(range(ndim))
    like_shape = shape_of(g, node.inputs[1])
    ends = g.add_node("Gather", [like_shape, ints(g, axes, "axes")], [g.fresh("ends")], axis=0)
    inputs = [node.inputs[0], ints(g, [0] * len(axes), "starts"), ends, ints(g, axes, "axes")]
    g.add_node("Slice", inputs, [node.outputs[0]])


@converter("reverse")
def convert_reverse(node, g):
    ndim = len(node.in_shapes[0])
    axes = sorted({_axis(a, ndim) for a in node.params.axis})
    if not axes:
        g.add_node("Identity", [node.inputs[0]], [node.outputs[0]])
        return
    count = len(axes)
    starts, ends = [INT64_MAX] * count, [INT64_MIN] * count
    _slice(g, node.inputs[0], starts, ends, axes, [-1] * count, node.outputs[0])


# -- replication ---------------------------------------------------------------------


@converter("tile")
def convert_tile(node, g):
    reps, data = tuple(node.params.reps), node.inputs[0]
    ndim = len(node.in_shapes[0])
    if len(reps) > ndim:  # numpy.tile: the data gains leading axes of size 1
        lead = list(range(len(reps) - ndim))
        data = axes_input(g, node, "Unsqueeze", data, lead, g.fresh(f"{node.name}_lifted"))
    reps = (1,) * (ndim - len(reps)) + reps
    g.add_node("Tile", [data, ints(g, reps, "repeats")], [node.outputs[0]])


@converter("repeat")
def convert_repeat(node, g):
    p, shape = node.params, node.in_shapes[0]
    data, name = node.inputs[0], node.name
    if p.axis is None:
        flat = g.add_node("Reshape", [data, ints(g, [-1, 1])], [g.fresh(f"{name}_flat")])
        tiled = g.add_node("Tile", [flat, ints(g, [1, p.repeats])], [g.fresh(f"{name}_tiled")])
        g.add_node("Reshape", [tiled, ints(g, [-1])], [node.outputs[0]])
        return
    # each element gets its copies on a new axis after its own, which then merges into it
    axis, ndim = _axis(p.axis, len(shape)), len(shape)
    lifted = axes_input(g, node, "Unsqueeze", data, [axis + 1], g.fresh(f"{name}_lifted"))
    reps = [1] * (ndim + 1)
    reps[axis + 1] = p.repeats
    tiled = g.add_node("Tile", [lifted, ints(g, reps)], [g.fresh(f"{name}_tiled")])
    terms = [("dim", i) for i in range(axis)] + [("prod", axis, axis + 1)]
    terms += [("dim", i) for i in range(axis + 2, ndim + 1)]
    reshape(g, tiled, terms, node.out_shapes[0], node.outputs[0])


# -- broadcasting --------------------------------------------------------------------


def _expand(g, node, target):
    g.add_node("Expand", [node.inputs[0], target], [node.outputs[0]])


@converter("broadcast_to")
def convert_broadcast_to(node, g):
    # MXNet's 0 keeps the input's size; ONNX's Expand keeps it for a target of 1
    _expand(g, node, ints(g, [d or 1 for d in node.params.shape], "shape"))


@converter("broadcast_axis")
def convert_broadcast_axis(node, g):
    ndim = len(node.in_shapes[0])
    target = [1] * ndim
    for axis, size in zip(node.params.axis, node.params.size, strict=True):
        target[_axis(axis, ndim)] = size
    _expand(g, node, ints(g, target, "shape"))


@converter("broadcast_like")
def convert_broadcast_like(node, g):
    p = node.params
    rhs_shape = shape_of(g, node.inputs[1])
    if p.lhs_axes is None or p.rhs_axes is None:
        _expand(g, node, rhs_shape)
        return
    lhs_ndim, rhs_ndim = len(node.in_shapes[0]), len(node.in_shapes[1])
    sources = {
        _axis(la, lhs_ndim): _axis(ra, rhs_ndim)
        for la, ra in zip(p.lhs_axes, p.rhs_axes, strict=True)
    }
    pieces = []
    for axis in range(lhs_ndim):
        if axis in sources:
            index = ints(g, [sources[axis]], "index")
            pieces.append(g.add_node("Gather", [rhs_shape, index], [g.fresh("dim")], axis=0))
        else:
            pieces.append(ints(g, [1]))
    _expand(g, node, g.add_node("Concat", pieces, [g.fresh("target_shape")], axis=0))


def _filled(value):
    def convert(node, g):
        onnx = require_onnx()
        fill = np.asarray([value], dtype=node.out_dtypes[0])
        tensor = onnx.numpy_helper.from_array(fill, name=f"{node.name}_value")
        shape = shape_of(g, node.inputs[0])
        g.add_node("ConstantOfShape", [shape], [node.outputs[0]], value=tensor)

    return convert


converter("zeros_like")(_filled(0))
converter("ones_like")(_filled(1))
