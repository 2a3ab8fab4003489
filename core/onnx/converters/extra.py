"""Converters of the linalg helpers (det, slogdet, sumlogdiag, extract/make diag and
triangle, syrk, trmm), diag, khatri_rao, the internal twins (_grad_add,
_rnn_param_concat, _copyto), _onehot_encode, ravel/unravel and three densities.

Diagonals and packed triangles are Gathers of the flattened matrices at
rebind's own index lists (``ops.la_diag``), and the ``make`` direction a Gather
from the vector with one zero appended, so every value is copied, never
multiplied. The operators ONNX cannot hold are refused in refusals.py.

Det is ONNX's Det for float32 and float64 alike (the standard allows both);
ONNX Runtime 1.32 implements it for float32 only.
"""

import math

import numpy as np

from ...ops.la_diag import _diag_index, _packed_side, _trian_index
from ..graph import tensor_type
from . import CONVERTERS, converter
from .tensor_helpers import axes_input, cast, fail, ints, scalar

__all__ = []


def _op(g, node, op_type, inputs, hint, **attributes):
    return g.add_node(op_type, list(inputs), [g.fresh(node.name + hint)], **attributes)


def _flat_index(rows, cols, side):
    return np.asarray(rows, np.int64) * side + np.asarray(cols, np.int64)


# -- gathering from and scattering into square matrices ----------------------------------
def _gather_matrices(g, node, value, ndim, side, flat_index, output=None):
    """``value[..., rows, cols]`` of (..., side, side) matrices: (..., len(index))."""
    flat = _op(g, node, "Reshape", [value, ints(g, [0] * (ndim - 2) + [side * side])], "_flat")
    index = ints(g, flat_index, node.name + "_index")
    output = output or g.fresh(node.name + "_picked")
    return g.add_node("Gather", [flat, index], [output], axis=-1)


def _scatter_matrices(g, node, value, ndim, side, flat_index, output):
    """(..., m) ``value`` written at ``flat_index`` of (..., side, side) zeros."""
    m = len(flat_index)
    padded = _op(g, node, "Pad", [value, ints(g, [0] * (2 * ndim - 1) + [1])], "_zero_tail")
    picks = np.full(side * side, m, np.int64)
    picks[np.asarray(flat_index, np.int64)] = np.arange(m)
    gathered = _op(g, node, "Gather", [padded, ints(g, picks, node.name + "_picks")], "_g", axis=-1)
    shape = ints(g, [0] * (ndim - 1) + [side, side], node.name + "_square")
    return g.add_node("Reshape", [gathered, shape], [output])


def _linalg_index(node, side, triangle):
    p = node.params
    n = side - abs(p.offset)
    rows, cols = (
        _trian_index(np, n, p.offset, p.lower) if triangle else _diag_index(np, n, p.offset)
    )
    return _flat_index(rows, cols, side)


def _extract(triangle):
    def convert(node, g):
        shape = node.in_shapes[0]
        index = _linalg_index(node, shape[-1], triangle)
        _gather_matrices(g, node, node.inputs[0], len(shape), shape[-1], index, node.outputs[0])

    return convert


def _make(triangle):
    def convert(node, g):
        shape = node.in_shapes[0]
        n = _packed_side(shape[-1]) if triangle else shape[-1]
        side = n + abs(node.params.offset)
        index = _linalg_index(node, side, triangle)
        _scatter_matrices(g, node, node.inputs[0], len(shape), side, index, node.outputs[0])

    return convert


converter("_linalg_extractdiag")(_extract(False))
converter("_linalg_extracttrian")(_extract(True))
converter("_linalg_makediag")(_make(False))
converter("_linalg_maketrian")(_make(True))


@converter("_linalg_sumlogdiag")
def convert_sumlogdiag(node, g):
    shape = node.in_shapes[0]
    side = shape[-1]
    index = _flat_index(range(side), range(side), side)
    diagonal = _gather_matrices(g, node, node.inputs[0], len(shape), side, index)
    logs = _op(g, node, "Log", [diagonal], "_log")
    keep = int(len(shape) == 2)  # rebind gives (1,) for one matrix
    axes_input(g, node, "ReduceSum", logs, [-1], node.outputs[0], keepdims=keep)


# -- determinants --------------------------------------------------------------------------
def _det(node, g):
    det = _op(g, node, "Det", [node.inputs[0]], "_det")
    if len(node.in_shapes[0]) == 2:  # one matrix: rebind's output is (1,), ONNX's a scalar
        det = _op(g, node, "Reshape", [det, ints(g, [1])], "_det1")
    return det


@converter("_linalg_det")
def convert_det(node, g):
    g.add_node("Identity", [_det(node, g)], [node.outputs[0]])


@converter("_linalg_slogdet")
def convert_slogdet(node, g):
    """sign(det) and log|det| of ONNX's Det (equal to rebind's LU sums unless det over- or
    underflows the dtype, where rebind still has the logarithm)."""
    det = _det(node, g)
    g.add_node("Sign", [det], [node.outputs[0]])
    g.add_node("Log", [_op(g, node, "Abs", [det], "_abs")], [node.outputs[1]])


# -- syrk and trmm ----------------------------------------------------------------------------
def _swap_last(g, node, value, ndim, hint):
    perm = [*range(ndim - 2), ndim - 1, ndim - 2]
    return _op(g, node, "Transpose", [value], hint, perm=perm)


def _scaled(g, node, value, alpha):
    if alpha == 1:
        g.add_node("Identity", [value], [node.outputs[0]])
        return
    g.add_node("Mul", [value, scalar(g, alpha, node.out_dtypes[0], "alpha")], [node.outputs[0]])


@converter("_linalg_syrk")
def convert_syrk(node, g):
    p, a, ndim = node.params, node.inputs[0], len(node.in_shapes[0])
    swapped = _swap_last(g, node, a, ndim, "_aT")
    pair = [swapped, a] if p.transpose else [a, swapped]
    _scaled(g, node, _op(g, node, "MatMul", pair, "_product"), p.alpha)


@converter("_linalg_trmm")
def convert_trmm(node, g):
    """alpha * op(tri(A)) B (or B op(tri(A))); the triangle is a Where, not a product."""
    p, (a, b) = node.params, node.inputs
    shape = node.in_shapes[0]
    ndim, side = len(shape), shape[-1]
    ones = np.ones((side, side), bool)
    mask = g.const(np.tril(ones) if p.lower else np.triu(ones), bool, node.name + "_mask")
    zero = scalar(g, 0, node.in_dtypes[0], node.name + "_zero")
    tri = _op(g, node, "Where", [mask, a, zero], "_tri")
    if p.transpose:
        tri = _swap_last(g, node, tri, ndim, "_triT")
    pair = [b, tri] if p.rightside else [tri, b]
    _scaled(g, node, _op(g, node, "MatMul", pair, "_product"), p.alpha)


# -- diag and khatri_rao -------------------------------------------------------------------------
@converter("diag")
def convert_diag(node, g):
    """1-D: the matrix with data on diagonal k; else diagonal k of axes (axis1, axis2)."""
    p, shape = node.params, node.in_shapes[0]
    ndim = len(shape)
    if ndim == 1:
        side = shape[0] + abs(p.k)
        index = _flat_index(*_diag_index(np, shape[0], p.k), side)
        _scatter_matrices(g, node, node.inputs[0], 1, side, index, node.outputs[0])
        return
    a1, a2 = p.axis1 % ndim, p.axis2 % ndim
    length = node.out_shapes[0][-1]
    if length == 0 or (g.dynamic and 0 in (a1, a2)):
        raise fail(node, g, f"diag over axes ({a1}, {a2}) of shape {shape} (dynamic batch)")
    rest = [i for i in range(ndim) if i not in (a1, a2)]
    moved = _op(g, node, "Transpose", [node.inputs[0]], "_moved", perm=[*rest, a1, a2])
    index = _flat_index(*_diag_index(np, length, p.k), shape[a2])
    flat_shape = [0] * len(rest) + [shape[a1] * shape[a2]]
    flat = _op(g, node, "Reshape", [moved, ints(g, flat_shape)], "_flat")
    g.add_node("Gather", [flat, ints(g, index, node.name + "_index")], node.outputs, axis=-1)


@converter("khatri_rao")
def convert_khatri_rao(node, g):
    """Column-wise Kronecker product: (r1, 1, C) * (1, r2, C) -> (r1 r2, C), in turn."""
    columns = node.out_shapes[0][1]
    result = node.inputs[0]
    for i, matrix in enumerate(node.inputs[1:], start=1):
        left = axes_input(g, node, "Unsqueeze", result, [1], g.fresh(node.name + "_l"))
        right = axes_input(g, node, "Unsqueeze", matrix, [0], g.fresh(node.name + "_r"))
        product = _op(g, node, "Mul", [left, right], "_outer")
        last = i == len(node.inputs) - 1
        output = node.outputs[0] if last else g.fresh(node.name + "_kr")
        result = g.add_node("Reshape", [product, ints(g, [-1, columns])], [output])
    if len(node.inputs) == 1:
        g.add_node("Identity", [result], [node.outputs[0]])


# -- the internal twins -----------------------------------------------------------------------
@converter("_grad_add")
def convert_grad_add(node, g):
    """elemwise_add under its executor name."""
    CONVERTERS["elemwise_add"](node, g)


@converter("_rnn_param_concat")
def convert_rnn_param_concat(node, g):
    """Concat under the fused RNN's name (Concat's params)."""
    CONVERTERS["Concat"](node, g)


@converter("_copyto")
def convert_copyto(node, g):
    g.add_node("Identity", [node.inputs[0]], [node.outputs[0]])


# -- indices ------------------------------------------------------------------------------------
@converter("_onehot_encode")
def convert_onehot_encode(node, g):
    """Row i is 1 at column lhs[i] (truncated), rhs gives the shape.

    An index outside [0, depth) matches no column: its row stays zero, as in MXNet.
    """
    depth = node.out_shapes[0][1]
    index = cast(g, node.inputs[0], "int64", node.in_dtypes[0], node.name + "_int")
    column = axes_input(g, node, "Unsqueeze", index, [1], g.fresh(node.name + "_column"))
    hits = _op(g, node, "Equal", [column, ints(g, range(depth), node.name + "_range")], "_hits")
    g.add_node("Cast", [hits], [node.outputs[0]], to=tensor_type(node.out_dtypes[0]))


@converter("_ravel_multi_index")
def convert_ravel_multi_index(node, g):
    """sum over rows of int64(data[i]) * prod(shape[i + 1:])."""
    shape, dtype = node.params.shape, node.in_dtypes[0]
    strides = [[math.prod(shape[i + 1 :])] for i in range(len(shape))]
    coords = cast(g, node.inputs[0], "int64", dtype, node.name + "_int")
    weighted = _op(g, node, "Mul", [coords, g.const(strides, np.int64, "strides")], "_weighted")
    flat = axes_input(g, node, "ReduceSum", weighted, [0], g.fresh(node.name + "_flat"), keepdims=0)
    g.add_node("Cast", [flat], [node.outputs[0]], to=tensor_type(dtype))


@converter("_unravel_index")
def convert_unravel_index(node, g):
    """Floor remainders by the trailing sizes; the first coordinate keeps what is left."""
    shape, dtype = node.params.shape, node.in_dtypes[0]
    rest = cast(g, node.inputs[0], "int64", dtype, node.name + "_int")
    coords = []
    for size in reversed(shape[1:]):
        divisor = ints(g, [size])
        coord = _op(g, node, "Mod", [rest, divisor], "_mod")  # fmod=0: Python's floor remainder
        coords.append(coord)
        exact = _op(g, node, "Sub", [rest, coord], "_exact")
        rest = _op(g, node, "Div", [exact, divisor], "_rest")  # exact: no rounding to choose
    coords.append(rest)
    rows = [
        axes_input(g, node, "Unsqueeze", c, [0], g.fresh(node.name + "_row")) for c in coords[::-1]
    ]
    stacked = _op(g, node, "Concat", rows, "_stacked", axis=0)
    g.add_node("Cast", [stacked], [node.outputs[0]], to=tensor_type(dtype))


# -- densities -----------------------------------------------------------------------------------
def _pdf(log_density):
    """A converter computing ``log_density`` in float64 as rebind does, exp unless is_log."""

    def convert(node, g):
        sample_ndim = len(node.in_shapes[0])
        x = cast(g, node.inputs[0], "float64", node.in_dtypes[0], node.name + "_x")
        params = []
        for value, shape, dtype in zip(
            node.inputs[1:], node.in_shapes[1:], node.in_dtypes[1:], strict=True
        ):
            wide = cast(g, value, "float64", dtype, node.name + "_param")
            extra = list(range(len(shape), sample_ndim))
            if extra:
                wide = axes_input(g, node, "Unsqueeze", wide, extra, g.fresh(node.name + "_b"))
            params.append(wide)
        log_pdf = log_density(g, node, x, *params)
        out = log_pdf if node.params.is_log else _op(g, node, "Exp", [log_pdf], "_pdf")
        g.add_node("Cast", [out], [node.outputs[0]], to=tensor_type(node.out_dtypes[0]))

    return convert


def _f64(g, value):
    return scalar(g, value, "float64", "f64")


def _normal_log(g, node, x, mu, sigma):
    centered = _op(g, node, "Sub", [x, mu], "_c")
    square = _op(g, node, "Mul", [centered, centered], "_c2")
    half = _op(g, node, "Mul", [_f64(g, -0.5), square], "_half")
    ratio = _op(g, node, "Div", [half, _op(g, node, "Mul", [sigma, sigma], "_s2")], "_ratio")
    norm = _op(g, node, "Mul", [_f64(g, math.sqrt(2.0 * math.pi)), sigma], "_norm")
    return _op(g, node, "Sub", [ratio, _op(g, node, "Log", [norm], "_lognorm")], "_log_pdf")


def _uniform_log(g, node, x, low, high):
    width = _op(g, node, "Sub", [high, low], "_width")
    negative = _op(g, node, "Neg", [_op(g, node, "Log", [width], "_logw")], "_neg")
    return _op(g, node, "Expand", [negative, _op(g, node, "Shape", [x], "_xs")], "_log_pdf")


def _exponential_log(g, node, x, lam):
    scaled = _op(g, node, "Mul", [lam, x], "_lx")
    return _op(g, node, "Sub", [_op(g, node, "Log", [lam], "_loglam"), scaled], "_log_pdf")


converter("_random_pdf_normal")(_pdf(_normal_log))
converter("_random_pdf_uniform")(_pdf(_uniform_log))
converter("_random_pdf_exponential")(_pdf(_exponential_log))
