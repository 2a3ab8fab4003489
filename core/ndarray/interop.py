"""``mx.nd``'s bridges to other array libraries (NumPy, DLPack), and NDArray's extra methods.

The DLPack functions live in ``dlpack.py``; they are re-exported here with
NumPy's ``from_numpy`` and become NDArray methods through ``install_extras``.
"""

import numpy as np

from ..context import cpu
from ..errors import ShapeError
from .creation import array
from .dlpack import from_dlpack, to_dlpack_for_read, to_dlpack_for_write, writable
from .ndarray import NDArray

__all__ = [
    "from_numpy",
    "from_dlpack",
    "to_dlpack_for_read",
    "to_dlpack_for_write",
    "imdecode",
    "CachedOp",
    "install_extras",
]

AUTOGRAD_REASON = (
    "rebind has no mx.autograd: gradients come from bound symbols "
    "(Module.backward or Executor.backward), not from recorded NDArray code"
)
IMDECODE_REASON = (
    "mx.nd.imdecode is MXNet's deprecated decoder and fails on every input in MXNet 1.9.1; "
    "use mx.image.imdecode"
)
CACHEDOP_REASON = (
    "CachedOp runs a symbol imperatively for Gluon's hybridized blocks; rebind has no Gluon: "
    "bind the symbol instead (sym.bind(...).forward() or sym.eval(ctx, **arrays))"
)


def from_numpy(ndarray, zero_copy=True, array_cls=NDArray):
    """An NDArray on cpu(0) from a NumPy array, sharing its memory when ``zero_copy``.

    As in MXNet, the dtype is kept (float64 stays float64), zero-copy
    needs a C-contiguous array and leaves ``ndarray`` read-only. Where
    cpu(0)'s backend cannot hold a NumPy array as is, the values are copied.
    """
    if array_cls is not NDArray:
        raise TypeError(f"from_numpy makes NDArrays, not {array_cls!r}")
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy takes a numpy.ndarray, got {type(ndarray).__name__}")
    ctx = cpu(0)
    if not zero_copy:
        return array(ndarray, ctx=ctx, dtype=ndarray.dtype)
    if not ndarray.flags.c_contiguous:
        raise ValueError(
            "from_numpy(zero_copy=True) needs a C-contiguous array; pass "
            "numpy.ascontiguousarray(a) or zero_copy=False"
        )
    if ctx.backend.owns(ndarray):
        # the NDArray now owns the memory: as in MXNet, the NumPy array turns read-only
        # (its values still follow the NDArray's writes); the NDArray keeps a writable view
        view = ndarray.view() if ndarray.flags.writeable else writable(ndarray)
        ndarray.flags.writeable = False
        return NDArray(view, ctx)
    return array(ndarray, ctx=ctx, dtype=ndarray.dtype)


def imdecode(*args, **kwargs):
    """MXNet's image decoder; not in rebind yet (issue #17)."""
    raise NotImplementedError(IMDECODE_REASON)


class CachedOp:
    """MXNet's imperative runner of a symbol, used by Gluon; not in rebind (see the reason)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(CACHEDOP_REASON)


# -- NDArray methods that are not operators ------------------------------------------
def _as_nd_ndarray(self):
    """``self``: rebind has only the classic NDArray (no ``mx.np`` arrays)."""
    return self


def _tostype(self, stype):
    """A copy in storage ``stype``: 'default', 'csr' (2-d arrays) or 'row_sparse'."""
    from .sparse_create import cast_storage

    return cast_storage(self, stype)


def _detach(self):
    """An array sharing ``self``'s memory (there is no autograd graph to cut in rebind)."""
    return NDArray(self.data, self.context)


def _attach_grad(self, grad_req="write", stype=None):
    """MXNet's autograd hook; not in rebind."""
    raise NotImplementedError(AUTOGRAD_REASON)


def _backward(self, out_grad=None, retain_graph=False, train_mode=True):
    """MXNet's autograd backward; not in rebind."""
    raise NotImplementedError(AUTOGRAD_REASON)


def _grad(self):
    """The gradient attached by autograd: always None, as no gradient can be attached here."""
    return None


def _broadcast_like(self, other):
    """``self`` broadcast to ``other``'s shape (a copy)."""
    xp = self.context.backend.xp
    try:
        out = xp.broadcast_to(self.data, other.shape)
    except ValueError as exc:
        raise ShapeError(
            f"broadcast_like: shape {self.shape} does not broadcast to {other.shape}"
        ) from exc
    return NDArray(xp.ascontiguousarray(out), self.context)


def _slices(begin, end, step):
    step = step or (None,) * len(begin)
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step, strict=True))


def _slice_assign(self, rhs, begin, end, step):
    """Write ``rhs`` into ``self[begin:end:step]`` (per axis) in place; returns ``self``."""
    self[_slices(begin, end, step)] = rhs
    return self


def _slice_assign_scalar(self, value, begin, end, step):
    """Write the number ``value`` into ``self[begin:end:step]`` in place; returns ``self``."""
    self[_slices(begin, end, step)] = float(value)
    return self


def _split_v2(self, *args, **kwargs):
    """``mx.nd.split_v2(self, ...)``."""
    from .helpers import split_v2  # helpers build on the NDArray type this module extends

    return split_v2(self, *args, **kwargs)


_METHODS = {
    "as_nd_ndarray": _as_nd_ndarray,
    "split_v2": _split_v2,
    "tostype": _tostype,
    "detach": _detach,
    "attach_grad": _attach_grad,
    "backward": _backward,
    "broadcast_like": _broadcast_like,
    "slice_assign": _slice_assign,
    "slice_assign_scalar": _slice_assign_scalar,
    "to_dlpack_for_read": to_dlpack_for_read,
    "to_dlpack_for_write": to_dlpack_for_write,
}


def install_extras(cls):
    """Give NDArray the methods above (kept here so ndarray.py stays the core type)."""
    for name, function in _METHODS.items():
        if name not in cls.__dict__:
            setattr(cls, name, function)
    if "grad" not in cls.__dict__:
        cls.grad = property(_grad)
    if "writable" not in cls.__dict__:
        cls.writable = property(lambda self: True, doc="Always True: every array is writable.")
