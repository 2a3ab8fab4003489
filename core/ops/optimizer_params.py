"""Parameter classes of the update operators: MXNet's float fields, rounded to float32.

MXNet's update operators (``sgd_update``, ``adam_update``, ``multi_lamb_update``,
...) keep their settings in dmlc parameter structs whose fields are C
``float`` (a few are ``double``: FTML's ``epsilon``). The classes made here
round those settings to float32 as they are parsed, so a float64 weight is
updated with the rates MXNet uses.
"""

import attrs
import numpy as np

from .params import param

__all__ = ["params_class"]


def _common(kind_defaults):
    return {name: param(kind, default) for name, kind, default in kind_defaults}


def params_class(name, fields, doubles=()):
    """A frozen keyword-only params class from (name, kind, default) triples, in MXNet's order.

    MXNet's parameter structs hold these settings as C ``float``: a float64
    weight is updated with ``lr=0.1`` as float32 makes it (0.10000000149...).
    So every float field, and every number of a ``floats`` field, is rounded
    to float32 here, except those named in ``doubles`` (C ``double`` fields).
    """
    body = {"__annotations__": {}, **_common(fields)}
    rounded = tuple(f[0] for f in fields if f[1] in ("float", "floats") and f[0] not in doubles)
    if rounded:
        body["__attrs_post_init__"] = _rounding(rounded)
    return attrs.frozen(kw_only=True)(type(name, (), body))


def _rounding(names):
    """An ``__attrs_post_init__`` rounding the fields ``names`` to float32."""

    def round_fields(self):
        for field in names:
            value = getattr(self, field)
            if isinstance(value, tuple):
                object.__setattr__(self, field, tuple(_float32(v) for v in value))
            elif value is not None:
                object.__setattr__(self, field, _float32(value))

    return round_fields


def _float32(value):
    """``value`` as the float32 MXNet's ``float`` field stores (overflow gives +-inf, as there)."""
    with np.errstate(over="ignore"):
        return float(np.float32(value))
