"""``mx.nd._internal``: MXNet's underscore operators (``_plus_scalar``, ...) on arrays.

See rebind.op_namespaces for which operator names MXNet files here.
"""

from ..op_namespaces import is_internal, operator_module_hooks
from .imperative import op_function

__getattr__, __dir__ = operator_module_hooks(__name__, op_function, is_internal)
