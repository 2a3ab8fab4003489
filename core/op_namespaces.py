"""MXNet's operator sub-namespaces (``op``, ``_internal``, ``linalg``, ``contrib``, ``image``).

MXNet files each registered operator under one module by its name:
``_internal`` takes the names that start with an underscore (``_plus_scalar``,
``_random_uniform``), except those of a named family (``_linalg_*`` go to
``linalg``, ``_random_*_like`` to ``random``, ``_contrib_*`` to ``contrib``,
``_image_*`` to ``image``); ``op`` takes every other name. Code generated
for MXNet, and MXNet's own Python wrappers, call
``mx.nd._internal._random_uniform(...)`` and the like.
The functions are made on first access from the operator registry, so
operators added by plugins appear as the built-in ones do.
"""

from . import registry

__all__ = [
    "LINALG_FUNCTIONS",
    "is_contrib",
    "is_image",
    "is_internal",
    "is_linalg",
    "is_public",
    "operator_module_hooks",
]

# the functions of MXNet 1.9.1's mx.nd.linalg / mx.sym.linalg (each ``_linalg_<name>``)
LINALG_FUNCTIONS = (
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

_FAMILY_PREFIXES = ("_contrib_", "_linalg_", "_sparse_", "_image_")


def is_internal(name):
    """Whether MXNet files operator ``name`` under ``_internal``."""
    if not name.startswith("_") or name.startswith(_FAMILY_PREFIXES):
        return False
    return not (name.startswith("_random_") and name.endswith("_like"))


def is_public(name):
    """Whether MXNet files operator ``name`` under ``op`` (and the namespace itself)."""
    return not name.startswith("_")


def is_linalg(name):
    """Whether MXNet files operator ``name`` under ``linalg`` (without the prefix)."""
    return name.startswith("_linalg_")


def is_contrib(name):
    """Whether MXNet files operator ``name`` under ``contrib`` (without the prefix)."""
    return name.startswith("_contrib_")


def is_image(name):
    """Whether MXNet files operator ``name`` under ``image`` (without the prefix)."""
    return name.startswith("_image_")


def operator_module_hooks(module_name, make_function, accepts, prefix=""):
    """``(__getattr__, __dir__)`` for a module offering the operators ``accepts`` keeps.

    Args:
        make_function: ``make_function(op_name, func_name)``, the namespace's
            function factory (``mx.nd``'s or ``mx.sym``'s).
        prefix: what the module's function names drop from the operator names
            (``contrib.CTCLoss`` is ``_contrib_CTCLoss``).
    """
    made = {}

    def __getattr__(name):
        op_name = prefix + name
        if name.startswith("__") or not accepts(op_name):
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        if name not in made:
            if op_name not in registry.get_registry("operators"):
                raise AttributeError(
                    f"module {module_name!r} has no attribute {name!r} (no such operator)"
                )
            made[name] = make_function(op_name, name)
        return made[name]

    def __dir__():
        names = registry.get_registry("operators").names()
        return sorted(n[len(prefix) :] for n in names if accepts(n))

    return __getattr__, __dir__
