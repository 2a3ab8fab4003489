"""Python operators of sparse arrays, run as the operators MXNet runs for them.

``csr + csr`` is ``elemwise_add``, ``rsp * 2`` is ``_mul_scalar``, ``0 < csr`` is
``_greater_scalar`` and so on (MXNet's ``_ufunc_helper`` choices, with
``elemwise_*`` for same-shape arrays as its ``sparse.add``/``subtract``/...).
Going through ``imperative.invoke`` lets the operator layer pick the output
storage (and a sparse kernel) where it has one, and fall back to dense values
where it has not.
"""

import numbers

import numpy as np

from .ndarray import NDArray

__all__ = ["add", "divide", "install_sparse_operators", "multiply", "subtract"]

# name: (same-shape array op, broadcast op, scalar op, reflected scalar op)
_OPS = {
    "add": ("elemwise_add", "broadcast_add", "_plus_scalar", "_plus_scalar"),
    "subtract": ("elemwise_sub", "broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    "multiply": ("elemwise_mul", "broadcast_mul", "_mul_scalar", "_mul_scalar"),
    "divide": ("elemwise_div", "broadcast_div", "_div_scalar", "_rdiv_scalar"),
    "modulo": ("broadcast_mod", "broadcast_mod", "_mod_scalar", "_rmod_scalar"),
    "power": ("broadcast_power", "broadcast_power", "_power_scalar", "_rpower_scalar"),
    "equal": ("broadcast_equal", "broadcast_equal", "_equal_scalar", "_equal_scalar"),
    "not_equal": (
        "broadcast_not_equal",
        "broadcast_not_equal",
        "_not_equal_scalar",
        "_not_equal_scalar",
    ),
    "greater": ("broadcast_greater", "broadcast_greater", "_greater_scalar", "_lesser_scalar"),
    "greater_equal": (
        "broadcast_greater_equal",
        "broadcast_greater_equal",
        "_greater_equal_scalar",
        "_lesser_equal_scalar",
    ),
    "less": ("broadcast_lesser", "broadcast_lesser", "_lesser_scalar", "_greater_scalar"),
    "less_equal": (
        "broadcast_lesser_equal",
        "broadcast_lesser_equal",
        "_lesser_equal_scalar",
        "_greater_equal_scalar",
    ),
}

_DUNDERS = {
    "add": ("__add__", "__radd__"),
    "subtract": ("__sub__", "__rsub__"),
    "multiply": ("__mul__", "__rmul__"),
    "divide": ("__truediv__", "__rtruediv__"),
    "modulo": ("__mod__", "__rmod__"),
    "power": ("__pow__", "__rpow__"),
    "equal": ("__eq__", None),
    "not_equal": ("__ne__", None),
    "greater": ("__gt__", None),
    "greater_equal": ("__ge__", None),
    "less": ("__lt__", None),
    "less_equal": ("__le__", None),
}


def _invoke(op_name, args, params):
    from .imperative import invoke  # operator calls build on the array types

    return invoke(op_name, args, params)


def _apply(self, other, name, reflected):
    """``self <name> other`` (or ``other <name> self`` when ``reflected``)."""
    same_shape_op, broadcast_op, scalar_op, rscalar_op = _OPS[name]
    if isinstance(other, (numbers.Number, np.generic)) and not isinstance(other, bool):
        op_name = rscalar_op if reflected else scalar_op
        return _invoke(op_name, (self,), {"scalar": float(other)})
    if isinstance(other, NDArray):
        op_name = same_shape_op if other.shape == self.shape else broadcast_op
        args = (other, self) if reflected else (self, other)
        return _invoke(op_name, args, {})
    # anything else (NumPy arrays, lists): the dense operators' own conversions
    dense = NDArray(self._data, self._ctx)
    dunder = _DUNDERS[name][1 if reflected else 0]
    return getattr(dense, dunder)(other)


def _negative(self):
    """``-x``: ``_mul_scalar(x, -1)``, as MXNet computes it (keeps the storage)."""
    return _invoke("_mul_scalar", (self,), {"scalar": -1.0})


def install_sparse_operators(cls):
    """Give ``cls`` (BaseSparseNDArray) MXNet's operator-backed Python operators."""
    for name, (forward, reflected) in _DUNDERS.items():
        setattr(cls, forward, lambda self, other, _n=name: _apply(self, other, _n, False))
        if reflected:
            setattr(cls, reflected, lambda self, other, _n=name: _apply(self, other, _n, True))
    cls.__div__, cls.__rdiv__ = cls.__truediv__, cls.__rtruediv__
    cls.__neg__ = _negative
    cls.__hash__ = NDArray.__hash__  # defining __eq__ would otherwise drop it


def _function(name):
    def call(lhs, rhs):
        if isinstance(lhs, NDArray):
            return _apply(lhs, rhs, name, False)
        if isinstance(rhs, NDArray):
            return _apply(rhs, lhs, name, True)
        return _PYTHON[name](lhs, rhs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = (
        f"``lhs {_SYMBOLS[name]} rhs`` with broadcasting: ``elemwise_*`` for arrays of one "
        "shape (sparse results where the operator layer has them), else ``broadcast_*``."
    )
    return call


_PYTHON = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
}
_SYMBOLS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
add, subtract, multiply, divide = (_function(n) for n in ("add", "subtract", "multiply", "divide"))
