"""dgl_csr_neighbor_uniform_sample / _non_uniform_sample (mx.contrib): random neighbourhood
samples of a csr graph. The draws are rebind's own, so the tests check what every sample
must satisfy (MXNet 1.9.1's test_dgl_graph.py checks plus the definition)."""

import contextlib

import numpy as np
import pytest

import rebind as mx


def _random_graph(seed, vertices=40, density=0.15):
    """A csr graph with edge ids 0.. in csr order, and its dense form (-1: no edge)."""
    rng = np.random.default_rng(seed)
    mask = rng.uniform(size=(vertices, vertices)) < density
    dense = np.full((vertices, vertices), -1, np.int64)
    dense[mask] = np.arange(int(mask.sum()))
    rows, cols = np.nonzero(mask)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=vertices))])
    graph = mx.nd.sparse.csr_matrix(
        (dense[mask], cols.astype(np.int64), indptr.astype(np.int64)), shape=dense.shape
    )
    return graph, dense


def _check_sample(dense, seeds, ids, sub, layer, num_hops, num_neighbor, max_vertices):
    """Every property a sample has by definition."""
    count = int(ids[-1])
    assert ids.shape == (max_vertices + 1,) and sub.shape == (max_vertices, dense.shape[1])
    vertices = ids[:count]
    assert np.all(np.diff(vertices) > 0) and set(seeds) <= set(vertices.tolist())
    assert np.all(ids[count:-1] == -1) and np.all(layer[count:] == -1)
    hop = dict(zip(vertices.tolist(), layer[:count].tolist(), strict=True))
    assert all(hop[s] == 0 for s in seeds)
    indptr, indices, values = sub.indptr.asnumpy(), sub.indices.asnumpy(), sub.data.asnumpy()
    assert np.all(indptr[count:] == indptr[count])
    for row, vertex in enumerate(vertices.tolist()):
        cols = indices[indptr[row] : indptr[row + 1]]
        # each kept edge is an edge of the graph, with its original id, taken once
        np.testing.assert_array_equal(values[indptr[row] : indptr[row + 1]], dense[vertex, cols])
        assert len(set(cols.tolist())) == cols.size <= num_neighbor
        if cols.size:
            assert hop[vertex] < num_hops
        if count < max_vertices and hop[vertex] < num_hops:  # not truncated: expanded
            assert cols.size == min(num_neighbor, int((dense[vertex] >= 0).sum()))
    for vertex in vertices.tolist():
        if hop[vertex] > 0:  # reached from a kept edge of a vertex one hop nearer
            rows = np.nonzero(indices == vertex)[0]
            parents = {vertices[np.searchsorted(indptr, r, side="right") - 1] for r in rows}
            assert any(hop[int(u)] == hop[vertex] - 1 for u in parents)
    return hop


@pytest.mark.parametrize(
    ("seeds", "num_hops", "num_neighbor", "max_vertices"),
    [([0, 1, 2], 1, 2, 20), ([5], 2, 3, 30), ([0, 9, 17], 3, 2, 40), ([4, 8], 2, 5, 6)],
)
def test_uniform_samples_satisfy_the_definition(seeds, num_hops, num_neighbor, max_vertices):
    graph, dense = _random_graph(1)
    seed_arr = mx.nd.array(seeds, dtype="int64")
    with (
        pytest.warns(UserWarning, match="truncated")
        if max_vertices == 6
        else contextlib.nullcontext()
    ):
        ids, sub, layer = mx.nd.contrib.dgl_csr_neighbor_uniform_sample(
            graph,
            seed_arr,
            num_hops=num_hops,
            num_neighbor=num_neighbor,
            max_num_vertices=max_vertices,
        )
    assert sub.stype == "csr" and ids.dtype == layer.dtype == np.int64
    args = (num_hops, num_neighbor, max_vertices)
    _check_sample(dense, seeds, ids.asnumpy(), sub, layer.asnumpy(), *args)


def test_non_uniform_never_draws_a_zero_probability_neighbour_when_others_remain():
    graph, dense = _random_graph(2, vertices=30, density=0.4)
    probability = np.random.default_rng(0).uniform(0.1, 1.0, 30).astype(np.float32)
    probability[::3] = 0
    outs = mx.nd.contrib.dgl_csr_neighbor_non_uniform_sample(
        graph,
        mx.nd.array(probability),
        mx.nd.array([1, 2], dtype="int64"),
        mx.nd.array([4], dtype="int64"),
        num_hops=2,
        num_neighbor=2,
        max_num_vertices=30,
    )
    assert len(outs) == 8  # ids, graphs, probabilities, layers: one of each per seed array
    for i, seeds in enumerate(([1, 2], [4])):
        ids, sub, prob, layer = outs[i].asnumpy(), outs[2 + i], outs[4 + i], outs[6 + i]
        count = int(ids[-1])
        _check_sample(dense, seeds, ids, sub, layer.asnumpy(), 2, 2, 30)
        np.testing.assert_array_equal(prob.asnumpy()[:count], probability[ids[:count]])
        assert not prob.asnumpy()[count:].any()
        indptr, cols = sub.indptr.asnumpy(), sub.indices.asnumpy()
        for row, vertex in enumerate(ids[:count].tolist()):
            kept = cols[indptr[row] : indptr[row + 1]]
            positive = int((probability[np.nonzero(dense[vertex] >= 0)[0]] > 0).sum())
            if positive >= 2:
                assert np.all(probability[kept] > 0)


def test_mx_random_seed_repeats_a_sample():
    graph, _ = _random_graph(3)
    runs = []
    for _ in range(2):
        mx.random.seed(11)
        outs = mx.nd.contrib.dgl_csr_neighbor_uniform_sample(
            graph, mx.nd.array([0, 3], dtype="int64"), num_hops=2, num_neighbor=2
        )
        runs.append([outs[0].asnumpy(), outs[1].asnumpy()])
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_a_sample_compacts():
    # MXNet's check_compact: the compacted graph's columns index the sampled vertex list
    graph, _ = _random_graph(4)
    ids, sub, _ = mx.nd.contrib.dgl_csr_neighbor_uniform_sample(
        graph, mx.nd.array([2], dtype="int64"), num_hops=2, num_neighbor=3, max_num_vertices=25
    )
    count = int(ids.asnumpy()[-1])
    compact = mx.nd.contrib.dgl_graph_compact(sub, ids, graph_sizes=(count,), return_mapping=False)
    assert compact.shape == (count, count)
    np.testing.assert_array_equal(compact.indptr.asnumpy(), sub.indptr.asnumpy()[: count + 1])
    vertices = ids.asnumpy()
    np.testing.assert_array_equal(vertices[compact.indices.asnumpy()], sub.indices.asnumpy())


def test_samplers_refuse_dense_graphs_and_too_many_seeds():
    with pytest.raises(TypeError, match="only works for csr"):
        mx.nd.contrib.dgl_csr_neighbor_uniform_sample(
            mx.nd.ones((3, 3), dtype="int64"), mx.nd.array([0], dtype="int64")
        )
    graph, _ = _random_graph(5)
    with pytest.raises(ValueError, match="max_num_vertices"):
        mx.nd.contrib.dgl_csr_neighbor_uniform_sample(
            graph, mx.nd.array([0, 1, 2], dtype="int64"), max_num_vertices=2
        )


def test_output_names_are_mxnets():
    graph, seeds = mx.sym.var("g", stype="csr"), mx.sym.var("s")
    net = mx.sym.contrib.dgl_csr_neighbor_uniform_sample(graph, seeds, name="nb")
    assert net.list_outputs() == ["nb_output0", "nb_output1", "nb_output2"]  # MXNet 1.9.1
