"""``rebind.nd``: NDArray, its creation functions, and ``.params`` files."""

from . import _internal as _internal  # MXNet's underscore operators
from . import contrib as contrib  # the _contrib_ operators rebind has
from . import image, linalg, random, sparse, utils
from . import op as op  # MXNet's non-underscore operators
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
from .helpers import (
    add,
    divide,
    equal,
    eye,
    greater,
    greater_equal,
    histogram,
    lesser,
    lesser_equal,
    linspace,
    logical_and,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    modulo,
    moveaxis,
    multiply,
    not_equal,
    onehot_encode,
    power,
    split_v2,
    subtract,
    true_divide,
)
from .imperative import install_methods, op_function
from .interop import (
    CachedOp,
    from_dlpack,
    from_numpy,
    imdecode,
    install_extras,
    to_dlpack_for_read,
    to_dlpack_for_write,
)
from .ndarray import NDArray
from .serialization import install_pickling, load, load_frombuffer, save
from .sparse_create import cast_storage
from .views import install_views

install_methods(NDArray)
install_extras(NDArray)
install_views(NDArray)
install_pickling(NDArray)
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
    "CachedOp",
    "NDArray",
    "add",
    "arange",
    "array",
    "cast_storage",
    "concatenate",
    "divide",
    "empty",
    "equal",
    "eye",
    "from_dlpack",
    "from_numpy",
    "full",
    "greater",
    "greater_equal",
    "histogram",
    "image",
    "imdecode",
    "lesser",
    "lesser_equal",
    "linalg",
    "linspace",
    "load",
    "load_frombuffer",
    "logical_and",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "modulo",
    "moveaxis",
    "multiply",
    "not_equal",
    "onehot_encode",
    "ones",
    "ones_like",
    "power",
    "random",
    "save",
    "sparse",
    "split_v2",
    "subtract",
    "to_dlpack_for_read",
    "to_dlpack_for_write",
    "true_divide",
    "utils",
    "waitall",
    "zeros",
    "zeros_like",
]
