"""Binding a symbol to arrays: ``bind``, ``simple_bind`` and ``Executor.reshape``."""

import math

import numpy as np

from ..errors import ContextMismatchError, ShapeError
from ..ndarray import creation
from ..ndarray.ndarray import NDArray
from .executor import GRAD_REQS, Executor
from .plan import compile_plan
from .reshaping import MemoryGroup, carve, placement
from .sparse_binding import (
    allocate,
    check_embedding_gradients,
    gradient_stypes,
    sparse_storage,
)
from .sparse_executor import SparseExecutor

__all__ = ["bind", "simple_bind"]


def _by_name(values, names, what, required=True):
    """A list in ``names`` order from a list (exactly one per name) or a dict of arrays."""
    if values is None:
        values = {}
    if isinstance(values, dict):  # names the symbol does not use are ignored, as in MXNet
        missing = [n for n in names if values.get(n) is None]
        if required and missing:
            raise ValueError(f"{what}: no array given for {missing}; expected {names}")
        return [values.get(n) for n in names]
    values = list(values)
    if len(values) != len(names) and (required or values):
        raise ValueError(f"{what}: {len(values)} arrays given for {len(names)} ({names})")
    return values or [None] * len(names)


def _check_unique(symbol):
    """MXNet refuses symbols whose arguments (or aux states) share a name: binding is by name."""
    for kind, names in (
        ("argument", symbol.list_arguments()),
        ("auxiliary state", symbol.list_auxiliary_states()),
    ):
        seen = set()
        for name in names:
            if name in seen:
                raise ValueError(
                    f"duplicate {kind} name {name!r}: give the layers distinct "
                    f"names (name=...); {kind}s are {names}"
                )
            seen.add(name)


def grad_requests(grad_req, names):
    """``grad_req`` (str, list or dict) as one request per argument."""
    if isinstance(grad_req, str):
        reqs = [grad_req] * len(names)
    elif isinstance(grad_req, dict):
        reqs = [grad_req.get(n, "null") for n in names]
    else:
        reqs = list(grad_req)
        if len(reqs) != len(names):
            raise ValueError(f"grad_req: {len(reqs)} entries for {len(names)} arguments")
    for name, req in zip(names, reqs, strict=True):
        if req not in GRAD_REQS:
            raise ValueError(f"grad_req {req!r} for {name!r}: expected one of {GRAD_REQS}")
    return reqs


def _check_arrays(arrays, names, contexts_of, what):
    for name, array, ctx in zip(names, arrays, contexts_of, strict=True):
        if array is None:
            continue
        if not isinstance(array, NDArray):
            raise TypeError(f"{what} {name!r} must be an NDArray, got {type(array).__name__}")
        if array.context != ctx:
            raise ContextMismatchError(
                f"{what} {name!r} lives on {array.context}, but its node "
                f"runs on {ctx}; move it with as_in_context({ctx})"
            )


def bind(
    symbol,
    ctx,
    args,
    args_grad=None,
    grad_req="write",
    aux_states=None,
    group2ctx=None,
    shared_exec=None,
):
    """An Executor over the given arrays (lists in argument order, or dicts by name)."""
    _check_unique(symbol)
    arg_names, aux_names = symbol.list_arguments(), symbol.list_auxiliary_states()
    arg_arrays = _by_name(args, arg_names, "bind args")
    grad_arrays = _by_name(args_grad, arg_names, "bind args_grad", required=False)
    aux_arrays = _by_name(aux_states, aux_names, "bind aux_states")
    for name, array in zip(arg_names, arg_arrays, strict=True):
        if not isinstance(array, NDArray):
            raise TypeError(f"argument {name!r} must be an NDArray, got {type(array).__name__}")
    bound = dict(zip((*arg_names, *aux_names), (*arg_arrays, *aux_arrays), strict=True))
    ctx, contexts = placement(ctx, group2ctx, bound)
    reqs = grad_requests(grad_req, arg_names)
    reqs = ["null" if g is None else r for g, r in zip(grad_arrays, reqs, strict=True)]
    names, arrays = (*arg_names, *aux_names), (*arg_arrays, *aux_arrays)
    given = {n: a.stype for n, a in zip(names, arrays, strict=True)}
    storage = sparse_storage(symbol, ctx.device_type, given, grad_arrays)
    shapes = {n: a.shape for n, a in zip(arg_names, arg_arrays, strict=True)}
    plan = compile_plan(
        symbol, contexts, shapes, optimize=False if storage else None, grad_reqs=reqs
    )
    arg_ctx = [contexts(n) for n in plan.arguments]
    _check_arrays(arg_arrays, arg_names, arg_ctx, "argument")
    _check_arrays(grad_arrays, arg_names, arg_ctx, "gradient")
    _check_arrays(aux_arrays, aux_names, [contexts(n) for n in plan.aux_nodes], "aux state")
    _check_shapes(symbol, arg_names, arg_arrays, grad_arrays, aux_names, aux_arrays)
    if storage:
        check_embedding_gradients(storage[0], dict(zip(arg_names, grad_arrays, strict=True)))
        return SparseExecutor(symbol, ctx, plan, arg_arrays, grad_arrays, reqs, aux_arrays, storage)
    return Executor(symbol, ctx, plan, arg_arrays, grad_arrays, reqs, aux_arrays, group2ctx)


def _check_shapes(symbol, arg_names, arg_arrays, grad_arrays, aux_names, aux_arrays):
    given = {n: a.shape for n, a in zip(arg_names, arg_arrays, strict=True)}
    arg_shapes, _, aux_shapes = symbol._infer_shape_strict(**given)
    for name, shape, array in zip(aux_names, aux_shapes, aux_arrays, strict=True):
        if array.shape != shape:
            raise ShapeError(
                f"bind: aux state {name!r} has shape {array.shape}, the symbol needs {shape}"
            )
    for name, shape, grad in zip(arg_names, arg_shapes, grad_arrays, strict=True):
        if grad is not None and grad.shape != shape:
            raise ShapeError(
                f"bind: gradient of {name!r} has shape {grad.shape}, the argument has {shape}"
            )


def simple_bind(
    symbol,
    ctx,
    grad_req="write",
    type_dict=None,
    group2ctx=None,
    shared_arg_names=None,
    shared_exec=None,
    shared_buffer=None,
    shapes=None,
    stype_dict=None,
):
    """Infer every shape and dtype from the given ones, allocate, and bind."""
    _check_unique(symbol)
    ctx, contexts = placement(ctx, group2ctx)
    arg_shapes, _, aux_shapes = symbol._infer_shape_strict(**(shapes or {}))
    arg_names = symbol.list_arguments()
    pool = _SharedPool(shared_exec, shared_buffer, shared_arg_names)
    storage = sparse_storage(symbol, ctx.device_type, stype_dict, complete=stype_dict is not None)
    if storage:
        args = (symbol, ctx, contexts, grad_req, type_dict, storage, shapes, pool)
        return _sparse_simple_bind(*args)
    reqs = grad_requests(grad_req, arg_names)
    shapes = dict(zip(arg_names, arg_shapes, strict=True))
    plan = compile_plan(symbol, contexts, shapes, grad_reqs=reqs)
    arg_types, _, aux_types = symbol.infer_type(**(type_dict or {}))
    arg_arrays, grad_arrays = [], []
    for node, shape, dtype, req in zip(plan.arguments, arg_shapes, arg_types, reqs, strict=True):
        arg_arrays.append(pool.argument(node.name, shape, dtype, contexts(node)))
        grad_arrays.append(
            None if req == "null" else pool.gradient(node.name, shape, dtype, contexts(node))
        )
    aux_arrays = [
        pool.aux_state(n.name, s, t, contexts(n))
        for n, s, t in zip(plan.aux_nodes, aux_shapes, aux_types, strict=True)
    ]
    executor = Executor(symbol, ctx, plan, arg_arrays, grad_arrays, reqs, aux_arrays, group2ctx)
    if shared_exec is not None:
        MemoryGroup.join(executor, shared_exec)
    return executor


class _SharedPool:
    """Where ``simple_bind`` takes its arrays from, as MXNet does.

    Arguments named in ``shared_arg_names`` (and their gradients) and every
    aux state are ``shared_exec``'s own arrays (new ones without a
    ``shared_exec``; they never enter the buffer). Other arguments and gradients
    (``"grad of <name>"``) come from ``shared_buffer``: an entry at least as
    big is reused (a smaller array is carved from its memory); otherwise a
    new array is allocated and replaces the entry.
    """

    def __init__(self, shared_exec, shared_buffer, shared_names):
        self._exec, self._buffer = shared_exec, shared_buffer
        self._names = set(shared_names or ())

    def argument(self, name, shape, dtype, ctx):
        if name in self._names:  # a parameter: never in shared_buffer, as in MXNet
            if self._exec is not None and name in self._exec.arg_dict:
                return _shared(self._exec.arg_dict[name], name, shape, dtype, ctx)
            return creation.zeros(shape, ctx=ctx, dtype=dtype)
        return self._from_buffer(name, shape, dtype, ctx)

    def gradient(self, name, shape, dtype, ctx):
        if name in self._names:
            if self._exec is not None and name in self._exec.grad_dict:
                grad = self._exec.grad_dict[name]
                return _shared(grad, f"gradient of {name}", shape, dtype, ctx)
            return creation.zeros(shape, ctx=ctx, dtype=dtype)
        return self._from_buffer(f"grad of {name}", shape, dtype, ctx)

    def aux_state(self, name, shape, dtype, ctx):
        if self._exec is not None and name in self._exec.aux_dict:
            return _shared(self._exec.aux_dict[name], name, shape, dtype, ctx)
        return creation.zeros(shape, ctx=ctx, dtype=dtype)

    def sparse_aware(self, name, stype, shape, dtype, ctx, gradient=False):
        """An argument (or its gradient) of storage ``stype``: dense ones as above."""
        if stype == "default":
            get = self.gradient if gradient else self.argument
            return get(name, shape, dtype, ctx)
        shared = (self._exec.grad_dict if gradient else self._exec.arg_dict) if self._exec else {}
        if name in self._names and shared.get(name) is not None:
            return shared[name]
        return allocate(stype, shape, dtype, ctx)

    def _from_buffer(self, key, shape, dtype, ctx):
        if self._buffer is None:
            return creation.zeros(shape, ctx=ctx, dtype=dtype)
        found = self._buffer.get(key)
        if (
            found is not None
            and found.size >= math.prod(shape)
            and found.dtype == dtype
            and found.context == ctx
        ):
            return carve(found, shape)
        array = self._buffer[key] = creation.zeros(shape, ctx=ctx, dtype=dtype)
        return array


def _shared(array, name, shape, dtype, ctx):
    """``shared_exec``'s array for ``name``, which must fit this executor exactly."""
    if array.shape != tuple(shape) or array.dtype != dtype or array.context != ctx:
        raise ShapeError(
            f"simple_bind: shared_exec's {name!r} is {array.shape} {array.dtype} "
            f"on {array.context}; this executor needs {tuple(shape)} "
            f"{np.dtype(dtype).name} on {ctx}"
        )
    return array


def _sparse_simple_bind(symbol, ctx, contexts, grad_req, type_dict, storage, shapes, pool):
    """simple_bind for a graph with sparse storage: arrays of the inferred storage types.

    Dense arrays come from ``pool`` as in ``simple_bind`` (``shared_exec``'s
    parameters, ``shared_buffer`` for the rest); a sparse argument or gradient is
    ``shared_exec``'s own when shared by name, else a new empty one.
    """
    nodes, stypes, _ = storage
    arg_shapes, _, aux_shapes = symbol._infer_shape_strict(**(shapes or {}))
    arg_names = symbol.list_arguments()
    plan = compile_plan(symbol, contexts, dict(zip(arg_names, arg_shapes, strict=True)), False)
    arg_types, _, aux_types = symbol.infer_type(**(type_dict or {}))
    reqs = grad_requests(grad_req, arg_names)
    var_stype = {n.name: stypes[(id(n), 0)] for n in nodes if n.op is None}
    grad_stype = gradient_stypes(symbol, nodes, stypes)
    arg_arrays, grad_arrays = [], []
    for node, shape, dtype, req in zip(plan.arguments, arg_shapes, arg_types, reqs, strict=True):
        name, where = node.name, contexts(node)
        arg_arrays.append(pool.sparse_aware(name, var_stype[name], shape, dtype, where))
        stype = grad_stype.get(name, "default")
        grad_arrays.append(
            None if req == "null" else pool.sparse_aware(name, stype, shape, dtype, where, True)
        )
    aux_arrays = [
        pool.aux_state(n.name, s, t, contexts(n))
        for n, s, t in zip(plan.aux_nodes, aux_shapes, aux_types, strict=True)
    ]
    return SparseExecutor(symbol, ctx, plan, arg_arrays, grad_arrays, reqs, aux_arrays, storage)
