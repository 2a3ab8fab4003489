"""Binding with sparse storage: when a graph needs the SparseExecutor, and its arrays.

``bind`` and ``simple_bind`` (binding.py) ask ``sparse_storage`` first; a
graph whose arrays, variables or inferred entries are all dense keeps the
ordinary (compiled, optimized) Executor.
"""

from ..ndarray.sparse_array import make_sparse
from ..ops.sparse_parts import empty
from ..ops.sparse_stypes import DEFAULT, FALLBACK, StorageTypeError
from ..symbol.infer_storage import grad_stypes, infer_graph_storage, variable_stypes

__all__ = ["sparse_storage", "allocate", "check_embedding_gradients"]


def sparse_storage(symbol, device_type, given=None, grad_arrays=(), complete=False):
    """``(nodes, entry stypes, modes)`` if the graph needs sparse handling, else None.

    ``given``: name -> stype of bound arrays (``bind``) or ``stype_dict``
    (``simple_bind``, ``complete``); variables not given use their ``__storage_type__``.
    """
    var_stypes = variable_stypes(symbol, given, complete)
    nodes, stypes, modes = infer_graph_storage(symbol, var_stypes, device_type)
    sparse_grads = any(g is not None and g.stype != DEFAULT for g in grad_arrays)
    sparse_entries = any(s != DEFAULT for s in stypes.values())
    fallbacks = any(m == FALLBACK for m in modes.values())
    if not (sparse_grads or sparse_entries or fallbacks):
        wanted = grad_stypes(symbol, nodes, stypes)
        if all(s == DEFAULT for s in wanted.values()):
            return None
    return nodes, stypes, modes


def gradient_stypes(symbol, nodes, stypes):
    """Argument name -> storage of the gradient ``simple_bind`` allocates for it."""
    return grad_stypes(symbol, nodes, stypes)


def allocate(stype, shape, dtype, ctx):
    """A zero array of ``stype`` (sparse arrays store nothing)."""
    from ..ndarray import creation

    if stype == DEFAULT:
        return creation.zeros(shape, ctx=ctx, dtype=dtype)
    value = empty(ctx.backend.xp, stype, shape, dtype)
    return make_sparse(stype, value.values, value.aux, value.shape, ctx)


def check_embedding_gradients(nodes, grads):
    """Refuse, as MXNet's bind does, an Embedding whose weight gradient storage contradicts
    ``sparse_grad``: the weight a variable used by that node alone, bound with a gradient.

    ``grads``: argument name -> bound gradient array (None where grad_req is null).
    """
    uses = {}
    for node in nodes:
        for child, _ in node.inputs:
            uses[id(child)] = uses.get(id(child), 0) + 1
    for node in nodes:
        if node.op is None or node.op.name != "Embedding" or len(node.inputs) < 2:
            continue
        weight = node.inputs[1][0]
        grad = grads.get(weight.name) if weight.op is None else None
        if grad is None or uses[id(weight)] != 1:
            continue
        wanted = "row_sparse" if node.params.sparse_grad else DEFAULT
        if grad.stype != wanted:
            raise StorageTypeError(
                f"Embedding {node.name!r}: Cannot use sparse_grad = {int(node.params.sparse_grad)},"
                f" while stype of gradients w.r.t embedding weight is {grad.stype}; bind a "
                f"{wanted} gradient array for {weight.name!r} (simple_bind makes one)"
            )
