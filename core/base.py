"""``mx.base``: MXNet's error root and the small type helpers scripts import from it.

rebind has no C library, so only the Python-level names MXNet code reaches are
here: ``MXNetError`` (the root of every error rebind raises on purpose),
``NotImplementedForSymbol``, ``NotSupportedForSparseNDArray``, the type tuples
used in ``isinstance`` checks, ``py_str`` and ``data_dir``.
"""

import os
import platform

import numpy as np

__all__ = [
    "MXNetError",
    "NotImplementedForSymbol",
    "NotSupportedForSparseNDArray",
    "data_dir",
    "data_dir_default",
    "integer_types",
    "mx_real_t",
    "numeric_types",
    "py_str",
    "string_types",
]

integer_types = (int, np.int32, np.int64)
numeric_types = (float, int, np.generic)
string_types = (str,)
mx_real_t = np.float32


def py_str(data):
    """Decode bytes from UTF-8 (MXNet's helper for strings from its C API).

    A ``str`` comes back as it is: rebind hands monitor callbacks ``str`` names
    where MXNet's C API gave bytes, and callbacks written for MXNet decode them
    with ``py_str(name)``.
    """
    return data if isinstance(data, str) else data.decode("utf-8")


class MXNetError(RuntimeError):
    """The root of every error rebind raises on purpose (MXNet's ``MXNetError``).

    ``except mx.base.MXNetError`` (or ``mx.MXNetError``) catches what MXNet
    code expects; rebind's subclasses also derive from the built-in exception
    that fits (``ValueError`` for shapes and formats, ``TypeError`` for dtypes),
    so ``except ValueError`` keeps working too.
    """


class _UnavailableCall(MXNetError):
    """A function called on a kind of array it does not support (MXNet's message form)."""

    NOT_FOR = ""

    def __init__(self, function, alias, *args):
        super().__init__()
        self.function = getattr(function, "__name__", str(function))
        self.alias = alias
        self.args = [str(type(arg)) for arg in args]

    def __str__(self):
        text = f"Function {self.function}"
        if self.alias:
            text += f' (namely operator "{self.alias}")'
        if self.args:
            text += f" with arguments ({', '.join(self.args)})"
        return text + self.NOT_FOR


class NotImplementedForSymbol(_UnavailableCall):
    """A function exists for NDArray but not for Symbol."""

    NOT_FOR = " is not implemented for Symbol and only available in NDArray."


class NotSupportedForSparseNDArray(_UnavailableCall):
    """A function exists for dense NDArrays only (rebind has no sparse storage)."""

    NOT_FOR = " is not supported for SparseNDArray and only available in NDArray."


def _as_list(obj):
    """``obj`` itself when it is a list or tuple, else ``[obj]`` (MXNet test files import it)."""
    return obj if isinstance(obj, (list, tuple)) else [obj]


def data_dir_default():
    """The default data folder: ``%APPDATA%/mxnet`` on Windows, ``~/.mxnet`` elsewhere."""
    if platform.system() == "Windows":
        return os.path.join(os.environ.get("APPDATA", ""), "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir():
    """Where downloaded data and models go: ``$MXNET_HOME``, else the default folder."""
    return os.getenv("MXNET_HOME", data_dir_default())
