"""``mx.sym._internal``: MXNet's underscore operators (``_plus_scalar``, ...) on symbols.

See rebind.op_namespaces for which operator names MXNet files here.
"""

from ..op_namespaces import is_internal, operator_module_hooks
from .compose import op_function

__getattr__, __dir__ = operator_module_hooks(__name__, op_function, is_internal)
