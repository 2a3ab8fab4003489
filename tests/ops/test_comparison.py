"""Comparison and modulo operators: values against NumPy, zero gradients, inference."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.harness import check_numeric_gradient, infer, opdef

COMPARISONS = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "lesser": np.less,
    "lesser_equal": np.less_equal,
}
RNG = np.random.default_rng(3)
A = RNG.integers(-2, 3, size=(3, 4)).astype(np.float32)
B = RNG.integers(-2, 3, size=(3, 4)).astype(np.float32)


def _run(ctx, name, inputs, attrs=None, need=None):
    op = opdef(name)
    params = op.parse(attrs or {})
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, saved = op.forward(op_ctx, params, arrays, [])
    heads = [ctx.backend.xp.ones_like(outs[0])]
    grads = op.backward(op_ctx, params, saved, heads, need or [True] * len(inputs))
    host = ctx.backend.to_host
    return np.asarray(host(outs[0])), [None if g is None else np.asarray(host(g)) for g in grads]


@pytest.mark.parametrize("rule", sorted(COMPARISONS))
def test_elementwise_broadcast_and_scalar_comparisons(rule, ctx):
    expected = COMPARISONS[rule](A, B).astype(np.float32)
    out, grads = _run(ctx, f"_{rule}", [A, B])
    np.testing.assert_array_equal(out, expected)
    assert out.dtype == np.float32 and all(not g.any() for g in grads)
    out, _ = _run(ctx, f"broadcast_{rule}", [A, B[:1]])
    np.testing.assert_array_equal(out, COMPARISONS[rule](A, B[:1]).astype(np.float32))
    out, grads = _run(ctx, f"_{rule}_scalar", [A], {"scalar": "1"})
    np.testing.assert_array_equal(out, COMPARISONS[rule](A, 1).astype(np.float32))
    assert not grads[0].any()


def test_modulo_takes_the_sign_of_the_divisor(ctx):
    a = np.array([7.0, -7.0, 7.5, -7.5], dtype=np.float32)
    b = np.array([3.0, 3.0, -2.0, -2.0], dtype=np.float32)
    out, _ = _run(ctx, "_mod", [a, b])
    np.testing.assert_array_equal(out, np.mod(a, b))
    out, _ = _run(ctx, "_rmod_scalar", [b], {"scalar": "7"})
    np.testing.assert_array_equal(out, np.mod(7, b))


@pytest.mark.parametrize(
    "name, attrs",
    [
        ("_mod", {}),
        ("broadcast_mod", {}),
        ("_mod_scalar", {"scalar": "2.5"}),
        ("_rmod_scalar", {"scalar": "7.3"}),
    ],
)
def test_modulo_numeric_gradient(name, attrs, ctx):
    rng = np.random.default_rng(4)
    # keep away from the jumps of the floor: quotients well inside (k, k+1)
    lhs = rng.uniform(3.1, 3.9, size=(2, 3))
    rhs = rng.uniform(1.05, 1.2, size=(2, 3) if name == "_mod" else (1, 3))
    inputs = [lhs] if "scalar" in attrs else [lhs, rhs]
    check_numeric_gradient(name, attrs, inputs, ctx)


def test_broadcast_comparison_shape_inference():
    _, outs, _ = infer("broadcast_greater", {}, [(3, 1, 4), (1, 5, 4)])
    assert outs == [(3, 5, 4)]
    with pytest.raises(ShapeError):
        infer("_equal", {}, [(3, 4), (4, 3)])
