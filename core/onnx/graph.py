"""What a converter sees: one rebind node (``ExportNode``) and the graph being built.

``ExportGraph`` collects ONNX nodes and initializers while the exporter walks
rebind's graph; converters call ``add_node``, ``const`` and ``fresh`` and read
weights with ``param``. Nothing here touches the file system.
"""

import itertools

import attrs
import numpy as np

from .errors import OnnxExportError, require_onnx

__all__ = ["ExportNode", "ExportGraph", "tensor_type"]


def tensor_type(dtype):
    """The ONNX TensorProto element type of a NumPy dtype (or dtype name)."""
    onnx = require_onnx()
    return onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


@attrs.frozen
class ExportNode:
    """One rebind operator node, with ONNX value names and inferred shapes and dtypes.

    ``inputs`` lists the arguments then the auxiliary states (``""`` for an input
    inference does not read: a loss layer's label); ``outputs`` the visible
    outputs, each of which the converter must produce. Shapes are
    those of the export shapes: with ``g.dynamic`` the batch size in them is
    only an example and must not be baked into constants.
    """

    name: str
    op: object
    params: object
    attrs: dict
    inputs: tuple
    outputs: tuple
    in_shapes: tuple
    out_shapes: tuple
    in_dtypes: tuple
    out_dtypes: tuple


class ExportGraph:
    """The ONNX graph under construction: nodes, initializers, and value names in use.

    Args:
        opset: the ONNX opset version of the export.
        dynamic: whether the batch axis is symbolic.
        params: parameter name -> NumPy array (the initializers to start with).
        readers: parameter name -> number of rebind nodes reading it.
        batch_input: the graph input whose axis 0 is the batch (for ``batch_dim``).
    """

    def __init__(self, opset, dynamic=False, params=None, readers=None, batch_input=None):
        self.opset = int(opset)
        self._batch_input = batch_input
        self._batch_dim = None
        self.dynamic = bool(dynamic)
        self.nodes = []
        self.initializers = dict(params or {})
        self._readers = dict(readers or {})
        self._taken = set(self.initializers)
        self._node_ids = itertools.count()

    # -- names --------------------------------------------------------------------
    def reserve(self, name):
        """Mark ``name`` as used (graph inputs, outputs and rebind entries)."""
        self._taken.add(name)
        return name

    def fresh(self, hint):
        """A value name not used yet: ``hint`` itself, or ``hint`` with a number."""
        name = hint
        for i in itertools.count(1):
            if name not in self._taken:
                break
            name = f"{hint}_{i}"
        return self.reserve(name)

    # -- building -----------------------------------------------------------------
    def add_node(self, op_type, inputs, outputs, **attributes):
        """Append an ONNX node (``onnx.helper.make_node``); a generated node name.

        ``outputs`` may be one name or a list; ``""`` in ``inputs`` skips an
        optional input. Returns the output name when there is one, else the list.
        """
        onnx = require_onnx()
        outputs = [outputs] if isinstance(outputs, str) else list(outputs)
        for name in outputs:
            self.reserve(name)
        node_name = f"{op_type}_{next(self._node_ids)}"
        self.nodes.append(
            onnx.helper.make_node(op_type, list(inputs), outputs, name=node_name, **attributes)
        )
        return outputs[0] if len(outputs) == 1 else outputs

    def const(self, value, dtype=None, hint="const"):
        """A new initializer holding ``np.asarray(value, dtype)``; returns its name."""
        name = self.fresh(hint)
        self.initializers[name] = np.asarray(value, dtype)
        return name

    def batch_dim(self):
        """A 1-D int64 value holding the run-time batch size (axis 0 of the first input).

        For values whose shape rebind infers from the batch without reading
        any input (an RNN begin state ``_zeros(shape=(0, H))``): with
        ``g.dynamic`` they must take the batch from here.
        """
        if self._batch_dim is None:
            if self._batch_input is None:
                raise OnnxExportError("the exported graph has no input to take a batch size from")
            shape = self.add_node("Shape", [self._batch_input], [self.fresh("input_shape")])
            begin = self.const([0], np.int64, "batch_begin")
            end = self.const([1], np.int64, "batch_end")
            self._batch_dim = self.add_node("Slice", [shape, begin, end], [self.fresh("batch")])
        return self._batch_dim

    # -- parameters ---------------------------------------------------------------
    def param(self, name):
        """The exported value of parameter (initializer) ``name``, or None if it is not one."""
        return self.initializers.get(name)

    def readers(self, name):
        """How many rebind nodes read parameter ``name`` (0 for a computed value)."""
        return self._readers.get(name, 0)

    def set_param(self, name, array):
        """Replace the value of parameter ``name``; only when a single node reads it."""
        if name not in self.initializers:
            raise OnnxExportError(f"set_param: {name!r} is not a parameter of the exported graph")
        if self.readers(name) > 1:
            raise OnnxExportError(
                f"set_param: parameter {name!r} is read by {self.readers(name)} nodes; "
                "repack it into a new constant with g.const(...) instead"
            )
        self.initializers[name] = np.asarray(array)
