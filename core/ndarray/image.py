"""``mx.nd.image``: the ``_image_*`` operators under their short names, on arrays.

``mx.nd.image.normalize`` is the operator ``_image_normalize``, and so on for
``to_tensor``, the flips, ``crop``, ``resize`` and the random augmenters, as
MXNet's generated module has them. See rebind.op_namespaces.
"""

from ..op_namespaces import is_image, operator_module_hooks
from .imperative import op_function

__getattr__, __dir__ = operator_module_hooks(__name__, op_function, is_image, "_image_")
