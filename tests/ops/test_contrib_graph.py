"""edge_id (mx.contrib) on csr graphs."""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ShapeError
from tests.ops.harness import infer


def test_edge_id_reads_stored_values_and_minus_one_elsewhere():
    rng = np.random.default_rng(0)
    dense = rng.uniform(1, 2, (7, 9)) * (rng.uniform(size=(7, 9)) < 0.4)
    u, v = rng.integers(0, 7, 30), rng.integers(0, 9, 30)
    graph = mx.nd.array(dense).tostype("csr")
    out = mx.nd.contrib.edge_id(graph, mx.nd.array(u), mx.nd.array(v)).asnumpy()
    want = np.where(dense[u, v] != 0, dense[u, v], -1).astype(np.float32)
    np.testing.assert_array_equal(out, want)


def test_edge_id_finds_explicit_zeros_and_unsorted_columns():
    # row 0 stores columns 2 then 0 (unsorted), row 1 an explicit zero at column 1
    values, indices, indptr = [5.0, 7.0, 0.0], [2, 0, 1], [0, 2, 3]
    graph = mx.nd.sparse.csr_matrix((values, indices, indptr), shape=(2, 3))
    u, v = mx.nd.array([0, 0, 0, 1, 1]), mx.nd.array([0, 1, 2, 1, 2])
    out = mx.nd.contrib.edge_id(graph, u, v).asnumpy()
    np.testing.assert_array_equal(out, [7.0, -1.0, 5.0, 0.0, -1.0])


def test_edge_id_of_an_empty_graph():
    graph = mx.nd.sparse.zeros("csr", (3, 3))
    out = mx.nd.contrib.edge_id(graph, mx.nd.array([0, 2]), mx.nd.array([1, 2])).asnumpy()
    np.testing.assert_array_equal(out, [-1.0, -1.0])


def test_edge_id_refuses_dense_graphs():
    with pytest.raises(TypeError, match="only works for csr"):
        mx.nd.contrib.edge_id(mx.nd.ones((2, 2)), mx.nd.array([0]), mx.nd.array([1]))


def test_edge_id_shapes():
    assert infer("_contrib_edge_id", {}, [(4, 5), (3,), None])[1] == [(3,)]
    with pytest.raises(ShapeError, match=r"_contrib_edge_id.*'v'.*\(2,\)"):
        infer("_contrib_edge_id", {}, [(4, 5), (3,), (2,)])
    with pytest.raises(ShapeError, match=r"'u'.*\(3, 1\).*1-D"):
        infer("_contrib_edge_id", {}, [(4, 5), (3, 1), None])
