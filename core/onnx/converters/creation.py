"""Creators: ``_zeros``, ``_ones``, ``_full``, ``_arange``, ``_eye``, ``_linspace``.

Their values are computed by rebind's own kernels at the export shapes and
stored as constants, so they are exactly what rebind computes. The one
exception is a filled creator whose shape parameter leaves dimensions to
inference (an RNN begin state ``_zeros(shape=(0, H))``) in a dynamic export:
its unknown dimensions are the batch, taken at run time from the first input,
and ``ConstantOfShape`` fills it.
"""

import numpy as np

from ...ops import OpContext
from ...registry import lookup as registry_lookup
from ..errors import OnnxExportError, require_onnx
from ..graph import tensor_type
from . import converter

__all__ = []

_FILL = {"_zeros": 0, "_ones": 1}


def _rebind_value(node):
    """The creator's output as rebind's NumPy kernel computes it at the export shape."""
    backend = registry_lookup("backends", "numpy")
    run = OpContext(False, backend, 0, out_shapes=tuple(tuple(s) for s in node.out_shapes))
    (value,), _ = node.op.forward(run, node.params, [], [])
    return np.asarray(value)


def _open_dims(node):
    """Axes the shape parameter leaves to inference (0 or -1 in it)."""
    shape = getattr(node.params, "shape", ()) or ()
    if not shape:
        return list(range(len(node.out_shapes[0])))
    return [axis for axis, size in enumerate(shape) if size <= 0]


@converter("_zeros", "_ones", "_full", "_zeros_without_dtype")
def _filled(node, g):
    open_dims = _open_dims(node) if g.dynamic else []
    if not open_dims:
        g.add_node("Identity", [g.const(_rebind_value(node), hint=node.name)], node.outputs)
        return
    onnx = require_onnx()
    fill = _FILL.get(node.op.name, getattr(node.params, "value", 0))
    dtype = np.dtype(node.out_dtypes[0])
    pieces = [
        g.batch_dim() if axis in open_dims else g.const([size], np.int64, f"{node.name}_dim")
        for axis, size in enumerate(node.out_shapes[0])
    ]
    shape = g.add_node("Concat", pieces, [g.fresh(f"{node.name}_shape")], axis=0)
    value = onnx.helper.make_tensor("value", tensor_type(dtype), [1], [dtype.type(fill).item()])
    g.add_node("ConstantOfShape", [shape], node.outputs, value=value)


@converter("_arange", "_eye", "_linspace")
def _computed(node, g):
    if getattr(node.params, "infer_range", False) and g.dynamic:
        raise OnnxExportError(
            f"{node.op.name} node {node.name!r}: infer_range takes its length from a consumer, "
            "which a dynamic-batch export cannot fix; export with dynamic=False"
        )
    g.add_node("Identity", [g.const(_rebind_value(node), hint=node.name)], node.outputs)
