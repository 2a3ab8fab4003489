"""``mx.onnx.mx2onnx``: where MXNet 1.9 keeps its exporter; the same functions as ``mx.onnx``."""

from .export import export_model, get_operator_support

__all__ = ["export_model", "get_operator_support"]
