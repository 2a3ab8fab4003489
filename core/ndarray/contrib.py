"""``mx.nd.contrib``: the ``_contrib_*`` operators rebind has, under their short names, on arrays.

MXNet's contrib operators are outside rebind's operator set except where a
public operator is also registered under a ``_contrib_`` name (CTCLoss);
those are reachable here as MXNet's code reaches them (``contrib.ctc_loss``).
"""

from ..op_namespaces import is_contrib, operator_module_hooks
from .imperative import op_function

__getattr__, __dir__ = operator_module_hooks(__name__, op_function, is_contrib, "_contrib_")
