"""Optimizer updates write sparse weights back in their own storage (csr fallback, float16 master).

Expected values by definition: MXNet's optimizers run csr weights through the
dense kernel (storage fallback) and store the result as csr; a float16 weight
with ``multi_precision`` receives its float32 master copy cast to float16
(MXNet's ``cast(master, out=weight)``), row_sparse weights included.
"""

import numpy as np

import rebind as mx


def test_sgd_updates_a_csr_weight_through_the_dense_rule(ctx):
    start = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]], dtype="float32")
    grad = np.array([[0.5, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype="float32")
    weight = mx.nd.array(start, ctx=ctx).tostype("csr")
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.1)
    opt.update(0, weight, mx.nd.array(grad, ctx=ctx).tostype("csr"), opt.create_state(0, weight))
    assert weight.stype == "csr"
    expected = start - np.float32(0.1) * (grad + np.float32(0.1) * start)
    np.testing.assert_allclose(weight.asnumpy(), expected, rtol=1e-6)


def test_multi_precision_writes_the_master_into_a_row_sparse_float16_weight(ctx):
    weight = mx.nd.array(np.ones((4, 2)), ctx=ctx, dtype="float16").tostype("row_sparse")
    grad = mx.nd.sparse.row_sparse_array(
        (np.ones((1, 2), "float16"), [1]), shape=(4, 2), ctx=ctx, dtype="float16"
    )
    opt = mx.optimizer.Adam(multi_precision=True, learning_rate=0.1)
    state = opt.create_state_multi_precision(0, weight)
    opt.update_multi_precision(0, weight, grad, state)
    master = state[0].asnumpy()
    assert weight.stype == "row_sparse" and weight.dtype == np.float16
    np.testing.assert_array_equal(weight.asnumpy(), master.astype("float16"))
    # lazy: only row 1 moved, by about the learning rate (Adam's first step)
    np.testing.assert_array_equal(master[[0, 2, 3]], 1.0)
    np.testing.assert_allclose(master[1], 0.9, rtol=1e-5)
