"""NDArray's shape methods with MXNet's copy-or-view choice, and NumPy's ufunc protocol.

MXNet's ``flatten``, ``expand_dims`` and ``squeeze`` methods run their
operator (a new array) unless ``inplace=True``, which returns a view sharing
``self``'s memory (``reshape``). ``broadcast_to`` takes any sequence of ints
(a NumPy shape included). NumPy functions applied to an NDArray (``np.all(x)``)
see its values, as they do for MXNet's arrays, while ``numpy_array + x`` still
gives an NDArray.
"""

import numbers

import numpy as np

from ..errors import ShapeError
from .ndarray import NDArray

__all__ = ["install_views"]


def _flatten(self, inplace=False):
    """``(d1, d2*...*dk)``: a copy, or a view of ``self`` when ``inplace``."""
    if inplace:
        return self.reshape((0, -1))
    return _invoke("flatten", self, {})


def _expand_dims(self, axis, inplace=False):
    """A new axis of length 1 at ``axis`` (in ``[-ndim-1, ndim]``): a copy, or a view."""
    if not inplace:
        return _invoke("expand_dims", self, {"axis": axis})
    ndim = self.ndim
    if not -ndim - 1 <= axis <= ndim:
        raise ShapeError(
            f"expand_dims: axis {axis} is out of range for a {ndim}-d array; "
            f"use an axis in [{-ndim - 1}, {ndim}]"
        )
    shape = list(self.shape)
    shape.insert(axis % (ndim + 1), 1)
    return self.reshape(shape)


def _squeeze(self, axis=None, inplace=False):
    """Drop axes of length 1 (those in ``axis``, or all): a copy, or a view when ``inplace``.

    As in MXNet, an array whose axes all go keeps one: shape ``(1,)``.
    """
    if not inplace:
        return _invoke("squeeze", self, {"axis": axis})
    shape = self.shape
    if axis is None:
        dropped = {i for i, size in enumerate(shape) if size == 1}
    else:
        dropped = _squeezed_axes(shape, (axis,) if isinstance(axis, numbers.Integral) else axis)
    kept = [size for i, size in enumerate(shape) if i not in dropped]
    return self.reshape(kept or [1])


def _squeezed_axes(shape, axes):
    """The non-negative axes of ``axes``, each checked to be in range and of length 1."""
    resolved = []
    for axis in axes:
        if not -len(shape) <= axis < len(shape):
            raise ShapeError(f"squeeze: axis {axis} is out of range for a {len(shape)}-d array")
        resolved.append(axis % len(shape))
        if shape[resolved[-1]] != 1:
            raise ShapeError(f"squeeze: axis {axis} has length {shape[resolved[-1]]}, not 1")
    if len(set(resolved)) != len(resolved):
        raise ShapeError(f"squeeze: axis {tuple(axes)} names an axis twice")
    return set(resolved)


def _broadcast_to(self, shape):
    """A copy of ``self`` broadcast to ``shape`` (any sequence of ints), fewer dims padded."""
    shape = tuple(int(size) for size in shape)
    padded = (1,) * (len(shape) - self.ndim) + self.shape
    fits = len(shape) >= self.ndim and all(
        have in (1, want) for have, want in zip(padded, shape, strict=True)
    )
    if not fits:
        raise ShapeError(
            f"operands could not be broadcast together with remapped shapes "
            f"[original->remapped]: {self.shape} and requested shape {shape}"
        )
    source = self if padded == self.shape else self.reshape(padded)
    return _invoke("broadcast_to", source, {"shape": shape})


def _invoke(op_name, array, params):
    from .imperative import invoke  # imperative calls build on the NDArray type

    return invoke(op_name, (array,), params)


def _slice_is_contiguous(slc_key, shape):
    """Whether ``x[slc_key]`` (one slice per axis of ``shape``) is one contiguous block.

    Scanning axes from the last: once an axis takes a proper part of itself,
    every axis before it may take at most one element; an axis taking more
    than one element with a step other than 1 is never contiguous.
    """
    if len(slc_key) != len(shape):
        raise ValueError(f"need one slice per axis: {len(slc_key)} slices for shape {shape}")
    lengths = [len(range(*slc.indices(n))) for slc, n in zip(slc_key, shape, strict=True)]
    if np.prod(lengths) <= 1:
        return True
    partial = False
    for slc, n, length in zip(slc_key[::-1], shape[::-1], lengths[::-1], strict=True):
        step = slc.indices(n)[2]
        if length > 1 and (step != 1 or partial):
            return False
        partial = partial or length < n
    return True


# NumPy ufuncs that are Python operators: (the method when the NDArray is on the
# left, the method when it is on the right)
_OPERATORS = {
    np.add: ("__add__", "__radd__"),
    np.subtract: ("__sub__", "__rsub__"),
    np.multiply: ("__mul__", "__rmul__"),
    np.true_divide: ("__truediv__", "__rtruediv__"),
    np.remainder: ("__mod__", "__rmod__"),
    np.power: ("__pow__", "__rpow__"),
    np.equal: ("__eq__", "__eq__"),
    np.not_equal: ("__ne__", "__ne__"),
    np.greater: ("__gt__", "__lt__"),
    np.greater_equal: ("__ge__", "__le__"),
    np.less: ("__lt__", "__gt__"),
    np.less_equal: ("__le__", "__ge__"),
}


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """NumPy's ufunc protocol: operators give NDArrays, anything else runs on the values.

    ``numpy_array + x`` keeps giving an NDArray (MXNet's operator semantics);
    other ufuncs and reductions (``np.all(x)``, ``np.exp(x)``) get the values
    as a NumPy array and return NumPy results, as NumPy does for any array-like.
    """
    names = _OPERATORS.get(ufunc)
    if method == "__call__" and names and len(inputs) == 2 and not kwargs:
        left, right = inputs
        if left is self:
            return getattr(self, names[0])(right)
        return getattr(self, names[1])(left)
    host = [x.asnumpy() if isinstance(x, NDArray) else x for x in inputs]
    if "out" in kwargs:
        if any(isinstance(x, NDArray) for x in kwargs["out"]):
            return NotImplemented  # NumPy cannot write into an NDArray's memory on a device
    return getattr(ufunc, method)(*host, **kwargs)


_METHODS = {
    "flatten": _flatten,
    "expand_dims": _expand_dims,
    "squeeze": _squeeze,
    "broadcast_to": _broadcast_to,
    "_basic_indexing_slice_is_contiguous": staticmethod(_slice_is_contiguous),
    "__array_ufunc__": _array_ufunc,
}


def install_views(cls):
    """Give NDArray the methods above, replacing the plain operator methods of the same names."""
    for name, method in _METHODS.items():
        setattr(cls, name, method)
