"""Repeated-index sums (the gradients of Embedding, take, gather_nd) in NumPy's order.

NumPy's ``add.at`` adds the values of a row one after another in index order;
float sums depend on that order. The GPU backend's kernel keeps it, so its
gradients equal NumPy's bit for bit and do not change between runs (CuPy's
``add.at`` adds with atomics, in any order).
"""

import numpy as np
import pytest

import rebind as mx
from rebind.ops.indexing import scatter_add


def _order_sensitive(rng, shape):
    """float32 values whose sum depends on the order of addition (wide range of magnitudes)."""
    mantissa = rng.standard_normal(shape)
    return (mantissa * 10.0 ** rng.integers(-4, 5, size=shape)).astype(np.float32)


def _expected(target, rows, values):
    result = target.copy()
    np.add.at(result, rows, values)
    return result


@pytest.mark.parametrize(
    ("target_shape", "rows_shape"),
    [((7, 5), (200,)), ((4,), (300,)), ((6, 2, 3), (10, 12)), ((3, 4), (0,))],
    ids=["rows", "vector", "row-blocks", "no-indices"],
)
def test_scatter_add_sums_each_row_in_index_order(ctx, target_shape, rows_shape):
    rng = np.random.default_rng(0)
    target = _order_sensitive(rng, target_shape)
    rows = rng.integers(0, target_shape[0], size=rows_shape)
    values = _order_sensitive(rng, (*rows_shape, *target_shape[1:]))
    xp = ctx.backend.xp
    with ctx.backend.device(ctx.device_id):
        results = []
        for _ in range(2):
            device_target = xp.array(target)
            scatter_add(xp, device_target, xp.asarray(rows), xp.asarray(values))
            results.append(ctx.backend.to_host(device_target))
    expected = _expected(target, rows, values)
    assert np.array_equal(results[0], expected)
    assert np.array_equal(results[1], results[0])


def test_scatter_add_over_leading_axes(ctx):
    rng = np.random.default_rng(1)
    target = _order_sensitive(rng, (3, 4, 2))
    index = (rng.integers(0, 3, size=50), rng.integers(0, 4, size=50))
    values = _order_sensitive(rng, (50, 2))
    xp = ctx.backend.xp
    with ctx.backend.device(ctx.device_id):
        device_target = xp.array(target)
        scatter_add(xp, device_target, tuple(xp.asarray(i) for i in index), xp.asarray(values))
        result = ctx.backend.to_host(device_target)
    assert np.array_equal(result, _expected(target, index, values))


def test_embedding_gradient_is_numpy_s_sum(ctx):
    rng = np.random.default_rng(2)
    tokens = rng.integers(0, 6, size=(8, 40)).astype(np.float32)
    head = _order_sensitive(rng, (8, 40, 3))
    data = mx.sym.Variable("data")
    net = mx.sym.Embedding(data, input_dim=6, output_dim=3, name="embed")
    executor = net.simple_bind(
        ctx, data=tokens.shape, grad_req={"data": "null", "embed_weight": "write"}
    )
    executor.arg_dict["data"][:] = tokens
    executor.arg_dict["embed_weight"][:] = _order_sensitive(rng, (6, 3))
    executor.forward(is_train=True)
    executor.backward(mx.nd.array(head, ctx=ctx))
    expected = np.zeros((6, 3), np.float32)
    np.add.at(expected, tokens.astype(np.int64).reshape(-1), head.reshape(-1, 3))
    assert np.array_equal(executor.grad_dict["embed_weight"].asnumpy(), expected)
