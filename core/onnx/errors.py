"""The errors of ONNX export and import.

Both are ``RebindError`` (so ``mx.MXNetError``) and ``ValueError``: a model
that does not convert is a bad value handed to the converter.
"""

from ..errors import RebindError

__all__ = ["OnnxExportError", "OnnxImportError", "require_onnx"]


class OnnxExportError(RebindError, ValueError):
    """A rebind graph cannot be written as ONNX (the message names the op and node)."""


class OnnxImportError(RebindError, ValueError):
    """An ONNX model cannot be read into rebind (the message names the ONNX operator)."""


def require_onnx():
    """The ``onnx`` module, or an ImportError saying how to install it."""
    try:
        import onnx
    except ImportError as exc:
        raise ImportError(
            "rebind.onnx needs the 'onnx' package: install it with "
            "`pip install 'rebind[onnx]'` (or `pip install onnx`)"
        ) from exc
    return onnx
