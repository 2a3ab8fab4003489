"""Shape and type inference over a whole graph.

Each operator completes what it can of its inputs and outputs; sweeping the
nodes forward and then backward until nothing changes lets shapes flow both
ways (weights learn their shape from the data; an RNN begin state learns its
batch size from the layer that consumes it), as MXNet does.
"""

import numpy as np

from ..errors import ShapeError
from ..ops.base import ArgShapeMismatch, known, merge_shape
from ..ops.params import ParamError
from .graph import aux_variables, topological_order

__all__ = ["infer_graph_shapes", "infer_graph_types"]

MAX_SWEEPS = 64


def _variable_hint(node, key, convert):
    text = node.attrs.get(key)
    return None if text is None else convert(text)


def _shape_hint(text):
    from ..ops.params import _to_shape

    return _to_shape(text)


def infer_graph_shapes(heads, given):
    """Shapes of every entry: {(id(node), index): shape}, plus the topological order.

    Args:
        given: variable name -> shape supplied by the caller.
    """
    nodes = topological_order(heads)
    shapes = {}
    for node in nodes:
        if node.op is None:
            shapes[(id(node), 0)] = _variable_shape(node, given.get(node.name))
    ops = [n for n in nodes if n.op is not None]
    for sweep in range(MAX_SWEEPS):
        order = ops if sweep % 2 == 0 else ops[::-1]
        changed = sum(_infer_node(node, shapes, given) for node in order)
        if not changed and sweep:
            break
    return nodes, shapes


def _variable_shape(node, shape):
    """A variable's shape: the one given wins over a declared ``__shape__``, as in MXNet.

    A partly known given shape is completed from the declared one.
    """
    if known(shape):
        return tuple(shape)
    hint = _variable_hint(node, "__shape__", _shape_hint)
    try:
        return merge_shape(hint, shape, node.name)
    except ArgShapeMismatch:
        raise ShapeError(
            f"variable {node.name!r}: shape {tuple(shape)} given, but it "
            f"was declared with shape {hint}"
        ) from None


def _infer_node(node, shapes, given):
    params = node.params
    n_args = len(node.argument_names())
    in_keys = [(id(child), index) for child, index in node.inputs]
    out_keys = [(id(node), i) for i in range(node.num_outputs)]
    before = [shapes.get(k) for k in (*in_keys, *out_keys)]
    ins = [shapes.get(k) for k in in_keys[:n_args]]
    auxs = [shapes.get(k) for k in in_keys[n_args:]]
    outs = [shapes.get(k) for k in out_keys]
    try:
        ins, outs, auxs = node.op.infer_shape(params, ins, outs, auxs)
    except ArgShapeMismatch as exc:
        raise _op_mismatch(node, exc, ins, given) from None
    for key, value, label in zip(
        (*in_keys, *out_keys),
        (*ins, *auxs, *outs),
        (*node.argument_names(), *node.aux_names(), *["output"] * len(out_keys)),
        strict=True,
    ):
        try:
            shapes[key] = merge_shape(shapes.get(key), value, label)
        except ArgShapeMismatch as exc:
            raise ShapeError(
                f"{node.op.name} node {node.name!r}: argument {label!r} has shape {exc.expected}, "
                f"expected {exc.got}; input shapes given: {_describe(given)}"
            ) from None
    return before != [shapes.get(k) for k in (*in_keys, *out_keys)]


def _op_mismatch(node, exc, in_shapes, given):
    """The ShapeError for an op's ``mismatch``: node, argument, shapes, and what was given."""
    inputs = ", ".join(f"{n}={s}" for n, s in zip(node.argument_names(), in_shapes, strict=False))
    reason = f" ({exc.reason})" if exc.reason else ""
    return ShapeError(
        f"{node.op.name} node {node.name!r}: argument {exc.argument!r} has shape {exc.got}, "
        f"expected {exc.expected}{reason}; node inputs: {inputs}; input shapes given: "
        f"{_describe(given)}"
    )


def _describe(given):
    return ", ".join(f"{k}={tuple(v)}" for k, v in given.items()) or "none"


def unresolved(nodes, shapes, given):
    """A ShapeError naming the first node whose inputs stay unknown, or None."""
    for node in nodes:
        if node.op is None:
            continue
        labels = (*node.argument_names(), *node.aux_names())
        for (child, index), label in zip(node.inputs, labels, strict=True):
            if not known(shapes.get((id(child), index))):
                return ShapeError(
                    f"{node.op.name} node {node.name!r}: cannot infer the shape of argument "
                    f"{label!r} (from {child.output_name(index)!r}, known so far: "
                    f"{shapes.get((id(child), index))}); input shapes given: {_describe(given)}"
                )
        for i in range(node.num_outputs):
            if not known(shapes.get((id(node), i))):
                return ShapeError(
                    f"{node.op.name} node {node.name!r}: cannot infer the shape of "
                    f"output {i}; input shapes given: {_describe(given)}"
                )
    return None


def infer_graph_types(heads, given, default="float32"):
    """Dtype names of every entry, {(id(node), index): name}; ``default`` where none is known."""
    nodes = topological_order(heads)
    types = {}
    for node in nodes:
        if node.op is None:
            hint = _variable_hint(node, "__dtype__", _dtype_from_flag)
            types[(id(node), 0)] = given.get(node.name) or hint
    ops = [n for n in nodes if n.op is not None]
    for sweep in range(MAX_SWEEPS):
        changed = sum(_type_node(n, types) for n in (ops if sweep % 2 == 0 else ops[::-1]))
        if not changed and sweep:
            break
    for key, value in types.items():
        if value is None:
            types[key] = default
    return nodes, types


def _type_node(node, types):
    n_args = len(node.argument_names())
    in_keys = [(id(child), index) for child, index in node.inputs]
    out_keys = [(id(node), i) for i in range(node.num_outputs)]
    before = [types.get(k) for k in (*in_keys, *out_keys)]
    ins, outs, auxs = node.op.infer_types(
        node.params,
        [types.get(k) for k in in_keys[:n_args]],
        [types.get(k) for k in out_keys],
        [types.get(k) for k in in_keys[n_args:]],
        node=node.name,
    )
    for key, value in zip((*in_keys, *out_keys), (*ins, *auxs, *outs), strict=True):
        if value is not None and types.get(key) is None:
            types[key] = np.dtype(value).name
    return before != [types.get(k) for k in (*in_keys, *out_keys)]


_FLAG_DTYPES = {
    0: "float32",
    1: "float64",
    2: "float16",
    3: "uint8",
    4: "int32",
    5: "int8",
    6: "int64",
    7: "bool",
}


def _dtype_from_flag(text):
    try:
        return _FLAG_DTYPES[int(text)]
    except (ValueError, KeyError):
        raise ParamError(
            f"__dtype__ attribute {text!r} is not one of MXNet's dtype flags"
        ) from None


def arguments_and_aux(nodes):
    """(argument variable nodes, auxiliary variable nodes) in topological order."""
    aux = aux_variables(nodes)
    variables = [n for n in nodes if n.op is None]
    return [n for n in variables if id(n) not in aux], [n for n in variables if id(n) in aux]
