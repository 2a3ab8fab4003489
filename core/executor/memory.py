"""What an executor holds in memory: ``Executor.memory_report()`` and debug_str's total.

The bound arrays (arguments, gradients, auxiliary states, outputs) are counted
as allocated. The intermediate values are counted three ways:

* ``intermediates_naive``: one buffer per entry of the symbol's graph, every
  operator output alive at once (what an executor without planning holds);
* ``intermediates_inference_peak``: the most bytes alive at once in an
  inference pass of the compiled plan, whose generated code drops each value
  after its last reader (steps fused by the graph rewrites never materialise
  their inner values);
* ``intermediates_training``: what a training pass may keep for backward, at
  most every output the plan computes; the exact figure depends on what each
  operator saves.

After a training forward whose values backward has not yet released,
``intermediates_saved`` is measured instead of estimated: the bytes of the
distinct arrays (views counted once, by the memory they view) that the pass
keeps for backward beyond the bound arrays; None while no such pass is held.
Operators keep only what their backward reads (an addition keeps no array, a
relu/sigmoid/tanh its output only), so it is usually well below the estimate.

``graph_total`` is the outputs plus the training figure when a gradient flows
in the plan, else the inference peak: the memory the graph itself needs,
which ``debug_str`` prints as MXNet's "Total N MB allocated" line (MXNet's
pool, too, leaves out the arrays bound by the caller). ``planned_total`` and
``naive_total`` add the bound arrays to the planned and the naive figures.
"""

import math

import numpy as np

from ..symbol.graph import topological_order
from ..symbol.infer import infer_graph_types

__all__ = ["memory_report"]


def _nbytes(shape, dtype):
    if shape is None:
        return 0
    return math.prod(shape) * np.dtype(dtype).itemsize


def _arrays_bytes(arrays):
    return sum(a.size * np.dtype(a.dtype).itemsize for a in arrays if a is not None)


def _slot_bytes(executor):
    """Bytes of every plan slot, in the plan's slot order (entries of the symbol's graph)."""
    symbol, plan = executor._symbol, executor._plan
    given = {n: a.dtype for n, a in zip(executor._arg_names, executor.arg_arrays, strict=True)}
    nodes, types = infer_graph_types(symbol._heads, given)
    order = topological_order(symbol._heads)
    dtypes = [types[(id(node), i)] for node in order for i in range(node.num_outputs)]
    return [_nbytes(s, t) for s, t in zip(plan.slot_shapes, dtypes, strict=True)]


def _inference_peak(plan, sizes):
    live = peak = 0
    for step in plan.steps:
        live += sum(sizes[s] for s in step.outputs if s not in plan.kept_slots)
        peak = max(peak, live)
        live -= sum(sizes[s] for s in step.release if s not in plan.kept_slots)
    return peak


def memory_report(executor):
    """Bytes held by ``executor``, by kind (see the module doc)."""
    plan = executor._plan
    sizes = _slot_bytes(executor)
    computed = {s for step in plan.steps for s in step.outputs} - plan.kept_slots
    all_entries = set(range(plan.num_slots)) - plan.kept_slots
    arrays = {
        "arguments": _arrays_bytes(executor.arg_arrays),
        "gradients": _arrays_bytes(executor.grad_arrays),
        "aux_states": _arrays_bytes(executor.aux_arrays),
        "outputs": _arrays_bytes(executor.outputs),
    }
    report = {
        **arrays,
        "intermediates_naive": sum(sizes[s] for s in all_entries),
        "intermediates_inference_peak": _inference_peak(plan, sizes),
        "intermediates_training": sum(sizes[s] for s in computed),
    }
    report["intermediates_saved"] = saved_bytes(executor)
    trains = any(any(step.need_grad) for step in plan.steps)
    kept = report["intermediates_training" if trains else "intermediates_inference_peak"]
    report["graph_total"] = arrays["outputs"] + kept
    report["planned_total"] = sum(arrays.values()) + kept
    report["naive_total"] = sum(arrays.values()) + report["intermediates_naive"]
    return report


def saved_bytes(executor):
    """Bytes the held training pass keeps for backward beyond the bound arrays, or None."""
    saved = executor._saved
    if saved is None:
        return None
    bound = (executor.arg_arrays, executor.grad_arrays, executor.aux_arrays, executor.outputs)
    seen = {id(_memory_of(a._data)) for arrays in bound for a in arrays if a is not None}
    total = 0
    for array in _arrays_in(saved):
        memory = _memory_of(array)
        if id(memory) not in seen:
            seen.add(id(memory))
            total += memory.nbytes
    return total


def _memory_of(array):
    """The array owning the memory ``array`` views (itself when it owns it)."""
    while getattr(array, "base", None) is not None and hasattr(array.base, "nbytes"):
        array = array.base
    return array


def _arrays_in(state):
    """Every array in a step's saved state: in tuples, lists, dicts and rebind's own objects."""
    stack, visited = [state], set()
    while stack:
        item = stack.pop()
        if id(item) in visited:
            continue
        visited.add(id(item))
        if isinstance(item, np.generic):  # a number (a scalar op's operand), not an array
            continue
        if hasattr(item, "nbytes") and hasattr(item, "shape"):
            yield item
        elif isinstance(item, (tuple, list)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif type(item).__module__.startswith("rebind."):
            stack.extend(_fields(item))


def _fields(item):
    """The attribute values of one of rebind's objects (``__slots__`` or ``__dict__``)."""
    names = [n for klass in type(item).__mro__ for n in getattr(klass, "__slots__", ())]
    values = [getattr(item, n, None) for n in names]
    return values + list(getattr(item, "__dict__", {}).values())
