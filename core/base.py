"""``mx.base``: MXNet's error root and the small type helpers scripts import from it.

rebind has no C library, so only the Python-level names MXNet code reaches are
here: ``MXNetError`` (the root of every error rebind raises on purpose),
``NotImplementedForSymbol``, ``NotSupportedForSparseNDArray``, the type tuples
used in ``isinstance`` checks, ``py_str`` and ``data_dir``; and, for scripts that
call libmxnet through ctypes, ``_LIB`` with the few C functions rebind can
honour (DLPack's), ``NDArrayHandle``, ``c_str`` and ``check_call``.
"""

import ctypes
import itertools
import os
import platform

import numpy as np

__all__ = [
    "MXNetError",
    "NDArrayHandle",
    "NotImplementedForSymbol",
    "NotSupportedForSparseNDArray",
    "c_str",
    "check_call",
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


# -- the C API, as far as rebind can honour it -------------------------------------
NDArrayHandle = ctypes.c_void_p

# MXNet sets these at import, and scripts written for it call the two functions
# without setting them (a pointer returned as a C int would be cut to 32 bits)
ctypes.pythonapi.PyCapsule_New.restype = ctypes.py_object
ctypes.pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p


def c_str(string):
    """``string`` as a ctypes ``char *`` in UTF-8 (MXNet's helper for its C API)."""
    return ctypes.c_char_p(string.encode("utf-8"))


def check_call(ret):
    """Raise MXNetError when a ``_LIB`` function returned non-zero (MXNet's C convention).

    rebind's ``_LIB`` functions raise their own error and return 0 otherwise.
    """
    if ret != 0:
        raise MXNetError(f"a C API call returned {ret} (0 is success)")


class _CLibrary:
    """``mx.base._LIB``: the libmxnet C functions rebind provides, written in Python.

    A function is added with ``register`` by the module that implements it
    (the DLPack ones: rebind.ndarray.dlpack); any other name raises
    NotImplementedError. Arrays cross this boundary as handles: an integer in a
    ``NDArrayHandle`` that ``NDArray(handle=...)`` takes back once.
    """

    def __init__(self):
        self._functions = {}
        self._handles = {}
        self._next_handle = itertools.count(1)

    def register(self, name, function):
        """Make ``function`` callable as ``_LIB.<name>``."""
        self._functions[name] = function

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._functions[name]
        except KeyError:
            raise NotImplementedError(
                f"mx.base._LIB.{name}: rebind has no C library; of libmxnet's C API it "
                f"provides {sorted(self._functions)} only"
            ) from None

    def new_handle(self, payload, out):
        """Keep ``payload`` under a new handle and write the handle into ``out``.

        ``out`` is what C code gets for ``NDArrayHandle *``: ``ctypes.byref(h)``
        or ``ctypes.pointer(h)`` of an ``NDArrayHandle`` ``h``.
        """
        value = next(self._next_handle)
        self._handles[value] = payload
        target = getattr(out, "_obj", None)  # byref() keeps the object it points to
        (target if target is not None else out.contents).value = value

    def take_handle(self, handle):
        """The payload kept under ``handle`` (an NDArrayHandle or int), forgotten here."""
        value = handle.value if isinstance(handle, ctypes.c_void_p) else handle
        try:
            return self._handles.pop(value)
        except KeyError:
            raise MXNetError(
                f"NDArray(handle={value!r}): no array is kept under this handle; a handle "
                "comes from a mx.base._LIB call and is taken once"
            ) from None


_LIB = _CLibrary()
