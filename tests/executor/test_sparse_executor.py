"""The executor for graphs with sparse storage: binding choices, reshape, grad_req, refusals."""

import numpy as np
import pytest

import rebind as mx
from rebind.executor.sparse_executor import SparseExecutor


def _linear():
    data = mx.sym.Variable("data", stype="csr")
    w = mx.sym.Variable("w", stype="row_sparse")
    return mx.sym.LinearRegressionOutput(mx.sym.sparse.dot(data, w), mx.sym.Variable("label"))


def _bound(rows=4):
    req = {"data": "null", "w": "write", "label": "null"}
    return _linear().simple_bind(mx.cpu(), grad_req=req, data=(rows, 6), w=(6, 1), label=(rows, 1))


def test_dense_graphs_keep_the_compiled_executor():
    sym = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=2)
    exe = sym.simple_bind(mx.cpu(), x=(3, 4))
    assert not isinstance(exe, SparseExecutor)


def test_sparse_arrays_and_stypes_choose_it():
    exe = _bound()
    assert isinstance(exe, SparseExecutor)
    assert exe.arg_dict["data"].stype == "csr" and exe.arg_dict["w"].stype == "row_sparse"
    assert exe.grad_dict["w"].stype == "row_sparse"
    dense = mx.sym.Variable("x") * 2
    exe = dense.bind(mx.cpu(), {"x": mx.nd.ones((2, 2)).tostype("row_sparse")})
    assert isinstance(exe, SparseExecutor) and exe.forward()[0].stype == "row_sparse"


def test_forward_backward_values_and_kwargs_inputs():
    exe = _bound()
    x = np.array([[1, 0, 0, 2, 0, 0], [0] * 6, [0, 0, 3, 0, 0, 0], [0, 1, 0, 0, 0, 1]], "float32")
    w = np.arange(6, dtype="float32").reshape(6, 1)
    exe.arg_dict["w"][:] = mx.nd.array(w).tostype("row_sparse")
    label = np.ones((4, 1), "float32")
    out = exe.forward(is_train=True, data=mx.nd.array(x).tostype("csr"), label=mx.nd.array(label))
    np.testing.assert_allclose(out[0].asnumpy(), x @ w)
    exe.backward()
    np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), x.T @ (x @ w - label), rtol=1e-6)


def test_reshape_shares_unchanged_arrays_and_remakes_sparse_ones():
    exe = _bound()
    exe.arg_dict["w"][:] = mx.nd.ones((6, 1)).tostype("row_sparse")
    small = exe.reshape(data=(2, 6), label=(2, 1), w=(6, 1))
    assert isinstance(small, SparseExecutor)
    assert small.arg_dict["w"] is exe.arg_dict["w"]
    assert small.arg_dict["data"].stype == "csr" and small.arg_dict["data"].shape == (2, 6)
    mx.nd.array(np.eye(2, 6)).tostype("csr").copyto(small.arg_dict["data"])
    np.testing.assert_allclose(small.forward(is_train=True)[0].asnumpy(), [[1], [1]])
    with pytest.raises(ValueError, match="partial_shaping"):
        exe.reshape(data=(2, 6), w=(6, 1))  # label would change too


def test_grad_req_add_mixes_dense_and_row_sparse_gradients():
    w = mx.sym.Variable("w")
    emb = mx.sym.Embedding(mx.sym.Variable("d"), w, input_dim=4, output_dim=2, sparse_grad=True)
    # w also reaches the loss densely: its gradient sums a row_sparse and a dense one
    sym = mx.sym.sum(emb) + mx.sym.sum(w * 0)
    grads = {"w": mx.nd.ones((4, 2))}
    args = {"d": mx.nd.array([1, 1, 3]), "w": mx.nd.zeros((4, 2))}
    exe = sym.bind(mx.cpu(), args, args_grad=grads, grad_req={"d": "null", "w": "add"})
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_allclose(grads["w"].asnumpy(), [[1, 1], [3, 3], [1, 1], [2, 2]])
    assert grads["w"].stype == "default"  # stored in the bound array's own storage


def test_monitor_is_refused_with_a_reason():
    with pytest.raises(NotImplementedError, match="sparse storage"):
        _bound().set_monitor_callback(lambda name, array: None)


def test_group2ctx_places_and_runs_across_contexts():
    with mx.AttrScope(ctx_group="stage1"):
        dot = mx.sym.dot(
            mx.sym.Variable("lhs", stype="csr"), mx.sym.Variable("rhs", stype="row_sparse")
        )
    with mx.AttrScope(ctx_group="stage2"):
        out = mx.sym.LinearRegressionOutput(dot, mx.sym.Variable("label"))
    group2ctx = {"stage1": mx.cpu(1), "stage2": mx.cpu(2)}
    req = {"lhs": "null", "rhs": "write", "label": "null"}
    exe = out.simple_bind(mx.cpu(0), group2ctx=group2ctx, grad_req=req, lhs=(3, 4), rhs=(4, 2))
    assert exe.arg_dict["lhs"].context == mx.cpu(1) and exe.arg_dict["label"].context == mx.cpu(2)
    x = np.array([[1, 0, 0, 2], [0, 0, 0, 0], [0, 3, 0, 0]], "float32")
    mx.nd.array(x, ctx=mx.cpu(1)).tostype("csr").copyto(exe.arg_dict["lhs"])
    exe.arg_dict["rhs"][:] = mx.nd.ones((4, 2), ctx=mx.cpu(1)).tostype("row_sparse")
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), x @ np.ones((4, 2)))
    # LinearRegressionOutput's gradient is (out - label) / outputs per sample (2 here)
    np.testing.assert_allclose(exe.grad_dict["rhs"].asnumpy(), x.T @ (x @ np.ones((4, 2))) / 2)
