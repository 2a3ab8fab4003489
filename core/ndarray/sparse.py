"""``mx.nd.sparse``: CSRNDArray, RowSparseNDArray, their constructors, and operators.

As in MXNet, ``mx.nd.sparse.<op>`` runs operator ``_sparse_<op>`` where one
is registered under that name, else ``<op>`` itself (``mx.nd.sparse.dot``,
``mx.nd.sparse.slice``); operators without a sparse kernel fall back to the
dense form of their sparse inputs.
"""

from ..context import Context, current_context
from .ndarray import NDArray
from .sparse_arith import add, divide, multiply, subtract
from .sparse_array import BaseSparseNDArray, CSRNDArray, RowSparseNDArray
from .sparse_create import (
    array,
    cast_storage,
    csr_matrix,
    empty,
    retain,
    row_sparse_array,
    zeros,
)

gs_retain = retain  # MXNet's name for the generated operator function it wraps

_functions = {}


def __getattr__(name):
    """``mx.nd.sparse.<op>``: the function of operator ``_sparse_<op>`` (or ``<op>``)."""
    if name.startswith("__"):
        raise AttributeError(name)
    function = _functions.get(name)
    if function is None:
        from .. import registry
        from ..errors import UnknownNameError
        from .imperative import op_function

        for op_name in (f"_sparse_{name}", name):
            try:
                registry.lookup("operators", op_name)
            except UnknownNameError:
                continue
            function = op_function(op_name, name)
            break
        else:
            raise AttributeError(f"module 'rebind.ndarray.sparse' has no attribute {name!r}")
        _functions[name] = function
    return function


__all__ = [
    "BaseSparseNDArray",
    "CSRNDArray",
    "Context",
    "NDArray",
    "RowSparseNDArray",
    "add",
    "array",
    "cast_storage",
    "csr_matrix",
    "current_context",
    "divide",
    "empty",
    "gs_retain",
    "multiply",
    "retain",
    "row_sparse_array",
    "subtract",
    "zeros",
]
