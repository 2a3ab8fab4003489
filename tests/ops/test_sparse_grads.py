"""Gradients with sparse storage: dot(csr, w) and Embedding(sparse_grad=True).

Numeric checks (finite differences, rebind.test_utils) and definitions:
d/dw sum(h * dot(x, w)) = x.T @ h, stored row_sparse on the columns x uses;
Embedding's weight gradient sums the head gradient rows per index.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.base import MXNetError
from rebind.test_utils import check_numeric_gradient


@pytest.fixture(autouse=True)
def _on_each_backend(ctx):
    """Every test runs on each backend present (cupyx.scipy.sparse on a GPU)."""
    with ctx:
        yield


def _csr(dense):
    return mx.nd.array(dense).tostype("csr")


def _sparse_x(rng, shape=(5, 7)):
    x = rng.uniform(-1, 1, shape).astype("float32")
    x[rng.uniform(size=shape) < 0.6] = 0
    x[1] = 0  # an all-zero row
    x[:, 2] = 0  # a column no row uses: no gradient row for it
    return x


@pytest.mark.parametrize("w_stype", ["default", "row_sparse"])
def test_dot_csr_weight_gradient_numeric(w_stype):
    rng = np.random.RandomState(0)
    x, w = _sparse_x(rng), rng.uniform(-1, 1, (7, 3)).astype("float32")
    sym = mx.sym.sparse.dot(mx.sym.Variable("x", stype="csr"), mx.sym.Variable("w", stype=w_stype))
    w_arr = mx.nd.array(w) if w_stype == "default" else mx.nd.array(w).tostype(w_stype)
    check_numeric_gradient(
        sym,
        {"x": _csr(x), "w": w_arr},
        grad_nodes=["w"],
        grad_stype_dict={"w": "row_sparse"},
        numeric_eps=1e-3,
        rtol=1e-2,
        atol=1e-3,
    )


def test_dot_csr_gradient_is_row_sparse_on_used_columns():
    rng = np.random.RandomState(1)
    x, w = _sparse_x(rng), rng.uniform(-1, 1, (7, 3)).astype("float32")
    sym = mx.sym.sparse.dot(mx.sym.Variable("x", stype="csr"), mx.sym.Variable("w"))
    exe = sym.simple_bind(
        mx.current_context(), grad_req={"x": "null", "w": "write"}, x=(5, 7), w=(7, 3)
    )
    assert exe.grad_dict["w"].stype == "row_sparse"
    _csr(x).copyto(exe.arg_dict["x"])
    exe.arg_dict["w"][:] = w
    head = rng.uniform(-1, 1, (5, 3)).astype("float32")
    exe.forward(is_train=True)
    exe.backward([mx.nd.array(head)])
    grad = exe.grad_dict["w"]
    np.testing.assert_allclose(grad.asnumpy(), x.T @ head, rtol=1e-5, atol=1e-6)
    used = np.flatnonzero((x != 0).any(axis=0))
    np.testing.assert_array_equal(grad.indices.asnumpy(), used)


def test_dot_gradient_add_accumulates_row_sparse():
    rng = np.random.RandomState(2)
    x, w = _sparse_x(rng), rng.uniform(-1, 1, (7, 3)).astype("float32")
    sym = mx.sym.sparse.dot(mx.sym.Variable("x", stype="csr"), mx.sym.Variable("w"))
    exe = sym.simple_bind(
        mx.current_context(), grad_req={"x": "null", "w": "add"}, x=(5, 7), w=(7, 3)
    )
    _csr(x).copyto(exe.arg_dict["x"])
    exe.arg_dict["w"][:] = w
    head = mx.nd.ones((5, 3))
    for _ in range(2):
        exe.forward(is_train=True)
        exe.backward([head])
    assert exe.grad_dict["w"].stype == "row_sparse"
    np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), 2 * x.T @ np.ones((5, 3)), rtol=1e-5)


def test_dot_with_empty_csr_gives_zeros_and_an_empty_gradient():
    sym = mx.sym.sparse.dot(mx.sym.Variable("x", stype="csr"), mx.sym.Variable("w"))
    exe = sym.simple_bind(
        mx.current_context(), grad_req={"x": "null", "w": "write"}, x=(3, 4), w=(4, 2)
    )
    exe.arg_dict["w"][:] = 1
    exe.forward(is_train=True)  # x is all zeros: nnz = 0
    exe.backward([mx.nd.ones((3, 2))])
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), np.zeros((3, 2)))
    assert exe.grad_dict["w"].indices.shape == (0,)
    np.testing.assert_array_equal(exe.grad_dict["w"].asnumpy(), np.zeros((4, 2)))


def test_dot_nan_stays_in_its_row():
    x = np.zeros((3, 4), "float32")
    x[0, 1], x[2, 3] = np.nan, 2.0
    out = mx.nd.dot(_csr(x), mx.nd.ones((4, 2))).asnumpy()
    assert np.isnan(out[0]).all()
    np.testing.assert_array_equal(out[1:], [[0, 0], [2, 2]])


def _embedding_exe(indices, weight, sparse_grad=True, op="Embedding"):
    data = mx.sym.Variable("data")
    if op == "Embedding":
        sym = mx.sym.Embedding(data, input_dim=6, output_dim=3, sparse_grad=sparse_grad, name="emb")
    else:
        sym = mx.sym.contrib.SparseEmbedding(data, input_dim=6, output_dim=3, name="emb")
    exe = sym.simple_bind(
        mx.current_context(), grad_req={"data": "null", "emb_weight": "write"}, data=indices.shape
    )
    exe.arg_dict["data"][:] = indices
    exe.arg_dict["emb_weight"][:] = weight
    return exe


@pytest.mark.parametrize("op", ["Embedding", "SparseEmbedding"])
def test_embedding_sparse_grad_sums_rows_per_index(op):
    rng = np.random.RandomState(3)
    indices = np.array([[0, 4, 4], [2, 0, 4]], "float32")  # repeated indices accumulate
    weight = rng.uniform(-1, 1, (6, 3)).astype("float32")
    exe = _embedding_exe(indices, weight, op=op)
    head = rng.uniform(-1, 1, (2, 3, 3)).astype("float32")
    exe.forward(is_train=True)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), weight[indices.astype(int)])
    exe.backward([mx.nd.array(head)])
    grad = exe.grad_dict["emb_weight"]
    assert grad.stype == "row_sparse"
    expected = np.zeros((6, 3), "float32")
    np.add.at(expected, indices.astype(int).ravel(), head.reshape(-1, 3))
    np.testing.assert_allclose(grad.asnumpy(), expected, rtol=1e-6)
    np.testing.assert_array_equal(grad.indices.asnumpy(), [0, 2, 4])


def test_embedding_sparse_grad_numeric():
    rng = np.random.RandomState(4)
    data = mx.sym.Variable("data")
    sym = mx.sym.Embedding(data, mx.sym.Variable("w"), input_dim=5, output_dim=2, sparse_grad=True)
    check_numeric_gradient(
        sym,
        {"data": mx.nd.array([[1, 3], [3, 0]]), "w": mx.nd.array(rng.uniform(-1, 1, (5, 2)))},
        grad_nodes=["w"],
        grad_stype_dict={"w": "row_sparse"},
        numeric_eps=1e-3,
        rtol=1e-2,
        atol=1e-3,
    )


def test_embedding_sparse_grad_refuses_out_of_range_indices():
    weight = np.arange(18, dtype="float32").reshape(6, 3)
    exe = _embedding_exe(np.array([-2.0, 9.0, 1.0], "float32"), weight)
    exe.forward(is_train=True)  # MXNet's dense Embedding clips indices into [0, 6)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), weight[[0, 5, 1]])
    # ... but its row_sparse gradient checks them, as MXNet's does
    with pytest.raises(IndexError, match="out of bound"):
        exe.backward([mx.nd.ones((3, 3))])


def test_sparse_dot_refuses_float16_as_mxnet():
    x = mx.nd.array(np.array([[1, 0, 2], [0, 0, 3]]), dtype="float16").tostype("csr")
    with pytest.raises(MXNetError, match="float32 and float64"):
        mx.nd.dot(x, mx.nd.ones((3, 2), dtype="float16"))


def test_embedding_gradient_storage_must_match_sparse_grad():
    sym = mx.sym.Embedding(
        mx.sym.Variable("d"), mx.sym.Variable("w"), input_dim=6, output_dim=3, sparse_grad=True
    )
    args = {"d": mx.nd.array([1, 2]), "w": mx.nd.ones((6, 3))}
    req = {"d": "null", "w": "write"}
    with pytest.raises(MXNetError, match="Cannot use sparse_grad = 1.*is default"):
        sym.bind(mx.current_context(), args, args_grad={"w": mx.nd.zeros((6, 3))}, grad_req=req)
    grad = mx.nd.zeros((6, 3), stype="row_sparse")
    exe = sym.bind(mx.current_context(), args, args_grad={"w": grad}, grad_req=req)
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 3)))
    np.testing.assert_array_equal(grad.indices.asnumpy(), [1, 2])
