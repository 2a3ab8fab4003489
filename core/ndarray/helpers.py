"""``mx.nd``'s functions that are not operators: arithmetic wrappers, shapes, ranges.

The arithmetic wrappers follow MXNet's rules: two arrays broadcast against each
other (same dtype and context), an array and a scalar give an array of the
array's dtype (the scalar is cast to it), and two scalars give a Python number.
Comparisons and logical functions give 0/1 in the array's dtype.
"""

import builtins
import numbers
import operator

import numpy as np

from ..errors import ShapeError
from .creation import _dense_only, resolve_context
from .imperative import invoke
from .ndarray import _APPLY, NDArray

__all__ = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "true_divide",
    "modulo",
    "power",
    "maximum",
    "minimum",
    "equal",
    "not_equal",
    "greater",
    "greater_equal",
    "lesser",
    "lesser_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "moveaxis",
    "onehot_encode",
    "histogram",
    "split_v2",
    "linspace",
    "eye",
]


def _as_flag(fn):
    return lambda a, b: 1 if fn(a, b) else 0


def _logical(fn):
    def apply(a, b, dtype):
        return fn(a != 0, b != 0).astype(dtype)

    return apply


# name -> (kernel on two backend arrays, the same on two Python scalars)
_FUNCTIONS = {
    "add": (_APPLY["add"], operator.add),
    "subtract": (_APPLY["subtract"], operator.sub),
    "multiply": (_APPLY["multiply"], operator.mul),
    "divide": (_APPLY["divide"], operator.truediv),
    "modulo": (_APPLY["modulo"], operator.mod),
    "power": (_APPLY["power"], operator.pow),
    "maximum": (lambda a, b, dtype: np.maximum(a, b).astype(dtype, copy=False), max),
    "minimum": (lambda a, b, dtype: np.minimum(a, b).astype(dtype, copy=False), min),
    "equal": (_APPLY["equal"], _as_flag(operator.eq)),
    "not_equal": (_APPLY["not_equal"], _as_flag(operator.ne)),
    "greater": (_APPLY["greater"], _as_flag(operator.gt)),
    "greater_equal": (_APPLY["greater_equal"], _as_flag(operator.ge)),
    "lesser": (_APPLY["less"], _as_flag(operator.lt)),
    "lesser_equal": (_APPLY["less_equal"], _as_flag(operator.le)),
    "logical_and": (_logical(np.logical_and), _as_flag(lambda a, b: a and b)),
    "logical_or": (_logical(np.logical_or), _as_flag(lambda a, b: a or b)),
    "logical_xor": (_logical(np.logical_xor), _as_flag(lambda a, b: bool(a) != bool(b))),
}


def _apply(name, lhs, rhs):
    """One of MXNet's array-or-scalar binary functions (``mx.nd.add`` and its kin)."""
    on_arrays, on_scalars = _FUNCTIONS[name]
    if isinstance(lhs, NDArray):
        rhs_data, lhs_data, owner = lhs._operand(rhs, name), lhs.data, lhs
    elif isinstance(rhs, NDArray):
        lhs_data, rhs_data, owner = rhs._operand(lhs, name), rhs.data, rhs
    elif isinstance(lhs, numbers.Number) and isinstance(rhs, numbers.Number):
        return on_scalars(lhs, rhs)
    else:
        raise TypeError(
            f"{name}: operands must be NDArrays or numbers, got "
            f"{type(lhs).__name__} and {type(rhs).__name__}"
        )
    try:
        result = on_arrays(lhs_data, rhs_data, owner.data.dtype)
    except ValueError as exc:
        raise ShapeError(
            f"{name}: shapes {lhs_data.shape} and {rhs_data.shape} do not broadcast: {exc}"
        ) from exc
    return NDArray(result, owner.context)


def _make(name):
    def function(lhs, rhs):
        return _apply(name, lhs, rhs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Element-wise {name} of arrays (broadcast) or of an array and a scalar."
    return function


add = _make("add")
subtract = _make("subtract")
multiply = _make("multiply")
divide = _make("divide")
true_divide = divide
modulo = _make("modulo")
power = _make("power")
maximum = _make("maximum")
minimum = _make("minimum")
equal = _make("equal")
not_equal = _make("not_equal")
greater = _make("greater")
greater_equal = _make("greater_equal")
lesser = _make("lesser")
lesser_equal = _make("lesser_equal")
logical_and = _make("logical_and")
logical_or = _make("logical_or")
logical_xor = _make("logical_xor")


def moveaxis(tensor, source, destination):
    """A copy of ``tensor`` with axes moved from ``source`` to ``destination`` (ints or lists)."""
    xp = tensor.context.backend.xp
    try:
        moved = xp.moveaxis(tensor.data, source, destination)
    except (ValueError, np.exceptions.AxisError) as exc:
        raise ShapeError(
            f"moveaxis: cannot move axes {source!r} to {destination!r} of an array of shape "
            f"{tensor.shape}: {exc}"
        ) from exc
    return NDArray(xp.ascontiguousarray(moved), tensor.context)


def onehot_encode(indices, out):
    """Fill the 2-d ``out`` with one-hot rows for the 1-d ``indices``; returns ``out``."""
    return invoke("_onehot_encode", (indices, out), {"out": out})


def histogram(a, bins=10, range=None):  # noqa: A002 - MXNet's parameter name
    """(counts, bin_edges) of the values of ``a``; counts are int64, edges ``a``'s dtype.

    ``bins`` is an NDArray of edges, or a count with ``range`` (both run the
    ``_histogram`` operator, giving a list) or without it: then, as MXNet
    does, NumPy's histogram over the data's extent, giving a tuple.
    """
    if isinstance(bins, NDArray):
        return invoke("_histogram", (a,), {"bins": bins})
    if isinstance(bins, numbers.Integral):
        if range is not None:
            return invoke("_histogram", (a,), {"bin_cnt": bins, "range": range})
        xp = a.context.backend.xp
        counts, edges = xp.histogram(a.data, bins=int(bins))
        return NDArray(counts.astype(np.int64), a.context), NDArray(
            edges.astype(a.data.dtype), a.context
        )
    raise ValueError("bins argument should be either an integer or an NDArray")


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split into equal sections (an int) or at the indices of a tuple, along ``axis``.

    Runs ``_split_v2`` with the start of each piece, as MXNet's wrapper does.
    """
    if isinstance(indices_or_sections, numbers.Integral):
        sections, size = int(indices_or_sections), ary.shape[axis]
        if size % sections:
            raise ShapeError(
                f"split_v2: array split does not result in an equal division: axis {axis} of "
                f"length {size} does not split into {sections} equal sections"
            )
        indices = [i * (size // sections) for i in builtins.range(sections)]
    elif isinstance(indices_or_sections, tuple):
        indices = [0, *indices_or_sections]
    else:
        raise ValueError("split_v2: indices_or_sections must be an int or a tuple of ints")
    return invoke("_split_v2", (ary, indices, axis, squeeze_axis), {})


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=np.float32):
    """``num`` evenly spaced values from ``start`` to ``stop`` (included when ``endpoint``)."""
    params = {"start": start, "stop": stop, "num": num, "endpoint": endpoint, "dtype": dtype}
    return invoke("_linspace", (), {**params, "ctx": resolve_context(ctx)})


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):  # noqa: N803 - MXNet's names
    """An ``N x M`` array (``M=0``: square) with ones on diagonal ``k`` (``_eye``)."""
    _dense_only(kwargs)
    params = {"N": N, "M": M, "k": k, "dtype": dtype or np.float32, **kwargs}
    return invoke("_eye", (), {**params, "ctx": resolve_context(ctx)})
