"""dgl_adjacency, dgl_subgraph and dgl_graph_compact (mx.contrib) on csr graphs.

Expected values marked "MXNet 1.9.1" were printed by MXNet 1.9.1 on the same inputs;
the others follow from the operators' definitions.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import DTypeMismatchError


def _complete_graph():
    """MXNet's test graph: 5 vertices, every pair joined, edge ids 1..20 in csr order."""
    values = np.arange(1, 21, dtype=np.int64)
    indices = np.array([1, 2, 3, 4, 0, 2, 3, 4, 0, 1, 3, 4, 0, 1, 2, 4, 0, 1, 2, 3], np.int64)
    indptr = np.array([0, 4, 8, 12, 16, 20], np.int64)
    return mx.nd.sparse.csr_matrix((values, indices, indptr), shape=(5, 5))


def _ids(values):
    return mx.nd.array(values, dtype="int64")


def test_adjacency_keeps_the_pattern_with_float32_ones():
    graph = _complete_graph()
    adj = mx.nd.contrib.dgl_adjacency(graph)
    assert adj.stype == "csr" and adj.dtype == np.float32 and adj.shape == (5, 5)
    np.testing.assert_array_equal(adj.indptr.asnumpy(), graph.indptr.asnumpy())
    np.testing.assert_array_equal(adj.indices.asnumpy(), graph.indices.asnumpy())
    np.testing.assert_array_equal(adj.data.asnumpy(), np.ones(20, np.float32))


def test_adjacency_requires_int64_edge_ids_as_mxnet():
    with pytest.raises(DTypeMismatchError, match="int64"):
        mx.nd.contrib.dgl_adjacency(_complete_graph().astype("float32"))


def test_subgraphs_of_two_vertex_lists():
    graph = _complete_graph()
    first, second = mx.nd.contrib.dgl_subgraph(
        graph, _ids([0, 2, 3]), _ids([1, 4]), return_mapping=False
    )
    # MXNet 1.9.1: new edge ids count the kept edges in csr order, from 0
    np.testing.assert_array_equal(first.asnumpy(), [[0, 0, 1], [2, 0, 3], [4, 5, 0]])
    np.testing.assert_array_equal(first.indices.asnumpy(), [1, 2, 0, 2, 0, 1])
    np.testing.assert_array_equal(second.asnumpy(), [[0, 0], [1, 0]])
    np.testing.assert_array_equal(second.indptr.asnumpy(), [0, 1, 2])
    assert first.stype == second.stype == "csr" and first.dtype == np.int64


def test_subgraph_mapping_holds_the_original_edge_ids():
    new, old = mx.nd.contrib.dgl_subgraph(_complete_graph(), _ids([0, 2, 3]), return_mapping=True)
    # MXNet 1.9.1's mapping output: the parent graph's edge ids on the same pattern
    np.testing.assert_array_equal(old.data.asnumpy(), [2, 3, 9, 11, 13, 15])
    np.testing.assert_array_equal(old.indptr.asnumpy(), new.indptr.asnumpy())
    np.testing.assert_array_equal(old.indices.asnumpy(), new.indices.asnumpy())


def test_subgraph_of_a_random_graph_matches_its_definition():
    rng = np.random.default_rng(3)
    dense = (rng.uniform(size=(30, 30)) < 0.2).astype(np.int64)
    dense[dense > 0] = np.arange(1, int(dense.sum()) + 1)
    vertices = np.unique(rng.integers(0, 30, 12))
    _, old = mx.nd.contrib.dgl_subgraph(
        mx.nd.array(dense, dtype="int64").tostype("csr"), _ids(vertices), return_mapping=True
    )
    np.testing.assert_array_equal(old.asnumpy(), dense[np.ix_(vertices, vertices)])


def test_subgraph_refuses_unsorted_vertices_and_dense_graphs():
    with pytest.raises(ValueError, match="has to be sorted"):
        mx.nd.contrib.dgl_subgraph(_complete_graph(), _ids([2, 0]), return_mapping=False)
    with pytest.raises(ValueError, match="isn't in a graph of 5 vertices"):
        mx.nd.contrib.dgl_subgraph(_complete_graph(), _ids([0, 7]), return_mapping=False)
    with pytest.raises(TypeError, match="only works for csr"):
        dense = mx.nd.ones((3, 3), dtype="int64")
        mx.nd.contrib.dgl_subgraph(dense, _ids([0, 1]), return_mapping=False)


def test_subgraph_in_a_bound_symbol_gives_mxnets_output_names():
    graph, vids = mx.sym.var("g", stype="csr"), mx.sym.var("v")
    net = mx.sym.contrib.dgl_subgraph(graph, vids, return_mapping=True, name="sub")
    assert net.list_outputs() == ["sub_output0", "sub_output1"]  # as MXNet 1.9.1
    exe = net.bind(mx.cpu(), {"g": _complete_graph(), "v": _ids([1, 4])})
    exe.forward()
    assert [o.stype for o in exe.outputs] == ["csr", "csr"]
    np.testing.assert_array_equal(exe.outputs[1].asnumpy(), [[0, 8], [18, 0]])


def _sampled():
    """A sampler's output, as MXNet 1.9.1 gave it: vertices 0, 2, 3 of 6 rows; 2 edges."""
    values, indices = np.array([2, 3], np.int64), np.array([2, 3], np.int64)
    indptr = np.array([0, 2, 2, 2, 2, 2, 2], np.int64)
    graph = mx.nd.sparse.csr_matrix((values, indices, indptr), shape=(6, 5))
    return graph, _ids([0, 2, 3, -1, -1, -1, 3])


def test_compact_renumbers_columns_by_the_vertex_list():
    graph, vids = _sampled()
    compact = mx.nd.contrib.dgl_graph_compact(graph, vids, graph_sizes=(3,), return_mapping=False)
    # MXNet 1.9.1: columns 2, 3 become 1, 2; edge ids renumbered from 0
    assert compact.shape == (3, 3) and compact.stype == "csr"
    np.testing.assert_array_equal(compact.indices.asnumpy(), [1, 2])
    np.testing.assert_array_equal(compact.data.asnumpy(), [0, 1])
    np.testing.assert_array_equal(compact.indptr.asnumpy(), [0, 2, 2, 2])


def test_compact_mapping_holds_the_original_edge_ids():
    # documented difference: MXNet 1.9.1 leaves the mapping outputs empty
    graph, vids = _sampled()
    new, old = mx.nd.contrib.dgl_graph_compact(graph, vids, graph_sizes=(3,), return_mapping=True)
    np.testing.assert_array_equal(old.asnumpy(), [[0, 2, 3], [0, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(new.asnumpy(), [[0, 0, 1], [0, 0, 0], [0, 0, 0]])


def test_compact_takes_graph_sizes_as_an_array_and_checks_the_count():
    graph, vids = _sampled()
    compact = mx.nd.contrib.dgl_graph_compact(
        graph, vids, graph_sizes=np.array([3]), return_mapping=False
    )
    assert compact.shape == (3, 3)
    with pytest.raises(ValueError, match="ending with the number of vertices 2"):
        mx.nd.contrib.dgl_graph_compact(graph, vids, graph_sizes=(2,), return_mapping=False)


def test_vertex_ids_must_be_int64_as_mxnet():
    with pytest.raises(DTypeMismatchError, match="varray0"):
        mx.nd.contrib.dgl_subgraph(_complete_graph(), mx.nd.array([0, 1]), return_mapping=False)
    graph, vids = _sampled()
    with pytest.raises(DTypeMismatchError, match="varray0"):
        mx.nd.contrib.dgl_graph_compact(
            graph, vids.astype("float32"), graph_sizes=(3,), return_mapping=False
        )
