"""Operator parameters: attrs classes parsed from MXNet's string attributes.

A symbol stores every parameter as the ``str()`` of what the user passed
(``"(3, 3)"``, ``"True"``, ``"0.001"``), exactly as MXNet writes them to JSON.
``parse_params`` turns such a dict into the op's attrs class, converting each
value by the kind its field declares, and reports any problem naming the
operator, the parameter and the value.

Declare a parameter with ``param(kind, default)``::

    @attrs.frozen
    class FullyConnectedParams:
        num_hidden: int = param("int")               # required
        no_bias: bool = param("bool", False)
        flatten: bool = param("bool", True)

A class whose parameters are open-ended (Custom's: ``op_type`` plus any
keyword) defines a classmethod ``from_attrs(op_name, raw)``; ``parse_params``
then hands it the attributes to parse itself.
"""

import ast
import math
import warnings

import attrs
import numpy as np

from ..errors import RebindError

__all__ = [
    "REQUIRED",
    "ParamError",
    "param",
    "parse_params",
    "to_attr_string",
    "NoParams",
    "positive",
    "non_negative",
]

REQUIRED = attrs.NOTHING


class ParamError(RebindError, ValueError):
    """An operator parameter is unknown, missing, or has a value that does not fit."""


def _to_bool(value):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise ValueError("expected a boolean (True/False)")


def _to_int(value):
    if isinstance(value, (bool, np.bool_)):
        raise ValueError("expected an integer, got a boolean")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return int(value)
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        number = float(text)
        if number.is_integer():
            return int(number)
        raise ValueError("expected an integer") from None


def _to_float(value):
    number = float(str(value).strip()) if isinstance(value, str) else float(value)
    return number


def _literal(value):
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text in ("None", ""):
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise ValueError("expected a tuple such as (3, 3)") from None


def _to_shape(value):
    """``"(3, 3)"``, ``"[3,3]"``, ``"3"``, ``(3, 3)`` -> ``(3, 3)``; ``"()"`` -> ``()``."""
    value = _literal(value)
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    if isinstance(value, (tuple, list)):
        return tuple(_to_int(v) for v in value)
    raise ValueError("expected a tuple of integers")


def _to_float_tuple(value):
    value = _literal(value)
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return (float(value),)
    return tuple(_to_float(v) for v in value)


def _to_dtype(value):
    if value is None or (isinstance(value, str) and value.strip() == "None"):
        return None
    return np.dtype(value.strip() if isinstance(value, str) else value).name


def _to_str(value):
    return str(value)


_CONVERTERS = {
    "bool": _to_bool,
    "int": _to_int,
    "float": _to_float,
    "shape": _to_shape,
    "floats": _to_float_tuple,
    "dtype": _to_dtype,
    "str": _to_str,
}


def param(kind, default=REQUIRED, *, choices=None, optional=False, validator=None):
    """A parameter field of kind int/float/bool/shape/floats/dtype/str.

    Args:
        kind: how the string form is converted.
        default: the value when the attribute is absent (REQUIRED if none).
        choices: allowed values (compared after conversion; for str, lower-cased).
        optional: whether ``"None"`` is accepted (giving None).
        validator: an attrs validator raising ValueError for values out of range.
    """
    return attrs.field(
        default=default,
        validator=validator,
        metadata={"kind": kind, "choices": choices, "optional": optional},
    )


def _convert(field, value):
    meta = field.metadata
    if meta.get("optional") and (value is None or str(value).strip() == "None"):
        return None
    converted = _CONVERTERS[meta["kind"]](value)
    choices = meta.get("choices")
    if choices is not None:
        if isinstance(converted, str) and converted not in choices:
            lowered = converted.lower()
            converted = lowered if lowered in choices else converted
        if converted not in choices:
            raise ValueError(f"expected one of {', '.join(map(str, choices))}")
    if isinstance(converted, float) and math.isnan(converted) and meta["kind"] != "float":
        raise ValueError("NaN is not allowed")
    return converted


def parse_params(op_name, params_class, raw):
    """Build ``params_class`` from ``raw`` (name -> string or Python value).

    Hidden attributes (``__lr_mult__``, ``__ctx_group__``, ...) are skipped. An
    operator without parameters (``NoParams``) runs whatever it is given, as
    MXNet's operators without a parameter struct do (``broadcast_add(a, b,
    axis=0)`` runs, and the symbol keeps the attribute in its JSON); where MXNet
    says nothing, rebind warns that the attributes have no effect.
    A class with open-ended parameters (Custom's) parses ``raw`` itself: when
    it defines a classmethod ``from_attrs(op_name, raw)``, that is used instead.
    """
    own_parser = getattr(params_class, "from_attrs", None)
    if own_parser is not None:
        return own_parser(op_name, raw)
    if params_class is NoParams:
        ignored = sorted(n for n in raw if not (n.startswith("__") and n.endswith("__")))
        if ignored:
            warnings.warn(
                f"{op_name} takes no parameters; {', '.join(map(repr, ignored))} "
                "has no effect (MXNet ignores it too)",
                UserWarning,
                stacklevel=2,
            )
        return NoParams()
    fields = attrs.fields_dict(params_class)
    values = {}
    for name, value in raw.items():
        if name.startswith("__") and name.endswith("__"):
            continue
        field = fields.get(name)
        if field is None:
            known = ", ".join(fields) or "none"
            raise ParamError(f"{op_name}: unknown parameter {name!r}; parameters are: {known}")
        try:
            values[name] = _convert(field, value)
        except (ValueError, TypeError) as exc:
            raise ParamError(f"{op_name}: parameter {name}={value!r} is invalid: {exc}") from None
    missing = [n for n, f in fields.items() if f.default is REQUIRED and n not in values]
    if missing:
        raise ParamError(f"{op_name}: required parameter {missing[0]!r} is missing")
    try:
        return params_class(**values)
    except (ValueError, TypeError) as exc:
        raise ParamError(f"{op_name}: {exc}") from None


def to_attr_string(value):
    """A Python value as MXNet writes it into symbol JSON (``str()``, dtypes by name)."""
    if isinstance(value, str):
        return value
    if isinstance(value, type) or isinstance(value, np.dtype):
        return np.dtype(value).name
    if isinstance(value, (tuple, list)):
        # NumPy 2 writes scalars in containers as "np.int64(3)"; MXNet (NumPy 1) wrote "3"
        value = type(value)(_plain_scalar(v) for v in value)
    return str(value)  # a list stays "[1, 1]", as MXNet writes it


def _plain_scalar(value):
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(str(value))  # the shortest text of the value, as NumPy 1's repr
    return value


def positive(instance, attribute, value):
    """Validator: the value must be > 0."""
    if value is not None and value <= 0:
        raise ValueError(f"{attribute.name} must be positive, got {value}")


def non_negative(instance, attribute, value):
    """Validator: the value must be >= 0."""
    if value is not None and value < 0:
        raise ValueError(f"{attribute.name} must be non-negative, got {value}")


@attrs.frozen
class NoParams:
    """For operators without parameters."""
