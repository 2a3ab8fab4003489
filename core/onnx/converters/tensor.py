"""Converters of the shape operators: Reshape (MXNet's codes 0, -1, -2, -3, -4 and
reverse), Flatten, transpose, SwapAxis, expand_dims, squeeze, reshape_like,
Concat, stack, SliceChannel, _split_v2, shape_array and size_array.

Slicing, tiling and broadcasting are in tensor_slice.py; gathers, sorting and
matrix products in tensor_index.py.
"""

from . import converter
from .tensor_helpers import (
    INT64_MAX,
    axes_input,
    fail,
    ints,
    reshape,
    reshape_terms,
    shape_of,
)

__all__ = []


def _axis(axis, ndim):
    return axis + ndim if axis < 0 else axis


@converter("Reshape")
def convert_reshape(node, g):
    p, ndim = node.params, len(node.in_shapes[0])
    static = node.out_shapes[0]
    if p.shape:
        terms = reshape_terms(p.shape, ndim, p.reverse)
    elif p.target_shape is not None:
        terms = _legacy_terms(p)
    elif g.dynamic:
        raise fail(node, g, "a Reshape without shape or target_shape (with a dynamic batch)")
    else:
        terms = [("const", d) for d in static]
    reshape(g, node.inputs[0], terms, static, node.outputs[0])


def _legacy_terms(p):
    """target_shape: 0 marks the one inferred dimension; keep_highest keeps dimension 0."""
    terms = [("infer",) if d == 0 else ("const", d) for d in p.target_shape]
    if p.keep_highest and terms:
        terms[0] = ("dim", 0)
    return terms


@converter("Flatten")
def convert_flatten(node, g):
    g.add_node("Flatten", [node.inputs[0]], [node.outputs[0]], axis=1)


@converter("transpose")
def convert_transpose(node, g):
    ndim = len(node.in_shapes[0])
    axes = node.params.axes
    perm = [_axis(a, ndim) for a in axes] if axes else list(range(ndim - 1, -1, -1))
    g.add_node("Transpose", [node.inputs[0]], [node.outputs[0]], perm=perm)


@converter("SwapAxis")
def convert_swap_axis(node, g):
    ndim = len(node.in_shapes[0])
    first, second = _axis(node.params.dim1, ndim), _axis(node.params.dim2, ndim)
    perm = list(range(ndim))
    perm[first], perm[second] = perm[second], perm[first]
    g.add_node("Transpose", [node.inputs[0]], [node.outputs[0]], perm=perm)


@converter("expand_dims")
def convert_expand_dims(node, g):
    axis = _axis(node.params.axis, len(node.in_shapes[0]) + 1)
    axes_input(g, node, "Unsqueeze", node.inputs[0], [axis], node.outputs[0])


@converter("squeeze")
def convert_squeeze(node, g):
    shape = node.in_shapes[0]
    if node.params.axis is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
        if g.dynamic and 0 in axes:
            raise fail(node, g, "squeeze without axis of a batch exported with size 1")
    else:
        axes = sorted({_axis(a, len(shape)) for a in node.params.axis})
    if len(axes) == len(shape):  # MXNet's arrays are never 0-d: everything squeezed is (1,)
        g.add_node("Reshape", [node.inputs[0], ints(g, [1])], [node.outputs[0]])
    elif not axes:
        g.add_node("Identity", [node.inputs[0]], [node.outputs[0]])
    else:
        axes_input(g, node, "Squeeze", node.inputs[0], axes, node.outputs[0])


@converter("reshape_like")
def convert_reshape_like(node, g):
    p = node.params
    lhs_ndim, rhs_ndim = len(node.in_shapes[0]), len(node.in_shapes[1])
    lb, le = _span(p.lhs_begin, p.lhs_end, lhs_ndim)
    rb, re = _span(p.rhs_begin, p.rhs_end, rhs_ndim)
    if not g.dynamic:
        target = ints(g, node.out_shapes[0], "shape")
    else:
        lhs_shape, rhs_shape = shape_of(g, node.inputs[0]), shape_of(g, node.inputs[1])
        pieces = [
            _shape_slice(g, lhs_shape, 0, lb),
            _shape_slice(g, rhs_shape, rb, re),
            _shape_slice(g, lhs_shape, le, lhs_ndim),
        ]
        pieces = [piece for piece in pieces if piece is not None]
        target = g.add_node("Concat", pieces, [g.fresh("target_shape")], axis=0)
    g.add_node("Reshape", [node.inputs[0], target], [node.outputs[0]])


def _span(begin, end, ndim):
    first = 0 if begin is None else _axis(begin, ndim)
    return first, ndim if end is None else _axis(end, ndim)


def _shape_slice(g, shape, start, stop):
    if start >= stop:
        return None
    return g.add_node("Slice", [shape, ints(g, [start]), ints(g, [stop])], [g.fresh("dims")])


# -- joining and splitting ------------------------------------------------------------


@converter("Concat")
def convert_concat(node, g):
    axis = _axis(node.params.dim, len(node.in_shapes[0]))
    g.add_node("Concat", list(node.inputs), [node.outputs[0]], axis=axis)


@converter("stack")
def convert_stack(node, g):
    axis = _axis(node.params.axis, len(node.in_shapes[0]) + 1)
    expanded = [
        axes_input(g, node, "Unsqueeze", name, [axis], g.fresh(f"{node.name}_unsqueezed"))
        for name in node.inputs
    ]
    g.add_node("Concat", expanded, [node.outputs[0]], axis=axis)


@converter("SliceChannel")
def convert_slice_channel(node, g):
    p, shape = node.params, node.in_shapes[0]
    axis = _axis(p.axis, len(shape))
    parts = (
        [g.fresh(f"{node.name}_part") for _ in node.outputs]
        if p.squeeze_axis
        else list(node.outputs)
    )
    if g.opset >= 18:
        g.add_node("Split", [node.inputs[0]], parts, axis=axis, num_outputs=p.num_outputs)
    else:
        sizes = ints(g, [shape[axis] // p.num_outputs] * p.num_outputs, "split")
        g.add_node("Split", [node.inputs[0], sizes], parts, axis=axis)
    if p.squeeze_axis:
        for part, output in zip(parts, node.outputs, strict=True):
            if len(shape) == 1:  # a 1-D input gives (1,) pieces, as MXNet's never-0-d rule
                g.add_node("Identity", [part], [output])
            else:
                axes_input(g, node, "Squeeze", part, [axis], output)


@converter("_split_v2")
def convert_split_v2(node, g):
    """Pieces starting at ``indices`` (or equal ``sections``), each one Slice."""
    p, shape = node.params, node.in_shapes[0]
    axis = _axis(p.axis, len(shape))
    if p.sections > 0:
        step = shape[axis] // p.sections
        starts = [i * step for i in range(p.sections)]
    else:
        starts = list(p.indices)
    ends = [*starts[1:], INT64_MAX]
    for start, end, output in zip(starts, ends, node.outputs, strict=True):
        bounds = [ints(g, [start], "starts"), ints(g, [end], "ends"), ints(g, [axis], "axes")]
        if not p.squeeze_axis:
            g.add_node("Slice", [node.inputs[0], *bounds], [output])
            continue
        piece = g.add_node("Slice", [node.inputs[0], *bounds], [g.fresh(f"{node.name}_piece")])
        axes_input(g, node, "Squeeze", piece, [axis], output)


# -- shapes as arrays -------------------------------------------------------------------


@converter("shape_array")
def convert_shape_array(node, g):
    g.add_node("Shape", [node.inputs[0]], [node.outputs[0]])


@converter("size_array")
def convert_size_array(node, g):
    size = g.add_node("Size", [node.inputs[0]], [g.fresh(f"{node.name}_size")])
    g.add_node("Reshape", [size, ints(g, [1])], [node.outputs[0]])
