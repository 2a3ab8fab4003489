"""``rebind.nd``: NDArray, its creation functions, and ``.params`` files."""

from . import random
from .creation import (
    arange,
    array,
    concatenate,
    empty,
    full,
    ones,
    ones_like,
    waitall,
    zeros,
    zeros_like,
)
from .imperative import install_methods, op_function
from .ndarray import NDArray
from .serialization import load, load_frombuffer, save

install_methods(NDArray)
_functions = {}


def __getattr__(name):
    """``mx.nd.<op>``: a function running the operator's kernel (made on first access)."""
    if name.startswith("__"):
        raise AttributeError(name)
    function = _functions.get(name)
    if function is None:
        from ..errors import UnknownNameError

        try:
            function = op_function(name, name)
        except UnknownNameError as exc:
            raise AttributeError(
                f"module 'rebind.ndarray' has no attribute {name!r} ({exc})"
            ) from None
        _functions[name] = function
    return function


__all__ = [
    "NDArray",
    "arange",
    "array",
    "concatenate",
    "empty",
    "full",
    "load",
    "load_frombuffer",
    "ones",
    "ones_like",
    "random",
    "save",
    "waitall",
    "zeros",
    "zeros_like",
]
