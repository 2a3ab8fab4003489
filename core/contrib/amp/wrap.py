"""What ``amp.init`` installs: ``mx.sym``/``mx.nd`` operator functions that cast their inputs.

A wrapped symbol function builds its node, then puts an ``amp_cast`` (named
by the name manager, ``amp_cast0``, ...) in front of each non-auxiliary
input; an NDArray function casts float16/float32 arrays before running. The
widest-type operators get one ``amp_multicast`` over their symbol inputs, or,
imperatively, float16 arrays promoted to float32 when any input is float32.
"""

import functools
import logging

import numpy as np

from ... import ndarray as nd
from ... import symbol as sym_module
from ...ndarray import NDArray
from ...symbol import Symbol

__all__ = ["wrap_functions"]

_AMP_FLOATS = (np.dtype(np.float16), np.dtype(np.float32))


def _cast_array(value, dtype):
    # MXNet 1.9 casts float16 arrays to float32 only off the CPU (its CPU list is
    # bfloat16/float32); rebind casts on every device, as MXNet does on GPUs
    if not isinstance(value, NDArray):
        return value
    have, want = np.dtype(value.dtype), np.dtype(dtype)
    return nd.amp_cast(value, dtype=want.name) if have != want and have in _AMP_FLOATS else value


def _cast_inputs_of(symbol, dtype):
    """Put an amp_cast to ``dtype`` before each argument input of ``symbol``'s node."""
    node = symbol._node()
    n_args = len(node.argument_names())
    entries = []
    for position, entry in enumerate(node.inputs):
        if position < n_args:
            cast = sym_module.amp_cast(Symbol([entry]), dtype=np.dtype(dtype).name)
            entry = cast._heads[0]
        entries.append(entry)
    node.inputs = entries
    return symbol


def _condition_holds(cond_arg, kwargs):
    if cond_arg is None:
        return True
    param, values = cond_arg
    return param in kwargs and kwargs[param] in values


def _symbol_wrapper(function, dtype, cond_arg=None):
    @functools.wraps(function)
    def wrapped(*args, **kwargs):
        result = function(*args, **kwargs)
        if _condition_holds(cond_arg, kwargs):
            _cast_inputs_of(result, dtype)
        return result

    return wrapped


def _ndarray_wrapper(function, dtype, cond_arg=None):
    @functools.wraps(function)
    def wrapped(*args, **kwargs):
        if _condition_holds(cond_arg, kwargs):
            args = [_cast_array(a, dtype) for a in args]
            kwargs = {k: _cast_array(v, dtype) for k, v in kwargs.items()}
        return function(*args, **kwargs)

    return wrapped


def _widest_wrapper(function):
    @functools.wraps(function)
    def wrapped(*args, **kwargs):
        args = list(args)
        slots = [(args, i) for i, a in enumerate(args) if isinstance(a, (Symbol, NDArray))]
        slots += [(kwargs, k) for k, v in kwargs.items() if isinstance(v, (Symbol, NDArray))]
        values = [holder[key] for holder, key in slots]
        if any(isinstance(v, Symbol) for v in values):
            cast = sym_module.amp_multicast(*values, num_outputs=len(values))
            values = [cast[i] for i in range(len(values))]
        elif any(np.dtype(v.dtype) == np.float32 for v in values):
            values = [_cast_array(v, np.float32) for v in values]
        for (holder, key), value in zip(slots, values, strict=True):
            holder[key] = value
        return function(*args, **kwargs)

    return wrapped


def _loss_warning_wrapper(function):
    @functools.wraps(function)
    def wrapped(*args, **kwargs):
        # MXNet's message: its loss scaling exists for Gluon Trainers only
        logging.warning(
            "%s does not support dynamic loss scaling in symbolic and hybridized execution.",
            function.__name__,
        )
        return function(*args, **kwargs)

    return wrapped


def _install(name, make):
    """Replace ``mx.sym.<name>`` and ``mx.nd.<name>`` by wrapped versions (where they exist)."""
    for module, kind in ((sym_module, "symbol"), (nd, "ndarray")):
        try:
            original = getattr(module, name)
        except AttributeError:
            continue
        setattr(module, name, make(original, kind))


def wrap_functions(target, lp16_ops, fp32_ops, conditional_fp32_ops, widest_ops, loss_ops=()):
    """Install the casting wrappers for every listed operator (and loss outputs' warning)."""

    def pick(kind):
        return _symbol_wrapper if kind == "symbol" else _ndarray_wrapper

    for name in lp16_ops:
        _install(name, lambda f, kind: pick(kind)(f, target))
    for name in fp32_ops:
        _install(name, lambda f, kind: pick(kind)(f, "float32"))
    for name, param, values in conditional_fp32_ops:
        _install(name, lambda f, kind, c=(param, values): pick(kind)(f, "float32", c))
    for name in widest_ops:
        _install(name, lambda f, kind: _widest_wrapper(f))
    for name in loss_ops:
        if hasattr(sym_module, name):
            setattr(sym_module, name, _loss_warning_wrapper(getattr(sym_module, name)))
