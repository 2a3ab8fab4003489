"""Operators: one ``OpDef`` per operator, grouped by family in this package.

This package is a built-in plugin: its ``rebind_add_operators`` hook adds the
operators of every family module here (each module that defines ``OPS``, a
list of OpDef), with their aliases, exactly as a third-party package adds its
own.
"""

import importlib
import pkgutil

from ..hookspecs import hookimpl
from .base import OpContext, OpDef, known, merge_shape, mismatch
from .params import ParamError, param

__all__ = [
    "OpContext",
    "OpDef",
    "ParamError",
    "known",
    "merge_shape",
    "mismatch",
    "param",
    "contribute",
    "family_modules",
    "FLUENT_METHODS",
]


# Operators that NDArray and Symbol also offer as methods: method name -> operator.
FLUENT_METHODS = {
    name: name
    for name in (
        "sum",
        "mean",
        "max",
        "min",
        "prod",
        "nansum",
        "norm",
        "argmax",
        "argmin",
        "argmax_channel",
        "clip",
        "sqrt",
        "rsqrt",
        "square",
        "exp",
        "expm1",
        "log",
        "log2",
        "log10",
        "log1p",
        "sign",
        "round",
        "floor",
        "ceil",
        "trunc",
        "relu",
        "sigmoid",
        "tanh",
        "softmax",
        "log_softmax",
        "transpose",
        "expand_dims",
        "squeeze",
        "flatten",
        "tile",
        "repeat",
        "slice",
        "slice_axis",
        "broadcast_to",
        "broadcast_axes",
        "one_hot",
        "pick",
        "take",
        "topk",
        "sort",
        "argsort",
        "split",
        "swapaxes",
        "reciprocal",
        "cbrt",
        "sin",
        "cos",
        "tan",
        "zeros_like",
        "ones_like",
        "abs",
        "arccos",
        "arccosh",
        "arcsin",
        "arcsinh",
        "arctan",
        "arctanh",
        "cosh",
        "sinh",
        "degrees",
        "radians",
        "fix",
        "flip",
        "rint",
        "rcbrt",
        "nanprod",
        "softmin",
        "depth_to_space",
        "space_to_depth",
        "diag",
        "pad",
        "reshape_like",
        "slice_like",
        "broadcast_like",
        "shape_array",
        "size_array",
    )
}


def family_modules():
    """The modules of this package that define operators, in name order."""
    modules = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "OPS"):
            modules.append(module)
    return modules


def contribute(registry, ops):
    """Add ``ops`` and their aliases to a ``rebind_add_operators`` registry."""
    for op in ops:
        registry.add(op.name, op)
        for alias in op.aliases:
            registry.add(alias, op)


# MXNet registers these operators a second time with a "_sparse_" prefix (the names
# mx.nd.sparse / mx.sym.sparse call); storage dispatch is by input, so each is the
# same operator
_SPARSE_ALIASES = (
    "ElementWiseSum Embedding FullyConnected LinearRegressionOutput LogisticRegressionOutput "
    "MAERegressionOutput _contrib_round_ste _contrib_sign_ste abs add_n arccos arccosh arcsin "
    "arcsinh arctan arctanh broadcast_add broadcast_div broadcast_minus broadcast_mul "
    "broadcast_plus broadcast_sub cast_storage cbrt ceil clip concat cos cosh degrees dot "
    "elemwise_add elemwise_div elemwise_mul elemwise_sub exp expm1 fix floor gamma gammaln log "
    "log10 log1p log2 make_loss mean negative norm radians relu rint round rsqrt sigmoid sign "
    "sin sinh slice sqrt square stop_gradient sum tan tanh trunc where zeros_like"
).split()


@hookimpl
def rebind_add_operators(registry):
    by_name = {}
    for module in family_modules():
        contribute(registry, module.OPS)
        by_name.update({alias: op for op in module.OPS for alias in (op.name, *op.aliases)})
    for name in _SPARSE_ALIASES:
        if f"_sparse_{name}" not in by_name:
            registry.add(f"_sparse_{name}", by_name[name])
