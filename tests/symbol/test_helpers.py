"""Tests for mx.sym's non-operator functions and Symbol's extra methods (symbol/helpers.py)."""

import json
from pathlib import Path

import numpy as np
import pytest

import rebind as mx
from rebind.base import MXNetError, NotImplementedForSymbol

DEBUG_STR = json.loads((Path(__file__).parent / "data" / "debug_str.json").read_text())


def _last_node(symbol):
    return json.loads(symbol.tojson())["nodes"][-1]


def test_hypot_composes_mxnet_operators_and_computes(ctx):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    lhs = np.array([[3.0, 5.0]], dtype=np.float32)
    rhs = np.array([[4.0, 12.0]], dtype=np.float32)
    both = mx.sym.hypot(a, b)
    assert _last_node(both)["op"] == "_hypot"
    out = both.eval(ctx, a=mx.nd.array(lhs, ctx=ctx), b=mx.nd.array(rhs, ctx=ctx))[0]
    np.testing.assert_allclose(out.asnumpy(), np.hypot(lhs, rhs))
    for symbol in (mx.sym.hypot(a, 4), mx.sym.hypot(4, a)):
        node = _last_node(symbol)
        assert node["op"] == "_hypot_scalar" and node["attrs"] == {"scalar": "4"}
        out = symbol.eval(ctx, a=mx.nd.array(lhs, ctx=ctx))[0]
        np.testing.assert_allclose(out.asnumpy(), np.hypot(lhs, 4))
    assert mx.sym.hypot(3, 4) == 5.0
    with pytest.raises(TypeError, match="Symbols or numbers"):
        mx.sym.hypot("a", a)


def test_eye_linspace_histogram_split_v2_compose_their_operators(ctx):
    eye = mx.sym.eye(2, 3, 1, dtype="int32")
    assert eye.attr_dict()[eye.name] == {"N": "2", "M": "3", "k": "1", "dtype": "int32"}
    np.testing.assert_array_equal(eye.eval(ctx)[0].asnumpy(), np.eye(2, 3, 1))
    line = mx.sym.linspace(0, 1, 5).eval(ctx)[0]
    np.testing.assert_allclose(line.asnumpy(), np.linspace(0, 1, 5), rtol=1e-6)
    data = np.array([0.2, 0.7, 1.4, 1.9, 3.0], dtype=np.float32)
    counts, edges = mx.sym.histogram(mx.sym.var("a"), bins=4, range=(0, 2)).eval(
        ctx, a=mx.nd.array(data, ctx=ctx)
    )
    expected = np.histogram(data, bins=4, range=(0, 2))
    np.testing.assert_array_equal(counts.asnumpy(), expected[0])
    np.testing.assert_allclose(edges.asnumpy(), expected[1])
    with pytest.raises(ValueError, match="null range"):
        mx.sym.histogram(mx.sym.var("a"), bins=4)
    pieces = mx.sym.split_v2(mx.sym.var("a"), (1, 3), axis=1)
    outs = pieces.eval(ctx, a=mx.nd.array(np.arange(8.0).reshape(2, 4), ctx=ctx))
    assert [o.shape for o in outs] == [(2, 1), (2, 2), (2, 1)]
    assert len(mx.sym.split_v2(mx.sym.var("a"), 2)) == 2


@pytest.mark.parametrize(
    "method", ["asnumpy", "asscalar", "as_in_context", "copy", "wait_to_read", "detach", "backward"]
)
def test_ndarray_only_methods_raise_mxnets_error(method):
    with pytest.raises(NotImplementedForSymbol) as info:
        getattr(mx.sym.var("x"), method)()
    assert isinstance(info.value, MXNetError)
    assert str(info.value) == (
        f"Function {method} is not implemented for Symbol and only available in NDArray."
    )


def test_as_nd_ndarray_is_self():
    symbol = mx.sym.var("x") * 2
    assert symbol.as_nd_ndarray() is symbol


@pytest.mark.parametrize("case", sorted(DEBUG_STR))
def test_debug_str_matches_mxnet(case):
    with mx.name.NameManager():
        symbol = eval(DEBUG_STR[case]["expression"], {"mx": mx})
    assert symbol.debug_str() == DEBUG_STR[case]["debug_str"]


@pytest.mark.parametrize(
    ("method", "args", "reason"),
    [
        ("gradient", (["x"],), "does not implement it either"),
        ("optimize_for", ("MKLDNN",), "no subgraph backends"),
        ("get_backend_symbol", ("TensorRT",), "no subgraph backends"),
    ],
)
def test_symbol_methods_rebind_cannot_offer(method, args, reason):
    with pytest.raises(NotImplementedError, match=reason):
        getattr(mx.sym.var("x") + 1, method)(*args)


def test_sym_random_samplers_compose_mxnets_operators():
    assert mx.sym.random.Symbol is mx.sym.Symbol
    drawn = mx.sym.random.uniform(low=0, high=1, shape=(2,))
    assert drawn.tojson().count('"op": "_random_uniform"') == 1
    per_element = mx.sym.random.normal(mx.sym.var("mu"), mx.sym.var("sigma"), shape=3)
    assert per_element.list_arguments() == ["mu", "sigma"]
    assert per_element.infer_shape(mu=(2,), sigma=(2,))[1] == [(2, 3)]
    assert mx.sym.random.multinomial(mx.sym.var("p")).list_outputs()[1].endswith("output1")
    with pytest.raises(AttributeError, match="no attribute 'unifrom'"):
        mx.sym.random.unifrom  # noqa: B018 - the attribute access is the test


def test_keyword_symbols_given_to_an_operator_without_inputs_are_ignored(ctx):
    """As MXNet (test_random's randn case): ``data=`` adds no input; the shape is inferred."""
    drawn = mx.sym.random.randn(loc=10.0, scale=0.5, dtype="float16", data=mx.sym.ones((2, 3)))
    node = _last_node(drawn)
    assert (node["op"], node["inputs"], drawn.list_arguments()) == ("_random_normal", [], [])
    assert node["attrs"] == {"dtype": "float16", "loc": "10.0", "scale": "0.5", "shape": "()"}
    total = drawn + mx.sym.var("x")
    exe = total.bind(ctx, {"x": mx.nd.zeros((200, 300), dtype="float16", ctx=ctx)})
    values = exe.forward()[0].asnumpy().astype(np.float64)
    assert values.shape == (200, 300)
    assert abs(values.mean() - 10.0) < 0.05 and abs(values.std() - 0.5) < 0.05
    with pytest.raises(ValueError, match="unknown input 'foo'"):
        mx.sym.relu(foo=mx.sym.var("x"))


def test_a_symbol_has_no_truth_value():
    """As MXNet (test_symbol_bool): bool(symbol) raises NotImplementedForSymbol."""
    with pytest.raises(mx.base.NotImplementedForSymbol, match='operator "bool"'):
        bool(mx.sym.var("x") + 1)
