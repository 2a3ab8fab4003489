"""``mx.nd.linalg``: the linear-algebra operators under their short names, on arrays.

``mx.nd.linalg.gemm`` is the operator ``_linalg_gemm`` (also ``mx.nd.linalg_gemm``),
and so on for every name in ``__all__``, as MXNet's generated module has them.
See rebind.op_namespaces.
"""

from ..op_namespaces import LINALG_FUNCTIONS, is_linalg, operator_module_hooks
from .imperative import op_function

__all__ = list(LINALG_FUNCTIONS)  # each made on first access
__getattr__, __dir__ = operator_module_hooks(__name__, op_function, is_linalg, "_linalg_")
