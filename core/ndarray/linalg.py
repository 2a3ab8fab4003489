"""``mx.nd.linalg``: the linear-algebra operators under their short names.

``mx.nd.linalg.gemm`` is the operator ``_linalg_gemm`` (also ``mx.nd.linalg_gemm``),
and so on for every name in ``__all__``, as MXNet's generated module has them.
The functions are made on first access from the operator registry.
"""

from .imperative import op_function

OPERATOR_NAMES = (
    "det",
    "extractdiag",
    "extracttrian",
    "gelqf",
    "gemm",
    "gemm2",
    "inverse",
    "makediag",
    "maketrian",
    "potrf",
    "potri",
    "slogdet",
    "sumlogdiag",
    "syevd",
    "syrk",
    "trmm",
    "trsm",
)
__all__ = list(OPERATOR_NAMES)  # each made on first access (see __getattr__)

_functions = {}


def __getattr__(name):
    """``mx.nd.linalg.<name>``: the function of operator ``_linalg_<name>``."""
    if name not in OPERATOR_NAMES:
        raise AttributeError(f"module 'rebind.ndarray.linalg' has no attribute {name!r}")
    function = _functions.get(name)
    if function is None:
        function = _functions[name] = op_function(f"_linalg_{name}", name)
    return function


def __dir__():
    return sorted({*globals(), *OPERATOR_NAMES})
