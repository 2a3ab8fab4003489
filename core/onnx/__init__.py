"""``mx.onnx``: export rebind models to ONNX and import ONNX models into rebind.

Needs the ``onnx`` package (the ``onnx`` extra); importing this module does
not, so ``import rebind`` works without it. The exporter targets opset 17 by
default (``opset_version=`` picks another, 13 or newer).
"""

from . import mx2onnx as mx2onnx  # MXNet 1.9 keeps its exporter there
from .errors import OnnxExportError, OnnxImportError
from .export import DEFAULT_OPSET, export_model, get_operator_support

__all__ = [
    "DEFAULT_OPSET",
    "OnnxExportError",
    "OnnxImportError",
    "export_model",
    "get_operator_support",
    "get_model_metadata",
    "import_model",
]


def import_model(model_file, *args, **kwargs):
    """Load an ONNX model as ``(sym, arg_params, aux_params)`` (see ``importer.import_model``)."""
    from .importer import import_model as _import_model

    return _import_model(model_file, *args, **kwargs)


def get_model_metadata(model_file):
    """Input and output names and shapes of an ONNX model (see ``importer``)."""
    from .importer import get_model_metadata as _get_model_metadata

    return _get_model_metadata(model_file)
