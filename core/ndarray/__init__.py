"""``rebind.nd``: NDArray, its creation functions, and ``.params`` files."""

from . import random
from .creation import (
    arange,
    array,
    concat,
    concatenate,
    dot,
    empty,
    full,
    ones,
    ones_like,
    stack,
    waitall,
    zeros,
    zeros_like,
)
from .ndarray import NDArray
from .serialization import load, load_frombuffer, save

__all__ = [
    "NDArray",
    "arange",
    "array",
    "concat",
    "concatenate",
    "dot",
    "empty",
    "full",
    "load",
    "load_frombuffer",
    "ones",
    "ones_like",
    "random",
    "save",
    "stack",
    "waitall",
    "zeros",
    "zeros_like",
]
