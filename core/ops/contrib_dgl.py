"""The deterministic DGL graph operators of mx.contrib on csr graphs: dgl_adjacency,
dgl_subgraph and dgl_graph_compact, as MXNet 1.9.1's contrib/dgl_graph.cc.

A graph is a square csr array whose stored values are edge ids. The operators
run only on csr input (MXNet has no dense kernel: the dense entry points
refuse, as edge_id's); the storage rules (``STORAGE``) and the csr kernels
(``KERNELS``) are reached through the sparse dispatcher.

Differences from MXNet (where its kernel is silently wrong, rebind is right):
dgl_graph_compact's ``return_mapping`` outputs are left unwritten (empty) by
MXNet; rebind fills them with the input graph's values (the original edge ids
of each compacted edge), as dgl_subgraph's mapping. dgl_subgraph reads any
graph dtype (MXNet reads the values as int64 whatever they are).
"""

import types

import attrs
import numpy as np

from ..errors import DTypeMismatchError
from .base import OpDef, mismatch
from .params import param
from .sparse_parts import AUX_DTYPE, Parts

__all__ = ["KERNELS", "OPS", "STORAGE", "csr_only", "numbered_outputs", "on_host", "refuse_dense"]

_CSR, _DEFAULT = "csr", "default"


def refuse_dense(name):
    """A dense forward refusing the call: MXNet's DGL operators run on csr graphs only."""

    def forward(ctx, p, inputs, aux):
        raise TypeError(
            f"{name}: the graph is a dense array; {name} only works for csr matrices "
            "(as MXNet 1.9.1): pass graph.tostype('csr')"
        )

    return forward


def csr_only(out_stypes, graphs=1):
    """A storage rule: the first ``graphs`` inputs csr, the rest dense; outputs fixed."""

    def rule(p, ins, dev):
        if any(s != _CSR for s in ins[:graphs]) or any(s != _DEFAULT for s in ins[graphs:]):
            return None
        return tuple(out_stypes(p)), "sparse"

    return rule


def _require_int64(op_name, name, dtype):
    if dtype is not None and np.dtype(dtype) != np.int64:
        raise DTypeMismatchError(
            f"{op_name}: input {name!r} has dtype {np.dtype(dtype).name}, expected int64 "
            f"(vertex and edge ids, as MXNet 1.9.1): cast it with .astype('int64')"
        )


def _csr(values, indices, indptr, shape):
    return Parts(_CSR, values, (indptr.astype(AUX_DTYPE), indices.astype(AUX_DTYPE)), shape)


def on_host(kernel):
    """``kernel`` run on NumPy copies of its inputs, its outputs moved back to the device.

    The DGL operators are index bookkeeping on small graphs (MXNet has CPU kernels only):
    the host runs them, whatever the device, with NumPy's full indexing API.
    """

    def run(ctx, op, p, inputs, out_stypes):
        to_host, xp = ctx.backend.to_host, ctx.xp
        host = [
            Parts(a.stype, to_host(a.values), tuple(to_host(x) for x in a.aux), a.shape)
            if isinstance(a, Parts)
            else to_host(a)
            for a in inputs
        ]
        outs = kernel(types.SimpleNamespace(xp=np), op, p, host, out_stypes)
        return [
            Parts(o.stype, xp.asarray(o.values), tuple(xp.asarray(x) for x in o.aux), o.shape)
            if isinstance(o, Parts)
            else xp.asarray(o)
            for o in outs
        ]

    run.__name__ = kernel.__name__
    return run


def _gather_rows(xp, graph, rows):
    """Positions (into values/indices) of the stored elements of ``rows``, and row counts."""
    starts, counts = graph.indptr[rows], graph.indptr[rows + 1] - graph.indptr[rows]
    total = int(counts.sum())
    offsets = xp.repeat(xp.cumsum(counts) - counts, counts)
    return xp.repeat(starts, counts) + xp.arange(total, dtype=AUX_DTYPE) - offsets, counts


# -- dgl_adjacency -------------------------------------------------------------------


def _adjacency_shape(p, in_shapes, out_shapes, aux_shapes):
    graph = in_shapes[0] if in_shapes[0] is not None else out_shapes[0]
    if graph is not None and len(graph) != 2:
        raise mismatch("data", graph, "a 2-D csr graph")
    return [graph], [graph], aux_shapes


def _adjacency_type(p, in_types, out_types, aux_types):
    _require_int64("_contrib_dgl_adjacency", "data", in_types[0])
    return in_types, ["float32"], aux_types


def _adjacency_kernel(ctx, op, p, inputs, out_stypes):
    """The graph's pattern with every stored value 1 (float32)."""
    graph = inputs[0]
    _require_int64("_contrib_dgl_adjacency", "data", graph.dtype)  # (imperative calls)
    ones = ctx.xp.ones(graph.values.shape, dtype="float32")
    return [Parts(_CSR, ones, tuple(a.copy() for a in graph.aux), graph.shape)]


# -- dgl_subgraph --------------------------------------------------------------------


@attrs.frozen
class SubgraphParams:
    num_args: int = param("int")
    return_mapping: bool = param("bool")

    def __attrs_post_init__(self):
        if self.num_args < 2:
            raise ValueError(f"num_args is {self.num_args}, expected at least 2")


def _subgraph_args(p):
    return ("graph", *(f"varray{i}" for i in range(p.num_args - 1)))


def numbered_outputs(count):
    """MXNet's names of an operator's outputs when it declares none: output0, output1..."""
    return tuple(f"output{i}" for i in range(count))


def _subgraph_outputs(p):
    return numbered_outputs((p.num_args - 1) * (2 if p.return_mapping else 1))


def _subgraph_shape(p, in_shapes, out_shapes, aux_shapes):
    graph, *varrays = in_shapes
    if graph is not None and len(graph) != 2:
        raise mismatch("graph", graph, "a 2-D csr graph")
    sizes = []
    for i, shape in enumerate(varrays):
        if shape is not None and len(shape) != 1:
            raise mismatch(f"varray{i}", shape, "a 1-D array of vertex ids")
        sizes.append(None if shape is None else (shape[0], shape[0]))
    return in_shapes, sizes * (len(out_shapes) // len(sizes)), aux_shapes


def _subgraph_type(p, in_types, out_types, aux_types):
    for i, dtype in enumerate(in_types[1:]):
        _require_int64("_contrib_dgl_subgraph", f"varray{i}", dtype)
    return in_types, [in_types[0]] * len(out_types), aux_types


def _induced(xp, graph, vids):
    """(indices, counts, original positions) of the subgraph induced by sorted ``vids``."""
    vertices = graph.shape[0]
    if vids.size and bool((vids[1:] < vids[:-1]).any()):
        raise ValueError("_contrib_dgl_subgraph: the input vertex list has to be sorted")
    if vids.size and (int(vids.max()) >= vertices or int(vids.min()) < 0):
        raise ValueError(
            f"_contrib_dgl_subgraph: vertex id {int(vids.max())} isn't in a graph of "
            f"{vertices} vertices"
        )
    new_id = xp.full(vertices, -1, dtype=AUX_DTYPE)
    new_id[vids] = xp.arange(vids.size, dtype=AUX_DTYPE)
    positions, counts = _gather_rows(xp, graph, vids)
    mapped = new_id[graph.indices[positions]]
    keep = mapped >= 0
    row_of = xp.repeat(xp.arange(vids.size, dtype=AUX_DTYPE), counts)
    kept_counts = xp.bincount(row_of[keep], minlength=vids.size)
    return mapped[keep], kept_counts, positions[keep]


def _subgraph_kernel(ctx, op, p, inputs, out_stypes):
    """Per vertex list: the induced subgraph (new edge ids) and, with return_mapping,
    the same edges holding their original ids."""
    xp, (graph, *varrays) = ctx.xp, inputs
    subgraphs, mappings = [], []
    _subgraph_type(p, [a.dtype for a in inputs], [None], [])  # (imperative calls)
    for vids in varrays:
        vids = vids.astype(AUX_DTYPE).reshape(-1)
        indices, counts, positions = _induced(xp, graph, vids)
        indptr = xp.zeros(vids.size + 1, AUX_DTYPE)
        xp.cumsum(counts, out=indptr[1:])
        shape = (int(vids.size), int(vids.size))
        new_ids = xp.arange(indices.size).astype(graph.dtype)
        subgraphs.append(_csr(new_ids, indices, indptr, shape))
        mappings.append(_csr(graph.values[positions], indices.copy(), indptr.copy(), shape))
    return subgraphs + (mappings if p.return_mapping else [])


# -- dgl_graph_compact ----------------------------------------------------------------


@attrs.frozen
class CompactParams:
    num_args: int = param("int")
    return_mapping: bool = param("bool")
    graph_sizes: tuple = param("shape")

    def __attrs_post_init__(self):
        if self.num_args < 2:
            raise ValueError(f"num_args is {self.num_args}, expected at least 2")
        if len(self.graph_sizes) != self.num_args // 2:
            raise ValueError(
                f"graph_sizes has {len(self.graph_sizes)} entries, expected one per graph "
                f"({self.num_args // 2})"
            )


def _compact_args(p):
    count = p.num_args // 2
    return (*(f"graph{i}" for i in range(count)), *(f"varray{i}" for i in range(count)))


def _compact_outputs(p):
    return numbered_outputs(p.num_args // 2 * (2 if p.return_mapping else 1))


def _compact_shape(p, in_shapes, out_shapes, aux_shapes):
    count = p.num_args // 2
    for i, size in enumerate(p.graph_sizes):
        graph, vids = in_shapes[i], in_shapes[count + i]
        if graph is not None and (len(graph) != 2 or min(graph) < size):
            raise mismatch(f"graph{i}", graph, f"a 2-D csr graph of at least {size} x {size}")
        if vids is not None and (len(vids) != 1 or vids[0] < size):
            raise mismatch(f"varray{i}", vids, f"a 1-D array of at least {size} vertex ids")
    outs = [(size, size) for size in p.graph_sizes]
    return in_shapes, outs * (len(out_shapes) // count), aux_shapes


def _compact_type(p, in_types, out_types, aux_types):
    names = _compact_args(p)
    for name, dtype in zip(names, in_types, strict=True):
        _require_int64("_contrib_dgl_graph_compact", name, dtype)
    return in_types, ["int64"] * len(out_types), aux_types


def _compacted(xp, graph, vids, size, index):
    """(indices, indptr, kept values) of one graph renumbered by its vertex list."""
    where = f"_contrib_dgl_graph_compact: graph{index}"
    if vids.size != graph.indptr.size or int(vids[-1]) != size:
        raise ValueError(
            f"{where}: varray{index} must hold {graph.indptr.size} entries ending with the "
            f"number of vertices {size} (the sampler's first output), got {vids.size} "
            f"ending with {int(vids[-1]) if vids.size else None}"
        )
    indptr = graph.indptr[: size + 1]
    stored = graph.indices[: int(indptr[-1])]
    order = xp.argsort(vids[:size], kind="stable")
    found = xp.searchsorted(vids[:size][order], stored)
    found = xp.minimum(found, max(size - 1, 0))
    if stored.size and (size == 0 or bool((vids[:size][order][found] != stored).any())):
        raise ValueError(f"{where} has an edge to a vertex its varray{index} does not list")
    indices = order[found] if stored.size else stored
    return indices, indptr, graph.values[: stored.size]


def _compact_kernel(ctx, op, p, inputs, out_stypes):
    """Each sampled graph cut to its first graph_sizes[i] rows, columns renumbered."""
    xp, count = ctx.xp, p.num_args // 2
    _compact_type(p, [a.dtype for a in inputs], [], [])  # (imperative calls)
    outs, mappings = [], []
    for i, size in enumerate(p.graph_sizes):
        vids = inputs[count + i].astype(AUX_DTYPE).reshape(-1)
        indices, indptr, values = _compacted(xp, inputs[i], vids, size, i)
        new_ids = xp.arange(indices.size, dtype="int64")
        outs.append(_csr(new_ids, indices, indptr.copy(), (size, size)))
        mappings.append(_csr(values.astype("int64"), indices.copy(), indptr.copy(), (size, size)))
    return outs + (mappings if p.return_mapping else [])


def _all_csr(count):
    return lambda p: (_CSR,) * count(p)


_SUBGRAPH_OUTS = _all_csr(lambda p: len(_subgraph_outputs(p)))
_COMPACT_OUTS = _all_csr(lambda p: len(_compact_outputs(p)))

STORAGE = {
    "_contrib_dgl_adjacency": csr_only(lambda p: (_CSR,)),
    "_contrib_dgl_subgraph": csr_only(_SUBGRAPH_OUTS),
}
KERNELS = {
    "_contrib_dgl_adjacency": _adjacency_kernel,
    "_contrib_dgl_subgraph": on_host(_subgraph_kernel),
    "_contrib_dgl_graph_compact": on_host(_compact_kernel),
}


def _compact_rule(p, ins, dev):
    return csr_only(_COMPACT_OUTS, graphs=p.num_args // 2)(p, ins, dev)


STORAGE["_contrib_dgl_graph_compact"] = _compact_rule

OPS = [
    OpDef(
        name="_contrib_dgl_adjacency",
        infer_shape=_adjacency_shape,
        infer_type=_adjacency_type,
        forward=refuse_dense("_contrib_dgl_adjacency"),
        doc="The csr graph's pattern with every stored value 1 (float32).",
    ),
    OpDef(
        name="_contrib_dgl_subgraph",
        params=SubgraphParams,
        arguments=_subgraph_args,
        outputs=_subgraph_outputs,
        variadic="num_args",
        infer_shape=_subgraph_shape,
        infer_type=_subgraph_type,
        forward=refuse_dense("_contrib_dgl_subgraph"),
        doc="The subgraphs of a csr graph induced by sorted vertex lists (new edge ids).",
    ),
    OpDef(
        name="_contrib_dgl_graph_compact",
        params=CompactParams,
        arguments=_compact_args,
        outputs=_compact_outputs,
        variadic="num_args",
        infer_shape=_compact_shape,
        infer_type=_compact_type,
        forward=refuse_dense("_contrib_dgl_graph_compact"),
        doc="Sampled csr graphs cut to their vertices, columns renumbered by the vertex lists.",
    ),
]
