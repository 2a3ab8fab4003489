"""``mx.nd``'s functions that are not operators: arithmetic wrappers, shapes, ranges.

The arithmetic wrappers follow MXNet's rules: two arrays broadcast against each
other (same dtype and context), an array and a scalar give an array of the
array's dtype (the scalar is cast to it), and two scalars give a Python number.
Comparisons and logical functions give 0/1 in the array's dtype.
"""

import numbers
import operator

import numpy as np

from ..errors import ShapeError
from .creation import _dense_only, array, resolve_context
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
    if indices.ndim != 1 or out.ndim != 2 or out.shape[0] != indices.shape[0]:
        raise ShapeError(
            f"onehot_encode: indices of shape (n,) and out of shape (n, depth) expected, "
            f"got {indices.shape} and {out.shape}"
        )
    xp = out.context.backend.xp
    columns = indices.as_in_context(out.context).data.astype(np.int64)
    rows = xp.arange(out.shape[0])
    out.data[...] = 0
    out.data[rows, columns] = 1
    return out


def histogram(a, bins=10, range=None):  # noqa: A002 - MXNet's parameter name
    """(counts, bin_edges) of the values of ``a``; counts are int64, edges ``a``'s dtype.

    ``bins`` is a count (then ``range`` gives the interval, else the data's
    extent) or an NDArray of edges. MXNet returns a list from its operator and
    a tuple when it falls back to NumPy (int ``bins`` without ``range``); so do we.
    """
    xp = a.context.backend.xp
    edges = bins.as_in_context(a.context).data if isinstance(bins, NDArray) else int(bins)
    counts, edges = xp.histogram(a.data, bins=edges, range=range)
    result = [
        NDArray(counts.astype(np.int64), a.context),
        NDArray(edges.astype(a.data.dtype), a.context),
    ]
    return tuple(result) if range is None and not isinstance(bins, NDArray) else result


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split into equal sections (an int) or at the indices of a tuple, along ``axis``."""
    if isinstance(indices_or_sections, numbers.Integral):
        sections = int(indices_or_sections)
        if ary.shape[axis] % sections:
            raise ShapeError(
                f"split_v2: axis {axis} of length {ary.shape[axis]} does not split into "
                f"{sections} equal sections"
            )
    elif isinstance(indices_or_sections, tuple):
        sections = [int(i) for i in indices_or_sections]
    else:
        raise ValueError("split_v2: indices_or_sections must be an int or a tuple of ints")
    xp = ary.context.backend.xp
    pieces = xp.split(ary.data, sections, axis=axis)
    if squeeze_axis:
        lengths = sorted({p.shape[axis] for p in pieces})
        if lengths != [1]:
            raise ShapeError(
                f"split_v2(squeeze_axis=True): every piece needs length 1 along axis {axis}, "
                f"got lengths {lengths}; split into {ary.shape[axis]} sections or pass "
                "squeeze_axis=False"
            )
        pieces = [p.squeeze(axis) for p in pieces]
    outputs = [NDArray(xp.ascontiguousarray(p), ary.context) for p in pieces]
    return outputs[0] if len(outputs) == 1 else outputs


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=np.float32):
    """``num`` evenly spaced values from ``start`` to ``stop`` (included when ``endpoint``)."""
    values = np.linspace(start, stop, int(num), endpoint=endpoint, dtype=np.float64)
    return array(values, ctx=ctx, dtype=dtype)


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):  # noqa: N803 - MXNet's names
    """An ``N x M`` array (``M=0``: square) with ones on diagonal ``k``."""
    _dense_only(kwargs)
    values = np.eye(int(N), int(M) or int(N), int(k))
    return array(values, ctx=resolve_context(ctx), dtype=dtype or np.float32)
