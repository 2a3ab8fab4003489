"""Imperative operator calls: ``mx.nd.FullyConnected(...)``, ``x.sum(axis=1)``.

Each call runs the operator's forward kernel once on the inputs' context, in
inference mode (as MXNet does outside ``autograd.record``), with the same
OpDef the executor uses: one definition, two ways to call it.
"""

import functools

from .. import registry
from ..context import current_context
from ..errors import ContextMismatchError
from ..ops import FLUENT_METHODS
from ..ops.base import OpContext, positional_params, split_positional
from ..ops.params import to_attr_string
from ..ops.sparse_parts import is_sparse
from ..profiler import PROFILER
from .imperative_sparse import from_parts, needs_storage_dispatch, run_with_storage, to_parts
from .imperative_sparse_update import handles as handles_update
from .imperative_sparse_update import run_update
from .ndarray import NDArray

__all__ = ["invoke", "op_function", "install_methods"]


@functools.lru_cache(maxsize=4096)
def _parsed(op, raw_items):
    return op.parse(dict(raw_items))


def _split(op, args, kwargs):
    """(positional arrays, named arrays, string params) from a call's arguments.

    Positional values after the arrays are parameters in the order the op
    declares them, as in MXNet's generated functions (``x.clip(0, 1)``).
    """
    arrays, extra = split_positional(op, args, NDArray)
    named = {k: v for k, v in kwargs.items() if isinstance(v, NDArray)}
    params = {k: to_attr_string(v) for k, v in kwargs.items() if k not in named}
    params.update(positional_params(op, extra, params))
    return arrays, named, params


def _inputs(op, params, arrays, named):
    slots = (*op.arguments(params), *op.aux_states(params))
    unknown = set(named) - set(slots)
    if unknown:
        raise ValueError(f"{op.name}: unknown input {sorted(unknown)[0]!r}; inputs are {slots}")
    values = list(arrays) + [named[s] for s in slots[len(arrays) :] if s in named]
    if len(values) != len(slots):
        raise ValueError(f"{op.name}: takes inputs ({', '.join(slots)}), {len(values)} given")
    return values[: len(op.arguments(params))], values[len(op.arguments(params)) :]


def _context(op_name, values):
    ctx = values[0].context if values else current_context()
    for value in values[1:]:
        if value.context != ctx:
            raise ContextMismatchError(f"{op_name}: inputs live on {ctx} and {value.context}")
    return ctx


def invoke(op_name, args, kwargs):
    """Run operator ``op_name`` once; returns an NDArray or a list of them."""
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    kwargs.pop("name", None)
    ctx_arg = kwargs.pop("ctx", None)
    op = registry.lookup("operators", op_name)
    arrays, named, raw = _split(op, args, kwargs)
    if op.variadic and op.variadic not in raw:
        raw[op.variadic] = str(len(arrays))
    params = _parsed(op, tuple(sorted(raw.items())))
    inputs, aux = _inputs(op, params, arrays, named)
    ctx = _context(op.name, inputs + aux) if inputs or aux else _creation_context(ctx_arg)
    _, out_shapes, _ = op.infer_shapes(
        params,
        [a.shape for a in inputs],
        _target_shapes(op, params, out),
        [a.shape for a in aux],
        node=op.name,
    )
    if handles_update(op, inputs):  # update ops on sparse arrays (imperative_sparse_update)
        return run_update(op, params, raw, inputs, out, ctx)
    if needs_storage_dispatch(op, raw, inputs + aux):  # sparse storage (imperative_sparse)
        return _deliver(_run_sparse(op, params, raw, inputs, aux, ctx, out_shapes), out)
    # out=input 0 (``sgd_update(w, g, out=w)``): MXNet's kernel then writes over the
    # input it reads, which nag_mom_update's result depends on
    inplace = _writes_input0(out, inputs)
    op_ctx = OpContext(False, ctx.backend, ctx.device_id, tuple(out_shapes), inplace=inplace)
    in_data, aux_data = [a._data for a in inputs], [a._data for a in aux]
    if PROFILER.imperative:
        outputs, _ = PROFILER.time_op(
            op.name, None, ctx, op.forward, op_ctx, params, in_data, aux_data
        )
    else:
        outputs, _ = op.forward(op_ctx, params, in_data, aux_data)
    if out is None:  # (with out=, the results are copied into out anyway)
        outputs = _unshared(ctx.backend.xp, outputs, in_data + aux_data)
    results = [NDArray(o, ctx) for o in outputs]
    return _deliver(results, out)


def _run_sparse(op, params, raw, inputs, aux, ctx, out_shapes):
    """The call through storage inference: sparse kernels, or MXNet's fallback."""
    op_ctx = OpContext(False, ctx.backend, ctx.device_id, tuple(out_shapes))
    values, aux_values = [to_parts(a) for a in inputs], [to_parts(a) for a in aux]
    outputs, _, _ = run_with_storage(op, op_ctx, params, raw, values, aux_values, ctx)
    dense_in = [v for v in values + aux_values if not is_sparse(v)]
    outputs = [o if is_sparse(o) else _unshared(ctx.backend.xp, [o], dense_in)[0] for o in outputs]
    return [from_parts(o, ctx) for o in outputs]


def _unshared(xp, outputs, inputs):
    """``outputs``, each copied if it is a view of an input.

    A kernel may return a view (``Flatten`` reshapes); in a bound graph that
    saves a copy, but an imperative call gives new arrays, as MXNet's always do.
    """
    return [o.copy() if any(xp.may_share_memory(o, i) for i in inputs) else o for o in outputs]


def _writes_input0(out, inputs):
    """Whether output 0 goes to input 0, which no other input shares."""
    target = out[0] if isinstance(out, (list, tuple)) and out else out
    if not isinstance(target, NDArray) or not inputs or target is not inputs[0]:
        return False
    return not any(a is target or a._data is target._data for a in inputs[1:])


def _target_shapes(op, params, out):
    """The shapes of the ``out=`` arrays, which tell creators like ``_set_value`` their shape."""
    if out is None:
        return None
    targets = out if isinstance(out, (list, tuple)) else [out]
    if len(targets) != len(op.outputs(params)):
        return None
    return [tuple(t.shape) for t in targets]


def _creation_context(ctx_arg):
    from ..context import Context

    return current_context() if ctx_arg is None else Context(ctx_arg)


def _deliver(results, out):
    if out is not None:
        targets = out if isinstance(out, (list, tuple)) else [out]
        for target, result in zip(targets, results, strict=False):
            result.copyto(target)
        return out
    return results[0] if len(results) == 1 else results


def op_function(op_name, func_name):
    """The ``mx.nd.<func_name>`` function of an operator."""
    op = registry.lookup("operators", op_name)

    def call(*args, **kwargs):
        return invoke(op_name, args, kwargs)

    call.__name__ = call.__qualname__ = func_name
    call.__doc__ = f"{op.name}: {op.doc}" if op.doc else op.name
    return call


def install_methods(cls):
    """Give NDArray a method per fluent operator (``x.sum(axis=1)``)."""
    for method, op_name in FLUENT_METHODS.items():
        if method in cls.__dict__:
            continue
        setattr(cls, method, _method(op_name, method))


def _method(op_name, method):
    def call(self, *args, **kwargs):
        return invoke(op_name, (self, *args), kwargs)

    call.__name__ = call.__qualname__ = method
    call.__doc__ = f"``mx.nd.{op_name}(self, ...)``."
    return call
