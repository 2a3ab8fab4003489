"""What an export works from: the symbol and parameters loaded, and the plan.

``Plan`` holds the nodes inference needs (a loss layer's label and whatever
feeds only it are left out), the graph inputs with their shapes and dtypes,
and every shape and dtype rebind infers at those shapes.
"""

import os

import numpy as np

from ..errors import ShapeError
from ..ops.base import known
from ..symbol.graph import topological_order
from ..symbol.infer import infer_graph_shapes, infer_graph_types
from .errors import OnnxExportError

__all__ = ["Plan", "load_symbol", "load_params", "needed_nodes", "BATCH"]

BATCH = "batch"  # the symbolic batch dimension of a dynamic export


def load_symbol(sym):
    from ..symbol import Symbol, load

    if isinstance(sym, Symbol):
        return sym
    if isinstance(sym, str | os.PathLike):
        return load(os.fspath(sym))
    raise TypeError(f"export_model: sym must be a Symbol or a JSON file path, got {sym!r}")


def load_params(params):
    from .. import ndarray

    if isinstance(params, str | os.PathLike):
        params = ndarray.load(os.fspath(params))
    if isinstance(params, list | tuple) and len(params) == 2:
        params = {**params[0], **params[1]}
    if not isinstance(params, dict):
        raise TypeError(
            "export_model: params must be a dict, an (arg_params, aux_params) pair or a "
            f".params file path, got {type(params).__name__}"
        )
    return {_plain_name(k): _as_numpy(v) for k, v in params.items()}


def _plain_name(key):
    for prefix in ("arg:", "aux:"):
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


def _as_numpy(value):
    return value.asnumpy() if hasattr(value, "asnumpy") else np.asarray(value)


# -- planning: inputs, shapes, dtypes ------------------------------------------------
class Plan:
    """The graph's nodes with their inferred shapes and dtypes at the export shapes."""

    def __init__(self, heads, params, in_shapes, in_types, dynamic_input_shapes):
        self.heads = heads
        self.nodes = needed_nodes(heads)
        variables = [n for n in self.nodes if n.op is None]
        self.params = {n.name: params[n.name] for n in variables if n.name in params}
        self.inputs = [n.name for n in variables if n.name not in params]
        self.input_shapes = _per_input(self.inputs, in_shapes, "in_shapes", tuple)
        self.input_types = _per_input(self.inputs, _spread(in_types, self.inputs), "in_types")
        self.input_types = [np.dtype(t).name for t in self.input_types]
        self.dynamic_shapes = _dynamic_shapes(self.inputs, self.input_shapes, dynamic_input_shapes)
        self._infer()

    def _infer(self):
        given = dict(zip(self.inputs, self.input_shapes, strict=True))
        given.update({name: value.shape for name, value in self.params.items()})
        _, self.shapes = infer_graph_shapes(self.heads, given)
        _check_shapes_known(self.nodes, self.shapes, given)
        types = dict(zip(self.inputs, self.input_types, strict=True))
        _, self.types = infer_graph_types(self.heads, types)

    def shape(self, node, index=0):
        return tuple(self.shapes[(id(node), index)])

    def dtype(self, node, index=0):
        return self.types[(id(node), index)]


def _read_slots(node):
    """The inputs of ``node`` that inference reads: a loss layer does not read its label."""
    slots = (*node.argument_names(), *node.aux_names())
    return [
        entry
        for slot, entry in zip(slots, node.inputs, strict=True)
        if not (node.op.is_loss and slot == "label")
    ]


def needed_nodes(heads):
    """The nodes inference needs, in topological order: labels and what feeds only them
    (a label reshaped before the loss) are left out, as they are no graph inputs."""
    needed, stack = set(), [node for node, _ in heads]
    while stack:
        node = stack.pop()
        if id(node) not in needed:
            needed.add(id(node))
            if node.op is not None:
                stack.extend(child for child, _ in _read_slots(node))
    return [node for node in topological_order(heads) if id(node) in needed]


def _check_shapes_known(nodes, shapes, given):
    """A ShapeError naming the first needed value whose shape stays unknown."""
    for node in nodes:
        if node.op is None:
            continue
        entries = [(e, f"input {e[0].output_name(e[1])!r}") for e in _read_slots(node)]
        entries += [((node, i), f"output {i}") for i in range(node.num_outputs)]
        for (owner, index), what in entries:
            if not known(shapes.get((id(owner), index))):
                raise ShapeError(
                    f"{node.op.name} node {node.name!r}: cannot infer the shape of {what} "
                    f"(known so far: {shapes.get((id(owner), index))}); input shapes given: "
                    + (", ".join(f"{k}={tuple(v)}" for k, v in given.items()) or "none")
                )


def _spread(in_types, inputs):
    if isinstance(in_types, list | tuple):
        return list(in_types)
    return [in_types] * len(inputs)


def _per_input(inputs, values, what, convert=lambda v: v):
    if values is None:
        raise OnnxExportError(f"export_model: {what} is required, one per input {inputs}")
    values = list(values)
    if len(values) != len(inputs):
        raise OnnxExportError(
            f"export_model: {len(values)} {what} given for {len(inputs)} graph inputs "
            f"{inputs} (parameters and loss labels are not graph inputs)"
        )
    return [convert(v) for v in values]


def _dynamic_shapes(inputs, shapes, dynamic_input_shapes):
    """Each input's ONNX shape with symbolic dims as strings (axis 0 -> ``batch``)."""
    if dynamic_input_shapes is None:
        return [(BATCH, *shape[1:]) if shape else shape for shape in shapes]
    given = _per_input(inputs, dynamic_input_shapes, "dynamic_input_shapes", tuple)
    result = []
    for name, shape, dims in zip(inputs, shapes, given, strict=True):
        if len(dims) != len(shape):
            raise OnnxExportError(
                f"export_model: dynamic_input_shapes for {name!r} has {len(dims)} dims, "
                f"its shape {shape} has {len(shape)}"
            )
        result.append(tuple(_symbolic(name, axis, d) for axis, d in enumerate(dims)))
    return result


def _symbolic(name, axis, dim):
    if dim is None:
        return BATCH if axis == 0 else f"{name}_dim{axis}"
    return dim if isinstance(dim, str) else int(dim)
