"""Optimizer updates with row_sparse gradients, weights or states, as MXNet 1.9.1 runs them.

MXNet's update operators take three paths when an array is row_sparse:

- **lazy**: only the rows the gradient holds are touched (weight decay,
  momentum decay, moment averages included); every other row keeps its value
  and state. SGD and Adam with ``lazy_update=True`` (and states of the
  weight's storage type), AdaGrad, FTRL (row_sparse weight) and GroupAdaGrad.
- **standard**: the dense update, the missing gradient rows counting as zeros
  (SGD and Adam with ``lazy_update=False`` or dense states of a row_sparse
  weight, and every optimizer without a sparse kernel: MXNet's storage
  fallback).
- **refused**: AdaGrad with weight decay ("Operator not implemented").

A lazy update here is the optimizer's own dense rule applied to the gathered
rows of the weight and states, then scattered back: each element goes through
the same operations as in MXNet's row kernels. A row_sparse weight must hold
every row (MXNet's ``CheckAllRowsPresent``); a row_sparse state that holds no
row yet is filled with zeros first (MXNet's ``FillDnsZerosRspImpl``).
"""

import functools

import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray
from ..ndarray.sparse_rows import full_rows, store_every_row, stype_of, touched

__all__ = [
    "ALWAYS_LAZY",
    "LAZY_FOR_ROW_SPARSE_WEIGHT",
    "LAZY_WHEN_SAME_STYPE",
    "any_sparse",
    "new_state",
    "register_rule",
    "sparse_aware",
]

# how an optimizer class treats a row_sparse gradient (exact classes: a subclass
# with its own arithmetic, LARS for one, takes MXNet's dense fallback instead)
LAZY_WHEN_SAME_STYPE = "lazy when lazy_update and the states share the weight's stype"
ALWAYS_LAZY = "lazy"
LAZY_FOR_ROW_SPARSE_WEIGHT = "lazy for a row_sparse weight, else the dense fallback"
_RULES = {}


def register_rule(cls, rule, refuse=None):
    """Declare how ``cls`` updates with a row_sparse gradient (see the module docstring).

    Args:
        cls: the optimizer class (exactly; subclasses are not covered).
        rule: ``LAZY_WHEN_SAME_STYPE`` or ``ALWAYS_LAZY``.
        refuse: optional ``f(optimizer, index) -> message or None``, checked first.
    """
    _RULES[cls] = (rule, refuse)


def new_state(weight, stype, shape=None, dtype=None):
    """A zero state for ``weight``: dense, or row_sparse holding no row (MXNet's ``zeros``)."""
    from ..ndarray import zeros
    from ..ndarray.sparse_array import make_sparse
    from ..ndarray.sparse_convert import empty_parts

    shape = tuple(weight.shape if shape is None else shape)
    dtype = weight.dtype if dtype is None else dtype
    ctx = weight.context
    if stype == "default":
        return zeros(shape, ctx, dtype=dtype)
    values, aux = empty_parts(ctx.backend.xp, stype, shape, np.dtype(dtype))
    return make_sparse(stype, values, aux, shape, ctx)


def _flat(state):
    if state is None:
        return []
    if isinstance(state, (list, tuple)):
        return [part for item in state for part in _flat(item)]
    return [state]


def _rebuilt(state, convert):
    """``state`` with every NDArray replaced by ``convert(array)``, nesting kept."""
    if state is None:
        return None
    if isinstance(state, (list, tuple)):
        return type(state)(_rebuilt(part, convert) for part in state)
    return convert(state)


def sparse_aware(update):
    """Wrap an optimizer's ``update`` so that sparse arrays take MXNet's sparse paths.

    Dense arrays go straight to ``update`` (one type check); otherwise the
    lazy, standard or refused path of the module docstring is taken.
    """

    @functools.wraps(update)
    def wrapper(self, index, weight, grad, state):
        dense_state = state is None or type(state) is NDArray or not _any_sparse(state)
        if type(grad) is NDArray and type(weight) is NDArray and dense_state:
            return update(self, index, weight, grad, state)
        if isinstance(index, (list, tuple)):  # several weights a call (LARS, LAMB)
            if not any_sparse(weight, grad, state):
                return update(self, index, weight, grad, state)
            for i, w, g, s in zip(index, weight, grad, state, strict=True):
                wrapper(self, i, w, g, s)
            return None
        return _sparse_update(update, self, index, weight, grad, state)

    wrapper.sparse_aware = True
    return wrapper


def _any_sparse(state):
    return any(stype_of(part) != "default" for part in _flat(state))


def any_sparse(*groups):
    """Whether any array in ``groups`` (lists of arrays, states or None) is not dense."""
    return any(_any_sparse(group) for group in groups)


def _sparse_update(update, optimizer, index, weight, grad, state):
    rule, refuse = _RULES.get(type(optimizer), (None, None))
    if stype_of(grad) == "row_sparse" and rule is not None:
        message = refuse(optimizer, index) if refuse is not None else None
        if message:
            raise MXNetError(message)
        if _is_lazy(rule, optimizer, weight, state):
            return _lazy_update(update, optimizer, index, weight, grad, state)
        if rule != LAZY_FOR_ROW_SPARSE_WEIGHT:
            return _standard_update(update, optimizer, index, weight, grad, state)
    # MXNet's storage fallback: the dense update, written back with every row stored
    for part in [weight, *_flat(state)]:
        store_every_row(part)
    return _standard_update(update, optimizer, index, weight, grad, state)


def _is_lazy(rule, optimizer, weight, state):
    """MXNet's dispatch: whether the update operator runs its lazy row kernel."""
    if rule == ALWAYS_LAZY:
        return True
    if rule == LAZY_FOR_ROW_SPARSE_WEIGHT:
        return stype_of(weight) == "row_sparse"
    # sgd(_mom)/adam: lazy iff asked for and the states share the weight's stype
    if not getattr(optimizer, "lazy_update", True):
        return False
    return all(stype_of(part) == stype_of(weight) for part in _flat(state))


def _as_dense_view(array, owner, what, zero_fill):
    """A dense NDArray sharing ``array``'s storage of every row (itself when dense)."""
    if type(array) is NDArray or stype_of(array) == "default":
        return array
    return NDArray(full_rows(array, owner, what, zero_fill), array.context)


def _lazy_update(update, optimizer, index, weight, grad, state):
    """The dense rule on the rows the gradient holds, scattered back into weight and states."""
    owner = type(optimizer).__name__
    w_full = full_rows(weight, owner, "weights")
    xp = weight.context.backend.xp
    rows = xp.asarray(grad._aux[0])
    ctx = weight.context

    gathered = {}

    def gather(part):
        full = full_rows(part, owner, "states", zero_fill=True)
        taken = NDArray(full[rows], part.context)
        gathered[id(taken)] = (full, taken)
        return taken

    w_rows = NDArray(w_full[rows], ctx)
    s_rows = _rebuilt(state, gather)
    update(optimizer, index, w_rows, NDArray(grad._values, grad.context), s_rows)
    w_full[rows] = w_rows._data
    for full, taken in gathered.values():
        full[rows] = taken._data
    for part in [weight, *_flat(state)]:
        touched(part)


def _standard_update(update, optimizer, index, weight, grad, state):
    """The dense rule on every row, missing gradient rows as zeros (MXNet's fallback too).

    csr weights and states (MXNet's fallback only) are updated as dense copies,
    then stored back in their own storage.
    """
    owner = type(optimizer).__name__
    copies = []

    def dense_view(part, what, zero_fill):
        if stype_of(part) == "csr":
            copy = NDArray(part._data, part.context)
            copies.append((part, copy))
            return copy
        return _as_dense_view(part, owner, what, zero_fill)

    dense_weight = dense_view(weight, "weights", False)
    dense_state = _rebuilt(state, lambda part: dense_view(part, "states", True))
    dense_grad = grad if stype_of(grad) == "default" else NDArray(grad._data, grad.context)
    update(optimizer, index, dense_weight, dense_grad, dense_state)
    for part, copy in copies:
        part._store(copy)
    for part in [weight, *_flat(state)]:
        if stype_of(part) != "csr":  # (_store moved a csr array's version on)
            touched(part)
