"""Small builders the tensor, element-wise and reduction converters share.

Constants of a given dtype, casts, axis lists, runtime shapes and MXNet's
reshape codes as ONNX values. Nothing here registers a converter.

Shapes: with ``g.dynamic`` the batch size in ``node.in_shapes`` is only an
example, so a shape that contains an input dimension is computed in the graph
(``Shape`` -> ``Gather`` -> ``Concat``) unless ONNX's own reshape codes (0, -1)
can say it; without ``g.dynamic`` the inferred output shape is used as is.
"""

import numpy as np

from ..errors import OnnxExportError
from ..graph import tensor_type

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "axes_input",
    "cast",
    "fail",
    "ints",
    "reshape",
    "reshape_terms",
    "runtime_dims",
    "scalar",
    "shape_of",
]

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


def fail(node, g, what):
    """The contract's error for an attribute combination ONNX cannot express."""
    return OnnxExportError(
        f"{node.op.name} node {node.name!r}: {what} is not expressible in ONNX opset {g.opset}"
    )


def ints(g, values, hint="ints"):
    """A 1-D int64 initializer."""
    return g.const(np.asarray(list(values), dtype=np.int64).reshape(-1), np.int64, hint)


def scalar(g, value, dtype, hint="scalar"):
    """A 0-d initializer of ``dtype`` (broadcasts against any shape)."""
    return g.const(np.asarray(value).astype(dtype), dtype, hint)


def cast(g, value, dtype, have=None, hint="cast"):
    """``value`` as ``dtype`` (a NumPy dtype name); no node when ``have`` already matches."""
    if have is not None and np.dtype(have) == np.dtype(dtype):
        return value
    return g.add_node("Cast", [value], [g.fresh(hint)], to=tensor_type(dtype))


def axes_input(g, node, op_type, data, axes, output, **attributes):
    """An ONNX reduction/squeeze with ``axes`` as input (opset >= 13 or 18) or attribute."""
    takes_input = op_type in ("ReduceSum", "Squeeze", "Unsqueeze") or g.opset >= 18
    if takes_input:
        return g.add_node(op_type, [data, ints(g, axes, "axes")], [output], **attributes)
    return g.add_node(op_type, [data], [output], axes=list(axes), **attributes)


def shape_of(g, value, hint="shape"):
    """The runtime shape of ``value`` (1-D int64)."""
    return g.add_node("Shape", [value], [g.fresh(hint)])


def _dim(g, shape, i):
    return g.add_node("Gather", [shape, ints(g, [i], "index")], [g.fresh("dim")], axis=0)


# -- MXNet's reshape codes as terms ----------------------------------------------------
# A term says where one output dimension comes from: ("const", k), ("dim", i) input
# dimension i, ("prod", i, j) input dims i*j, ("div", i, k) input dim i // k, ("infer",).


def _forward_terms(spec, ndim):
    terms, src, j = [], 0, 0
    while j < len(spec):
        code = spec[j]
        if code > 0:
            terms.append(("const", code))
            src += 1
        elif code == -1:
            terms.append(("infer",))
            src += 1
        elif code == 0:
            terms.append(("dim", src))
            src += 1
        elif code == -2:
            terms.extend(("dim", i) for i in range(src, ndim))
            src = ndim
        elif code == -3:
            terms.append(("prod", src, src + 1))
            src += 2
        elif code == -4:
            first, second = spec[j + 1 : j + 3]
            terms.append(("div", src, second) if first == -1 else ("const", first))
            terms.append(("div", src, first) if second == -1 else ("const", second))
            src, j = src + 1, j + 2
        else:
            raise ValueError(f"reshape code {code} in {spec}")
        j += 1
    return terms


def reshape_terms(spec, ndim, reverse=False):
    """Terms for MXNet reshape ``spec`` applied to an ``ndim``-D input."""
    if not reverse:
        return _forward_terms(tuple(spec), ndim)
    flipped = _forward_terms(tuple(spec)[::-1], ndim)[::-1]
    mirror = ndim - 1
    return [(t[0], *[mirror - i for i in t[1:]]) if t[0] in ("dim", "prod") else t for t in flipped]


def _onnx_code(term, position):
    """The ONNX Reshape code for ``term`` at output ``position``, or None if none fits."""
    if term[0] == "const":
        return term[1]
    if term[0] == "infer":
        return -1
    if term == ("dim", position):
        return 0
    return None


def runtime_dims(g, value, terms):
    """A 1-D int64 shape built in the graph from ``terms`` over ``value``'s shape."""
    shape, pieces = shape_of(g, value), []
    for term in terms:
        kind = term[0]
        if kind == "const":
            pieces.append(ints(g, [term[1]]))
        elif kind == "infer":
            pieces.append(ints(g, [-1]))
        elif kind == "dim":
            pieces.append(_dim(g, shape, term[1]))
        elif kind == "prod":
            first, second = _dim(g, shape, term[1]), _dim(g, shape, term[2])
            pieces.append(g.add_node("Mul", [first, second], [g.fresh("dims")]))
        else:  # div
            divisor = ints(g, [term[2]])
            pieces.append(g.add_node("Div", [_dim(g, shape, term[1]), divisor], [g.fresh("dim")]))
    return g.add_node("Concat", pieces, [g.fresh("target_shape")], axis=0)


def reshape(g, value, terms, static, output):
    """Reshape ``value`` to ``static`` (fixed shapes) or to ``terms`` (dynamic batch).

    ONNX's own codes (0 copy, -1 infer) are used where they say the same as the
    term; one term they cannot say becomes -1 when no other -1 exists;
    otherwise the shape is computed at run time.
    """
    if not g.dynamic:
        return g.add_node("Reshape", [value, ints(g, static, "shape")], [output])
    codes = [_onnx_code(t, i) for i, t in enumerate(terms)]
    open_ = [i for i, c in enumerate(codes) if c is None]
    if len(open_) == 1 and -1 not in codes:
        codes[open_[0]] = -1
    if None in codes:
        target = runtime_dims(g, value, terms)
    else:
        target = ints(g, codes, "shape")
    return g.add_node("Reshape", [value, target], [output])
