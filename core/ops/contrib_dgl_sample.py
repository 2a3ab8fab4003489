"""The DGL neighbour samplers of mx.contrib on csr graphs:
dgl_csr_neighbor_uniform_sample and dgl_csr_neighbor_non_uniform_sample, as
MXNet 1.9.1's contrib/dgl_graph.cc.

From each seed array, a breadth-first walk of at most ``num_hops`` hops that
keeps, at every vertex it expands, at most ``num_neighbor`` of its stored
neighbours (drawn without replacement: uniformly, or with weights
``probability[neighbour]``), until ``max_num_vertices`` vertices are collected.
Per seed array the outputs are: the sampled vertex ids, ascending, in an array
of ``max_num_vertices + 1`` whose last entry is their count; the sampled edges
as a (max_num_vertices, N) csr array (row i: the edges kept from vertex i of
the id list, columns the original vertex ids, values the original edge ids);
for the non-uniform sampler ``probability`` of each sampled vertex; and each
vertex's hop count (0 for the seeds). The walk runs on the host; draws come
from rebind's random stream of the device (``mx.random.seed``).

Differences from MXNet: the draws differ (MXNet re-seeds one Mersenne Twister
with the same number for every vertex it expands, so all vertices of a call
pick the same neighbour positions; rebind draws independently). Entries past
the sampled count are left unwritten by MXNet (arbitrary memory); rebind writes
-1 in the id and hop arrays and 0 in the probability array. MXNet's
non-uniform sampler sorts a vertex's kept neighbours and their edge ids
separately, so an id may land beside another vertex's edge; rebind keeps each
edge with its neighbour.
"""

import warnings

import attrs
import numpy as np

from .base import OpDef, mismatch
from .contrib_dgl import csr_only, numbered_outputs, refuse_dense
from .params import param, positive
from .sparse_parts import AUX_DTYPE, Parts

__all__ = ["KERNELS", "OPS", "STORAGE"]


@attrs.frozen
class NeighborSampleParams:
    num_args: int = param("int")
    num_hops: int = param("int", 1)
    num_neighbor: int = param("int", 2)
    max_num_vertices: int = param("int", 100, validator=positive)


def _layout(weighted):
    """(count of leading non-seed inputs, output groups) of one sampler."""
    return (
        (2, ("id", "graph", "probability", "layer")) if weighted else (1, ("id", "graph", "layer"))
    )


def _args(weighted):
    lead, _ = _layout(weighted)
    first = ("csr_matrix", "probability")[:lead]
    return lambda p: (*first, *(f"seed_array{i}" for i in range(p.num_args - lead)))


def _outputs(weighted):
    lead, groups = _layout(weighted)
    return lambda p: numbered_outputs(len(groups) * (p.num_args - lead))


def _shape(weighted):
    lead, groups = _layout(weighted)

    def infer(p, in_shapes, out_shapes, aux_shapes):
        graph = in_shapes[0]
        if graph is not None and (len(graph) != 2 or graph[0] != graph[1]):
            raise mismatch("csr_matrix", graph, "a square 2-D csr graph")
        for i, shape in enumerate(in_shapes[1:]):
            if shape is not None and len(shape) != 1:
                raise mismatch(_args(weighted)(p)[i + 1], shape, "a 1-D array")
        rows = p.max_num_vertices
        by_group = {
            "id": (rows + 1,),
            "graph": None if graph is None else (rows, graph[1]),
            "probability": (rows,),
            "layer": (rows,),
        }
        count = p.num_args - lead
        return in_shapes, [by_group[g] for g in groups for _ in range(count)], aux_shapes

    return infer


def _type(weighted):
    lead, groups = _layout(weighted)

    def infer(p, in_types, out_types, aux_types):
        seed = in_types[lead]
        by_group = {"id": seed, "graph": in_types[0], "probability": in_types[1], "layer": seed}
        count = p.num_args - lead
        return in_types, [by_group[g] for g in groups for _ in range(count)], aux_types

    return infer


def _pick(rng, candidates, count, weights):
    """Positions of ``count`` of ``candidates`` drawn without replacement, ascending."""
    if candidates <= count:
        return np.arange(candidates)
    if weights is None:
        return np.sort(rng.choice(candidates, size=count, replace=False))
    # successive weighted draws without replacement: the largest log(u) / w
    # (Efraimidis-Spirakis); a zero weight comes last, as a zero-probability draw
    with np.errstate(divide="ignore"):
        keys = np.log(rng.uniform(size=candidates)) / weights
    return np.sort(np.argsort(-keys, kind="stable")[:count])


def _walk(graph, seeds, p, rng, probability):
    """BFS from ``seeds``: {vertex: hop} in visiting order and {vertex: kept positions}."""
    indptr, indices = graph
    hops = {}
    for seed in seeds.tolist():
        hops.setdefault(seed, 0)
    queue, kept, head = list(hops), {}, 0
    while head < len(queue) and len(hops) < p.max_num_vertices:
        vertex = queue[head]
        head += 1
        if hops[vertex] >= p.num_hops:
            continue
        start, stop = int(indptr[vertex]), int(indptr[vertex + 1])
        weights = None if probability is None else probability[indices[start:stop]]
        chosen = start + _pick(rng, stop - start, p.num_neighbor, weights)
        kept[vertex] = chosen
        for neighbour in indices[chosen].tolist():
            if len(hops) >= p.max_num_vertices:
                break
            if neighbour not in hops:
                hops[neighbour] = hops[vertex] + 1
                queue.append(neighbour)
    if any(hops[v] < p.num_hops for v in queue[head:]):
        warnings.warn(
            "The sampling is truncated because we have reached the max number of vertices. "
            "Please use a smaller number of seeds or a small neighborhood",
            stacklevel=2,
        )
    return hops, kept


def _sample_one(graph, seeds, p, rng, probability):
    """The host arrays of one seed array's outputs: ids, csr parts, probability, layer."""
    values, indptr, indices, shape = graph
    if seeds.size > p.max_num_vertices:
        raise ValueError(
            f"dgl_csr_neighbor_sample: {seeds.size} seeds exceed max_num_vertices="
            f"{p.max_num_vertices}; raise max_num_vertices"
        )
    hops, kept = _walk((indptr, indices), seeds, p, rng, probability)
    order = sorted(hops)
    rows = p.max_num_vertices
    ids, layer = np.full(rows + 1, -1, np.int64), np.full(rows, -1, np.int64)
    ids[: len(order)], ids[rows] = order, len(order)
    layer[: len(order)] = [hops[v] for v in order]
    chosen = [kept.get(v, np.zeros(0, np.int64)) for v in order]
    counts = np.zeros(rows, np.int64)
    counts[: len(order)] = [c.size for c in chosen]
    positions = np.concatenate(chosen) if chosen else np.zeros(0, np.int64)
    sub_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(AUX_DTYPE)
    parts = (values[positions], indices[positions], sub_ptr, (rows, shape[1]))
    prob = None
    if probability is not None:
        prob = np.zeros(rows, probability.dtype)
        prob[: len(order)] = probability[np.asarray(order, np.int64)]
    return ids, parts, prob, layer


def _kernel(weighted):
    lead, _ = _layout(weighted)

    def kernel(ctx, op, p, inputs, out_stypes):
        backend, xp = ctx.backend, ctx.xp
        graph = inputs[0]
        host = tuple(backend.to_host(a) for a in (graph.values, graph.indptr, graph.indices))
        probability = backend.to_host(inputs[1]).astype(np.float64) if weighted else None
        drawn = backend.randint(0, 2**62, (1,), "int64", ctx.device_id)
        rng = np.random.default_rng(int(backend.to_host(drawn)[0]))
        groups = {"id": [], "graph": [], "probability": [], "layer": []}
        for seeds in inputs[lead:]:
            seeds_host = backend.to_host(seeds).astype(np.int64).reshape(-1)
            ids, parts, prob, layer = _sample_one(
                (*host, graph.shape), seeds_host, p, rng, probability
            )
            vals, cols, ptr, shape = parts
            groups["id"].append(xp.asarray(ids.astype(seeds.dtype)))
            aux = (xp.asarray(ptr), xp.asarray(cols.astype(AUX_DTYPE)))
            groups["graph"].append(Parts("csr", xp.asarray(vals), aux, shape))
            groups["layer"].append(xp.asarray(layer.astype(seeds.dtype)))
            if weighted:
                groups["probability"].append(xp.asarray(prob.astype(inputs[1].dtype)))
        return [out for name in _layout(weighted)[1] for out in groups[name]]

    return kernel


def _out_stypes(weighted):
    lead, groups = _layout(weighted)
    return lambda p: tuple(
        "csr" if g == "graph" else "default" for g in groups for _ in range(p.num_args - lead)
    )


_NAMES = {
    False: "_contrib_dgl_csr_neighbor_uniform_sample",
    True: "_contrib_dgl_csr_neighbor_non_uniform_sample",
}
STORAGE = {name: csr_only(_out_stypes(weighted)) for weighted, name in _NAMES.items()}
KERNELS = {name: _kernel(weighted) for weighted, name in _NAMES.items()}

OPS = [
    OpDef(
        name=name,
        params=NeighborSampleParams,
        arguments=_args(weighted),
        outputs=_outputs(weighted),
        variadic="num_args",
        infer_shape=_shape(weighted),
        infer_type=_type(weighted),
        forward=refuse_dense(name),
        doc=(
            "Neighbourhood samples of a csr graph from seed vertices ("
            + ("weighted by probability" if weighted else "uniform")
            + "): ids, edges, "
            + ("probabilities, " if weighted else "")
            + "hop counts."
        ),
    )
    for weighted, name in _NAMES.items()
]
