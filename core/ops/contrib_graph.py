"""edge_id (mx.contrib, DGL graph helpers): stored values of a csr adjacency matrix.

``edge_id(graph, u, v)[i]`` is the value stored at (u[i], v[i]) of the csr
array ``graph``, or -1 where nothing is stored there (an explicitly stored 0
stays 0). MXNet 1.9.1 computes it on csr input only ("only works for csr
matrices"); the csr kernel here is reached through the sparse dispatcher
(``sparse_kernels``), and the dense entry point refuses dense graphs as MXNet.
The other DGL operators are in contrib_dgl.py (dgl_adjacency, dgl_subgraph,
dgl_graph_compact) and contrib_dgl_sample.py (the neighbour samplers).
"""

from .base import OpDef, merge_shape, mismatch

__all__ = ["OPS", "edge_id_csr_kernel"]


def _infer_shape(p, in_shapes, out_shapes, aux_shapes):
    graph, u, v = in_shapes
    if graph is not None and len(graph) != 2:
        raise mismatch("data", graph, "a 2-D csr adjacency matrix")
    for name, shape in (("u", u), ("v", v)):
        if shape is not None and len(shape) != 1:
            raise mismatch(name, shape, "a 1-D array of vertex ids")
    out = merge_shape(merge_shape(u, out_shapes[0], "u"), v, "v")
    return [graph, out, out], [out], aux_shapes


def _infer_type(p, in_types, out_types, aux_types):
    dtype = in_types[0] if in_types[0] is not None else out_types[0]
    return [dtype, *in_types[1:]], [dtype], aux_types


def _dense_forward(ctx, p, inputs, aux):
    raise TypeError(
        "_contrib_edge_id: data is a dense array; edge_id only works for csr matrices "
        "(as MXNet 1.9.1): pass data.tostype('csr')"
    )


def edge_id_csr_kernel(ctx, op, p, inputs, out_stypes):
    """The stored value at every (u, v) of a csr graph, -1 where none is stored."""
    xp, (graph, u, v) = ctx.xp, inputs
    rows, cols = u.astype("int64").reshape(-1), v.astype("int64").reshape(-1)
    out = xp.full(rows.shape, -1, dtype=graph.dtype)
    if graph.values.size == 0 or rows.size == 0:
        return [out]
    # every stored element keyed r * columns + c; a stable sort keeps a duplicated
    # (r, c) in row order, so the first one is found, as MXNet's linear search does
    counts = xp.diff(graph.indptr)
    keys = xp.repeat(xp.arange(graph.shape[0], dtype="int64"), counts) * graph.shape[1]
    keys = keys + graph.indices.astype("int64")
    order = xp.argsort(keys, kind="stable")
    keys = keys[order]
    wanted = rows * graph.shape[1] + cols
    found = xp.minimum(xp.searchsorted(keys, wanted), keys.size - 1)
    hit = keys[found] == wanted
    out[hit] = graph.values[order[found[hit]]]
    return [out]


OPS = [
    OpDef(
        name="_contrib_edge_id",
        arguments=("data", "u", "v"),
        infer_shape=_infer_shape,
        infer_type=_infer_type,
        forward=_dense_forward,
        doc="The value stored at each (u, v) of a csr graph, or -1 where none is stored.",
    ),
]
