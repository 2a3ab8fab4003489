"""``mx.operator.get_operator_arguments``: an operator's inputs and parameters, in MXNet's words.

MXNet answers from its C registry (``MXSymbolGetAtomicSymbolInfo``): the
inputs first, typed ``NDArray-or-Symbol`` (``NDArray-or-Symbol[]`` for a
variable number), then the parameters with dmlc's type strings, such as
``"{'relu', 'sigmoid'}, required"`` or ``"boolean, optional, default=0"``.
rebind builds the same description from the operator's OpDef and the kinds,
choices and defaults its parameter fields declare. It cannot tell C++ widths
apart (MXNet's ``double``/``long`` read ``float``/``int`` here), and a
variadic operator's inputs are one entry named ``data``.
"""

import collections

import attrs
import numpy as np

from . import registry
from .ops.params import REQUIRED

__all__ = ["OperatorArguments", "get_operator_arguments"]

OperatorArguments = collections.namedtuple("OperatorArguments", ["narg", "names", "types"])

_KIND_NAMES = {
    "bool": "boolean",
    "int": "int",
    "float": "float",
    "shape": "Shape(tuple)",
    "floats": "tuple of <float>",
    "str": "string",
    "dtype": "string",
}
INPUT_TYPE = "NDArray-or-Symbol"


def get_operator_arguments(op_name):
    """``OperatorArguments(narg, names, types)`` of operator ``op_name`` (or an alias).

    Raises UnknownNameError (a ValueError) for an operator nobody registered.
    """
    op = registry.lookup("operators", op_name)
    names, types = [], []
    for name in _input_names(op):
        names.append(name)
        types.append(INPUT_TYPE + ("[]" if op.variadic else ""))
    if attrs.has(op.params):
        for field in attrs.fields(op.params):
            names.append(field.name)
            types.append(_type_string(field))
    return OperatorArguments(len(names), names, types)


def _input_names(op):
    """The op's inputs with every optional one present (parameters at their defaults)."""
    if op.variadic:
        return ["data"]
    params = _default_params(op.params)
    try:
        return [*op.arguments(params), *op.aux_states(params)]
    except AttributeError:  # the inputs depend on a required parameter: list the fixed ones
        return []


def _default_params(params_class):
    """An instance with every defaulted field set; required ones stay unset."""
    instance = object.__new__(params_class)
    for field in attrs.fields(params_class) if attrs.has(params_class) else ():
        if field.default is not REQUIRED:
            default = field.default
            if isinstance(default, attrs.Factory):
                default = default.factory()
            object.__setattr__(instance, field.name, default)
    return instance


def _type_string(field):
    """dmlc's description of one parameter: type, then ``required`` or its default."""
    meta = field.metadata
    kind, choices = meta.get("kind"), meta.get("choices")
    if choices is not None and kind in ("str", "dtype"):
        # an optional enum lists None first, unquoted, as dmlc prints it
        listed = [f"'{c}'" for c in sorted({str(c) for c in choices if c is not None})]
        described = "{" + ", ".join(["None"] * bool(meta.get("optional")) + listed) + "}"
        if field.default is REQUIRED:
            return f"{described}, required"
        return f"{described},optional, default='{field.default}'"  # MXNet's missing space
    described = _KIND_NAMES.get(kind, kind or "")
    if meta.get("optional"):
        described += " or None" if kind != "shape" else ""
        described = "Shape or None" if kind == "shape" else described
    if field.default is REQUIRED:
        return f"{described}, required"
    return f"{described}, optional, default={_default_string(kind, field.default)}"


def _default_string(kind, value):
    """A default as dmlc prints it: bools as 0/1, float32 digits, ints and strings quoted."""
    if value is None:
        return "None" if kind in ("shape", "float", "bool") else "'None'"
    if kind == "bool":
        return str(int(bool(value)))
    if kind == "float":
        return f"{np.float32(value):.9g}"
    if kind in ("shape", "floats"):
        return "[" + ",".join(_plain(v) for v in value) + "]"
    return f"'{value}'"


def _plain(value):
    return f"{np.float32(value):.9g}" if isinstance(value, float) else str(value)
