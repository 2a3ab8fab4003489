"""``mx.sym.linalg``: the linear-algebra operators under their short names, on symbols.

``mx.sym.linalg.gemm`` is the operator ``_linalg_gemm`` (also ``mx.sym.linalg_gemm``),
and so on for every name in ``__all__``, as MXNet's generated module has them.
See rebind.op_namespaces.
"""

from ..op_namespaces import LINALG_FUNCTIONS, is_linalg, operator_module_hooks
from .compose import op_function

__all__ = list(LINALG_FUNCTIONS)  # each made on first access
__getattr__, __dir__ = operator_module_hooks(__name__, op_function, is_linalg, "_linalg_")
