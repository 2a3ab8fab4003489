"""Logical and/or/xor: elemwise, broadcast and scalar forms, and MXNet's legacy aliases."""

import numpy as np
import pytest

from rebind import registry
from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.cases.math import ALIASES
from tests.ops.harness import case_ids, golden_cases, infer, opdef, replay_golden

RULES = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}
ELEMWISE = tuple(f"_logical_{r}" for r in RULES)
BROADCAST = tuple(f"broadcast_logical_{r}" for r in RULES)
SCALAR = tuple(f"_logical_{r}_scalar" for r in RULES)
# the aliases that live on this family's own operators
OWN_ALIASES = {alias: op for alias, op in ALIASES.items() if "logical" in op}


@pytest.mark.parametrize("case_id", case_ids(*ELEMWISE, *BROADCAST, *SCALAR))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


@pytest.mark.parametrize("case_id", sorted(c for c in golden_cases() if c.startswith("math_alias")))
def test_golden_through_legacy_alias(case_id, ctx):
    # recorded through mx.sym._internal.<alias>; MXNet writes the canonical op
    case = golden_cases()[case_id]
    assert case["mxnet_op"] == ALIASES[case["sym_func"].split(".")[-1]] == case["op"]
    replay_golden(case_id, ctx)


def test_every_op_has_golden_cases():
    for name in (*ELEMWISE, *BROADCAST, *SCALAR):
        assert len(case_ids(name)) >= 4, name


@pytest.mark.parametrize("alias, canonical", sorted(OWN_ALIASES.items()))
def test_own_alias_is_the_same_operator(alias, canonical):
    assert registry.lookup("operators", alias) is opdef(canonical)
    assert opdef(alias).name == canonical  # composing through the alias writes MXNet's name


SHARED_ALIASES = sorted(set(ALIASES.items()) - set(OWN_ALIASES.items()))


@pytest.mark.parametrize("alias, canonical", SHARED_ALIASES)
def test_shared_alias_is_the_same_operator(alias, canonical):
    assert registry.lookup("operators", alias) is opdef(canonical)


# -- forward against NumPy ------------------------------------------------------------


def _run(ctx, name, attrs, arrays):
    op = opdef(name)
    params = op.parse(attrs)
    inputs = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in arrays]
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    outs, saved = op.forward(op_ctx, params, inputs, [])
    heads = [ctx.backend.xp.ones_like(outs[0])]
    grads = op.backward(op_ctx, params, saved, heads, [True] * len(arrays))
    host = [np.asarray(ctx.backend.to_host(x)) for x in (*outs, *grads)]
    return host[0], host[1:]


def _truth_array(rng, shape, dtype):
    values = rng.choice(np.array([0.0, 0.0, -2.5, 1.0, np.nan]), size=shape)
    return (
        values.astype(dtype) if np.dtype(dtype).kind == "f" else np.nan_to_num(values).astype(dtype)
    )


@pytest.mark.parametrize("rule", sorted(RULES))
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((2, 1, 3), (4, 1)), ((5,), ())])
def test_broadcast_matches_numpy(rule, dtype, shapes, ctx):
    rng = np.random.default_rng(31)
    lhs, rhs = (_truth_array(rng, s, dtype) for s in shapes)
    out, grads = _run(ctx, f"broadcast_logical_{rule}", {}, [lhs, rhs])
    # nan is true, as in C
    expected = RULES[rule](lhs != 0, rhs != 0).astype(dtype)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, expected)
    for grad, x in zip(grads, (lhs, rhs), strict=True):
        assert grad.shape == x.shape and not grad.any()


@pytest.mark.parametrize("rule", sorted(RULES))
def test_elemwise_matches_numpy(rule, ctx):
    rng = np.random.default_rng(32)
    lhs, rhs = (_truth_array(rng, (4, 3), "float32") for _ in range(2))
    out, grads = _run(ctx, f"_logical_{rule}", {}, [lhs, rhs])
    np.testing.assert_array_equal(out, RULES[rule](lhs != 0, rhs != 0).astype("float32"))
    assert all(g.shape == (4, 3) and not g.any() for g in grads)


@pytest.mark.parametrize("rule", sorted(RULES))
@pytest.mark.parametrize("scalar", ["0", "-3.5", "nan"])
def test_scalar_matches_numpy(rule, scalar, ctx):
    rng = np.random.default_rng(33)
    data = _truth_array(rng, (3, 5), "float64")
    out, grads = _run(ctx, f"_logical_{rule}_scalar", {"scalar": scalar}, [data])
    expected = RULES[rule](data != 0, float(scalar) != 0).astype("float64")
    np.testing.assert_array_equal(out, expected)
    assert not grads[0].any()


def test_scalar_follows_mxnet_integer_rules(ctx):
    data = np.array([-1, 0, 1, 2], dtype=np.int32)
    # an integer array takes int(scalar): 0.5 becomes 0, so "and" is all false
    out, _ = _run(ctx, "_logical_and_scalar", {"scalar": "0.5"}, [data])
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [0, 0, 0, 0])
    # unless is_int is false: then the array is promoted to float64
    out, grads = _run(ctx, "_logical_and_scalar", {"scalar": "0.5", "is_int": "False"}, [data])
    assert out.dtype == np.float64 and grads[0].dtype == np.int32
    np.testing.assert_array_equal(out, [1, 0, 1, 1])


# -- inference ----------------------------------------------------------------------


@pytest.mark.parametrize("name", BROADCAST)
def test_broadcast_shape_inference(name):
    assert infer(name, {}, [(2, 1, 3), (4, 1)])[1] == [(2, 4, 3)]
    assert infer(name, {}, [(2, 0), (2, 5)])[1] == [(2, 0)]  # unknown stays unknown
    assert infer(name, {}, [(2, 3), None])[1] == [None]  # MXNet waits for both inputs


@pytest.mark.parametrize("name", BROADCAST)
def test_bad_broadcast_names_the_argument(name):
    with pytest.raises(ShapeError, match="'rhs'.*could not be broadcast"):
        infer(name, {}, [(2, 3), (4, 3)])


@pytest.mark.parametrize("name", ELEMWISE)
def test_elemwise_shapes(name):
    assert infer(name, {}, [(2, 0), (0, 3)])[0] == [(2, 3), (2, 3)]
    with pytest.raises(ShapeError, match="'rhs'"):
        infer(name, {}, [(2, 3), (3, 2)])


@pytest.mark.parametrize("name", SCALAR)
def test_scalar_shapes_and_types(name):
    assert infer(name, {"scalar": "1"}, [(2, 3)])[1] == [(2, 3)]
    with pytest.raises(ShapeError, match="output"):
        infer(name, {"scalar": "1"}, [(2, 3)], [(3, 2)])
    op = opdef(name)
    assert op.infer_types(op.parse({"scalar": "1"}), ["int32"])[1] == ["int32"]
    assert op.infer_types(op.parse({"scalar": "1.5", "is_int": "0"}), ["int32"])[1] == ["float64"]


@pytest.mark.parametrize("name", ELEMWISE + BROADCAST)
def test_types_follow_the_inputs(name):
    op = opdef(name)
    assert op.infer_types(op.parse({}), ["int32", None])[0] == ["int32", "int32"]
