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
    trains = any(any(step.need_grad) for step in plan.steps)
    kept = report["intermediates_training" if trains else "intermediates_inference_peak"]
    report["graph_total"] = arrays["outputs"] + kept
    report["planned_total"] = sum(arrays.values()) + kept
    report["naive_total"] = sum(arrays.values()) + report["intermediates_naive"]
    return report
