"""``mx.sym`` / ``mx.symbol``: symbols, variables, and one function per operator.

Operator functions (``FullyConnected``, ``Activation``, ``softmax``, ...) are
made on first access from the operator registry, so operators added by
plugins appear here exactly like the built-in ones.
"""

import numpy as np

from .. import registry
from ..errors import UnknownNameError
from . import _internal as _internal  # MXNet's underscore operators
from . import contrib as contrib  # the _contrib_ operators rebind has
from . import image, linalg, random
from . import op as op  # MXNet's non-underscore operators
from . import sparse as sparse  # MXNet's mx.sym.sparse operator names
from .compose import Variable, create, op_function, var
from .helpers import eye, histogram, hypot, install_extras, linspace, split_v2
from .names import AttrScope, NameManager, Prefix
from .symbol import Group, Symbol, load, load_json

install_extras(Symbol)

__all__ = [
    "AttrScope",
    "Group",
    "NameManager",
    "Prefix",
    "Symbol",
    "Variable",
    "arange",
    "eye",
    "full",
    "histogram",
    "hypot",
    "image",
    "linalg",
    "linspace",
    "load",
    "load_json",
    "maximum",
    "minimum",
    "ones",
    "pow",
    "power",
    "random",
    "split_v2",
    "var",
    "zeros",
]

_functions = {}


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    function = _functions.get(name)
    if function is None:
        try:
            function = op_function(name, name)
        except UnknownNameError as exc:
            raise AttributeError(
                f"module 'rebind.symbol' has no attribute {name!r} ({exc})"
            ) from None
        _functions[name] = function
    return function


def __dir__():
    return sorted({*globals(), *registry.get_registry("operators").names()})


def _creator(op_name, shape, dtype, kwargs, **params):
    dtype = np.float32 if dtype is None else dtype
    return create(op_name, op_name, (), {"shape": shape, "dtype": dtype, **params, **kwargs})


def zeros(shape, dtype=None, **kwargs):
    """A symbol of zeros of ``shape`` (0 in a dimension: learned from the consumer)."""
    return _creator("_zeros", shape, dtype, kwargs)


def ones(shape, dtype=None, **kwargs):
    """A symbol of ones of ``shape``."""
    return _creator("_ones", shape, dtype, kwargs)


def full(shape, val, dtype=None, **kwargs):
    """A symbol filled with ``val``."""
    return _creator("_full", shape, dtype, kwargs, value=val)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):
    """Evenly spaced values in ``[start, stop)``."""
    dtype = np.float32 if dtype is None else dtype
    return create(
        "_arange",
        "_arange",
        (),
        {
            "start": start,
            "stop": stop,
            "step": step,
            "repeat": repeat,
            "infer_range": infer_range,
            "dtype": dtype,
            "name": name,
        },
    )


def _binary_or_scalar(sym_op, scalar_op, hint, lhs, rhs):
    if isinstance(lhs, Symbol) and isinstance(rhs, Symbol):
        return create(sym_op, hint, (lhs, rhs), {})
    if isinstance(lhs, Symbol):
        return create(scalar_op, hint + "scalar", (lhs,), {"scalar": rhs})
    if isinstance(rhs, Symbol):
        return create(scalar_op, hint + "scalar", (rhs,), {"scalar": lhs})
    raise TypeError("at least one operand must be a Symbol")


def maximum(left, right):
    """Element-wise maximum of symbols or of a symbol and a scalar."""
    return _binary_or_scalar("_maximum", "_maximum_scalar", "_maximum", left, right)


def minimum(left, right):
    """Element-wise minimum of symbols or of a symbol and a scalar."""
    return _binary_or_scalar("_minimum", "_minimum_scalar", "_minimum", left, right)


def pow(base, exp):  # noqa: A001 - MXNet's name
    """``base ** exp`` for symbols and scalars."""
    if isinstance(base, Symbol):
        return base**exp
    if isinstance(exp, Symbol):  # named like MXNet's _RPowerScalar, unlike ``2 ** x``
        return create("_rpower_scalar", "_rpowerscalar", (exp,), {"scalar": base})
    raise TypeError("at least one operand must be a Symbol")


power = pow
