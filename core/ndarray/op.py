"""``mx.nd.op``: every operator whose name has no leading underscore, on arrays.

See rebind.op_namespaces for which operator names MXNet files here.
"""

from ..op_namespaces import is_public, operator_module_hooks
from .imperative import op_function

__getattr__, __dir__ = operator_module_hooks(__name__, op_function, is_public)
