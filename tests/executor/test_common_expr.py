"""Executor.get_optimized_symbol: MXNet's common-expression elimination (test_symbol.py)."""

import numpy as np
import pytest

import rebind as mx


def internals(symbol, ctx, monkeypatch, flag, **shapes):
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", flag)
    executor = symbol.simple_bind(ctx, **shapes)
    monkeypatch.delenv("MXNET_ELIMINATE_COMMON_EXPR")  # read at bind, not later
    return executor, executor.get_optimized_symbol().get_internals()


a, b, c = mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("c")
d = a + 1
bn_inputs = [a] + [mx.sym.var(n) for n in ("gamma", "beta", "mean", "var")]


@pytest.mark.parametrize(
    "build, savings",
    [
        # the node counts MXNet 1.9.1's test_eliminate_common_expr asserts
        (lambda: (a + 1) + (a + 2), 0),
        (lambda: (a + b) + (a + b), 1),
        (lambda: ((a + b) + c) + ((a + b) + c), 2),
        (lambda: mx.sym.Group([a * d, a * d]), 0),  # merged, then a _copy per extra output
        (lambda: mx.sym.Group([a * d + b, a * d + b]), 1),
        (lambda: mx.sym.Dropout(a) + mx.sym.Dropout(a), 0),  # random: never merged
        (lambda: mx.sym.BatchNorm(*bn_inputs) + mx.sym.BatchNorm(*bn_inputs), 0),  # updates aux
        (lambda: mx.sym.relu(*bn_inputs[:1]) + mx.sym.relu(*bn_inputs[:1]), 1),
    ],
)
def test_equal_nodes_are_merged_as_mxnet_counts(build, savings, ctx, monkeypatch):
    symbol = build()
    shapes = {"a": (2, 3)}
    _, plain = internals(symbol, ctx, monkeypatch, "0", **shapes)
    _, merged = internals(symbol, ctx, monkeypatch, "1", **shapes)
    assert len(plain) == len(symbol.get_internals())
    assert len(merged) + savings == len(plain)


def test_the_merged_graph_computes_the_same_and_names_copies_as_mxnet(ctx, monkeypatch):
    with mx.name.NameManager():
        symbol = mx.sym.Group([a * d, a * d])
        executor, merged = internals(symbol, ctx, monkeypatch, "1", a=(2, 3))
    assert merged.list_outputs() == [
        "a",
        "_plusscalar0_output",
        "_mul0_output",
        "_mul0_0_copy_output",
    ]
    optimized = executor.get_optimized_symbol()
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    run = optimized.bind(ctx, {"a": mx.nd.array(values, ctx=ctx)})
    for out in run.forward():
        np.testing.assert_allclose(out.asnumpy(), values * (values + 1))


def test_the_default_is_on_and_the_bound_symbol_is_untouched(ctx, monkeypatch):
    monkeypatch.delenv("MXNET_ELIMINATE_COMMON_EXPR", raising=False)
    symbol = (a + b) + (a + b)
    executor = symbol.simple_bind(ctx, a=(2,), b=(2,))
    assert len(executor.get_optimized_symbol().get_internals()) == 4
    assert len(executor.symbol.get_internals()) == 5
