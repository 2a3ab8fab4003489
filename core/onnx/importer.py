"""``import_model`` and ``get_model_metadata``: an ONNX file as a rebind symbol and parameters.

The walk: load the model, refuse it at once if any node's operator has no
translation (the error lists every such operator type), then translate the
nodes in order (they are topologically sorted in a valid ONNX graph) with
the table of ``import_ops``. Initializers read as tensors become variables
named as in the file; those read as attributes (a Reshape's shape, a
Slice's bounds, ...) are used as constants and dropped. At the end the
variables backed by initializers are split, as MXNet does, by the symbol:
``list_arguments()`` into ``arg_params`` and ``list_auxiliary_states()``
(BatchNorm's moving mean and variance) into ``aux_params``.
"""

import os

import numpy as np

from .. import ndarray, symbol
from . import import_layers  # noqa: F401 - registers the layer translations
from .errors import OnnxImportError, require_onnx
from .import_ops import TRANSLATIONS

__all__ = ["import_model", "get_model_metadata", "supported_onnx_ops"]


def supported_onnx_ops():
    """The ONNX operator types (default domain) that ``import_model`` translates, sorted."""
    return sorted(TRANSLATIONS)


def import_model(model_file):
    """Read the ONNX model ``model_file`` into rebind (MXNet's ``mx.contrib.onnx.import_model``).

    Returns:
        ``(sym, arg_params, aux_params)``: the symbol (a Group when the graph has
        several outputs) and dicts of parameter name -> NDArray.

    Raises:
        OnnxImportError: naming every unsupported ONNX operator type (before
            anything is built), or the node whose attributes rebind cannot express.
    """
    onnx = require_onnx()
    model = onnx.load_model(os.fspath(model_file))
    _check_supported(model, model_file)
    reader = GraphReader(onnx, model)
    return reader.translate()


def get_model_metadata(model_file):
    """Names and shapes of the model's inputs and outputs (MXNet's ``get_model_metadata``).

    Returns:
        ``{'input_tensor_data': [(name, shape, elem_type)], 'output_tensor_data':
        [(name, shape)]}``: inputs without the initializers; a symbolic dimension
        reads 0; ``elem_type`` is the ONNX TensorProto element type, as MXNet 1.9.1
        gives it.
    """
    onnx = require_onnx()
    graph = onnx.load_model(os.fspath(model_file)).graph
    params = {tensor.name for tensor in graph.initializer}
    inputs = [
        (value.name, _static_shape(value), value.type.tensor_type.elem_type)
        for value in graph.input
        if value.name not in params
    ]
    outputs = [(value.name, _static_shape(value)) for value in graph.output]
    return {"input_tensor_data": inputs, "output_tensor_data": outputs}


def _static_shape(value):
    return tuple(dim.dim_value for dim in value.type.tensor_type.shape.dim)


def _check_supported(model, model_file):
    counts = {}
    for node in model.graph.node:
        key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        if key not in TRANSLATIONS:
            counts[key] = counts.get(key, 0) + 1
    if counts:
        listed = ", ".join(f"{op} ({n} node{'s' * (n > 1)})" for op, n in sorted(counts.items()))
        raise OnnxImportError(
            f"cannot import {os.fspath(model_file)!r}: unsupported ONNX operators: {listed}; "
            "rebind.onnx.importer.supported_onnx_ops() lists those that import"
        )


class GraphReader:
    """The state of one import: values read so far, constants, and parameter values.

    Translations (``import_ops``) call ``sym``, ``const``, ``param`` and
    ``op_name``; everything else is the walk.
    """

    def __init__(self, onnx, model):
        self.onnx = onnx
        self.opset = max(
            (o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=1
        )
        self.graph = model.graph
        self.constants = {t.name: onnx.numpy_helper.to_array(t) for t in self.graph.initializer}
        self.values = {}  # ONNX value name -> Symbol
        self.param_values = {}  # variable name -> np.ndarray
        self._taken = set(self.constants) | {v.name for v in self.graph.input}
        self._shapes = _inferred_shapes(onnx, model)

    # -- for translations ------------------------------------------------------------
    def sym(self, name):
        """The Symbol of ONNX value ``name``; an initializer becomes a parameter variable."""
        if name not in self.values:
            if name not in self.constants:
                raise OnnxImportError(f"ONNX value {name!r} is read before any node produces it")
            # rebind (as MXNet 1.x) has no 0-d arrays: a scalar is a (1,) parameter
            value = self.constants[name]
            self.param_values[name] = value.reshape(1) if value.ndim == 0 else value
            self.values[name] = symbol.var(name, shape=self.param_values[name].shape)
        return self.values[name]

    def const(self, name):
        """The value of ``name`` if it is an initializer or a Constant's output, else None."""
        return self.constants.get(name) if name else None

    def param(self, hint, value):
        """A new parameter variable (a repacked or transposed weight) named after ``hint``."""
        name = self.op_name(hint)
        self.param_values[name] = np.asarray(value)
        self.values[name] = symbol.var(name, shape=self.param_values[name].shape)
        return self.values[name]

    def shape(self, name):
        """The shape of ``name`` (a constant's, or ONNX shape inference's; dims may be None)."""
        if name in self.constants:
            return self.constants[name].shape
        return self._shapes.get(name)

    def op_name(self, hint):
        """A node or variable name not used yet in this import."""
        name, i = hint, 0
        while name in self._taken:
            i += 1
            name = f"{hint}_{i}"
        self._taken.add(name)
        return name

    # -- the walk -------------------------------------------------------------------------
    def translate(self):
        for value in self.graph.input:
            if value.name not in self.constants:
                self.values[value.name] = symbol.var(value.name)
        for index, node in enumerate(self.graph.node):
            self._translate_node(node, index)
        heads = [self.sym(value.name) for value in self.graph.output]
        out = heads[0] if len(heads) == 1 else symbol.Group(heads)
        return (out, *self._split_params(out))

    def _translate_node(self, node, index):
        attrs = {a.name: self.onnx.helper.get_attribute_value(a) for a in node.attribute}
        attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}
        node_name = self.op_name(node.name or f"{node.op_type.lower()}{index}")
        try:
            results = TRANSLATIONS[node.op_type](self, node, attrs, node_name)
        except OnnxImportError:
            raise
        except (ValueError, TypeError, NotImplementedError) as exc:
            raise OnnxImportError(
                f"ONNX {node.op_type} node {node.name or node_name!r}: cannot be translated: {exc}"
            ) from exc
        for output, result in zip(node.output, results, strict=False):
            if not output or result is None:
                continue
            if isinstance(result, np.ndarray):
                self.constants[output] = result
            else:
                self.values[output] = result

    def _split_params(self, out):
        def arrays(names):
            return {
                n: ndarray.array(self.param_values[n], dtype=self.param_values[n].dtype)
                for n in names
                if n in self.param_values
            }

        return arrays(out.list_arguments()), arrays(out.list_auxiliary_states())


def _inferred_shapes(onnx, model):
    """Value name -> shape (None for an unknown dim) from ONNX's shape inference, if it runs."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - shapes only refine translations; without them, fewer refine
        inferred = model
    graph = inferred.graph
    shapes = {}
    for value in (*graph.input, *graph.value_info, *graph.output):
        tensor = value.type.tensor_type
        if tensor.HasField("shape"):
            shapes[value.name] = tuple(
                d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim
            )
    return shapes
