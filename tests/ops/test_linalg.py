"""dot and batch_dot: golden cases, finite differences, shape inference."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden


@pytest.mark.parametrize("case_id", case_ids("dot", "batch_dot"))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def forward(op_name, attrs, inputs, ctx):
    op = opdef(op_name)
    on = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(OpContext(False, ctx.backend, ctx.device_id), op.parse(attrs), on, [])
    return np.asarray(ctx.backend.to_host(outs[0]))


DOT_CASES = [
    ({}, [(2, 3), (3, 4)]),
    ({"transpose_a": "True"}, [(3, 2), (3, 4)]),
    ({"transpose_b": "True"}, [(2, 3), (4, 3)]),
    ({"transpose_a": "True", "transpose_b": "True"}, [(3, 2), (4, 3)]),
    ({}, [(2, 2, 3), (3, 2, 2)]),
    ({"transpose_a": "True"}, [(3, 2, 2), (3, 2)]),
    ({"transpose_b": "True"}, [(2, 3), (2, 2, 3)]),
    ({}, [(3,), (3,)]),
    ({}, [(2, 3), (3,)]),
    ({}, [(3,), (3, 2)]),
]


@pytest.mark.parametrize("attrs, shapes", DOT_CASES)
def test_dot_numeric_gradient(attrs, shapes, ctx):
    rng = np.random.default_rng(5)
    check_numeric_gradient("dot", attrs, [rng.standard_normal(s) for s in shapes], ctx)


def _reference_dot(lhs, rhs, attrs):
    """dot from its definition: contract lhs's last (first) axis with rhs's first (last)."""
    if attrs.get("transpose_a"):
        lhs = np.moveaxis(lhs, 0, -1)
    if attrs.get("transpose_b"):
        rhs = np.moveaxis(rhs, -1, 0)
    out = np.tensordot(lhs, rhs, axes=([-1], [0]))
    return out.reshape(out.shape or (1,))


@pytest.mark.parametrize("attrs, shapes", DOT_CASES)
def test_dot_values_and_shapes(attrs, shapes, ctx):
    rng = np.random.default_rng(6)
    lhs, rhs = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    out = forward("dot", attrs, [lhs, rhs], ctx)
    expected = _reference_dot(lhs, rhs, attrs)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    assert infer("dot", attrs, shapes)[1] == [expected.shape]


BATCH_CASES = [
    ({}, [(2, 3, 4), (2, 4, 2)]),
    ({"transpose_a": "True"}, [(2, 4, 3), (2, 4, 2)]),
    ({"transpose_b": "True"}, [(2, 3, 4), (2, 2, 4)]),
    ({"transpose_a": "True", "transpose_b": "True"}, [(2, 4, 3), (2, 2, 4)]),
    ({}, [(2, 2, 3, 2), (2, 2, 2, 3)]),
]


@pytest.mark.parametrize("attrs, shapes", BATCH_CASES)
def test_batch_dot_numeric_gradient(attrs, shapes, ctx):
    rng = np.random.default_rng(7)
    check_numeric_gradient("batch_dot", attrs, [rng.standard_normal(s) for s in shapes], ctx)


@pytest.mark.parametrize("attrs, shapes", BATCH_CASES)
def test_batch_dot_shapes(attrs, shapes):
    lhs, rhs = shapes
    m = lhs[-1] if attrs.get("transpose_a") else lhs[-2]
    n = rhs[-2] if attrs.get("transpose_b") else rhs[-1]
    assert infer("batch_dot", attrs, shapes)[1] == [(*lhs[:-2], m, n)]


def test_dot_partial_shapes():
    assert infer("dot", {}, [(0, 3), (3, 5)])[1] == [(0, 5)]
    assert infer("dot", {}, [None, (3, 5)])[1] == [None]


def test_dot_inner_mismatch_names_rhs_and_both_shapes():
    with pytest.raises(ShapeError) as info:
        infer("dot", {"transpose_b": "True"}, [(2, 3), (4, 5)])
    message = str(info.value)
    assert "node0" in message and "'rhs'" in message
    assert "(4, 5)" in message and "(4, 3)" in message and "lhs=(2, 3)" in message


@pytest.mark.parametrize(
    "shapes, argument",
    [
        ([(3, 4), (3, 4)], "'lhs'"),
        ([(2, 3, 4), (3, 4)], "'rhs'"),
        ([(2, 3, 4), (3, 4, 5)], "'rhs'"),
        ([(2, 3, 4), (2, 5, 6)], "'rhs'"),
    ],
)
def test_batch_dot_shape_errors(shapes, argument):
    with pytest.raises(ShapeError, match=argument):
        infer("batch_dot", {}, shapes)


def test_bad_params():
    with pytest.raises(ParamError, match="transpose_a='yes' is invalid"):
        opdef("dot").parse({"transpose_a": "yes"})
    with pytest.raises(ParamError, match="forward_stype='dense' is invalid"):
        opdef("batch_dot").parse({"forward_stype": "dense"})
    assert opdef("dot").parse({"forward_stype": "csr"}).forward_stype == "csr"


def test_dot_2d_does_not_copy_inputs_for_backward(ctx):
    # the hot path keeps views of its inputs (the transposes are free)
    op, xp = opdef("dot"), ctx.backend.xp
    lhs, rhs = xp.ones((4, 3), dtype=xp.float32), xp.ones((5, 3), dtype=xp.float32)
    _, saved = op.forward(
        OpContext(True, ctx.backend, ctx.device_id),
        op.parse({"transpose_b": "True"}),
        [lhs, rhs],
        [],
    )
    assert saved[0] is lhs and saved[1].base is rhs
