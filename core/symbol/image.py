"""``mx.sym.image``: the ``_image_*`` operators under their short names, on symbols.

``mx.sym.image.normalize`` composes the operator ``_image_normalize``, and so
on, as MXNet's generated module has them. See rebind.op_namespaces.
"""

from ..op_namespaces import is_image, operator_module_hooks
from .compose import op_function

__getattr__, __dir__ = operator_module_hooks(__name__, op_function, is_image, "_image_")
