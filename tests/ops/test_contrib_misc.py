"""arange_like, div_sqrt_dim, interleaved attention matmuls, index_copy, index_array,
gradientmultiplier, round_ste, sign_ste (mx.contrib)."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

MISC_OPS = (
    "_contrib_div_sqrt_dim",
    "_contrib_gradientmultiplier",
    "_contrib_round_ste",
    "_contrib_sign_ste",
    "_contrib_arange_like",
    "_contrib_index_array",
    "_contrib_index_copy",
    "_contrib_interleaved_matmul_selfatt_qk",
    "_contrib_interleaved_matmul_selfatt_valatt",
    "_contrib_interleaved_matmul_encdec_qk",
    "_contrib_interleaved_matmul_encdec_valatt",
    "_contrib_allclose",
)


@pytest.mark.parametrize("case_id", case_ids(*MISC_OPS))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _run(ctx, name, attrs, inputs):
    op = opdef(name)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(OpContext(True, ctx.backend, ctx.device_id), op.parse(attrs), arrays, [])
    return [np.asarray(ctx.backend.to_host(o)) for o in outs]


def _heads(x, heads, parts, part):
    seq, batch, width = x.shape
    split = x.reshape(seq, batch, heads, parts, -1)[:, :, :, part]
    return split.transpose(1, 2, 0, 3).reshape(batch * heads, seq, -1)


def test_selfatt_qk_by_definition(ctx):
    qkv = np.random.default_rng(0).standard_normal((4, 2, 3 * 2 * 5))
    (out,) = _run(ctx, "_contrib_interleaved_matmul_selfatt_qk", {"heads": 2}, [qkv])
    q, k = _heads(qkv, 2, 3, 0), _heads(qkv, 2, 3, 1)
    np.testing.assert_allclose(out, q @ k.transpose(0, 2, 1) / np.sqrt(5))


@pytest.mark.parametrize(
    ("name", "shapes"),
    [
        ("_contrib_interleaved_matmul_selfatt_qk", [(3, 2, 12)]),
        ("_contrib_interleaved_matmul_selfatt_valatt", [(3, 2, 12), (4, 3, 3)]),
        ("_contrib_interleaved_matmul_encdec_qk", [(2, 2, 4), (3, 2, 8)]),
        ("_contrib_interleaved_matmul_encdec_valatt", [(3, 2, 8), (4, 2, 3)]),
    ],
)
def test_attention_numeric_gradients(ctx, name, shapes):
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(s) for s in shapes]
    check_numeric_gradient(name, {"heads": 2}, inputs, ctx)


def test_index_copy_gradients(ctx):
    rng = np.random.default_rng(2)
    inputs = [rng.standard_normal((4, 2)), np.array([3.0, 1.0]), rng.standard_normal((2, 2))]
    check_numeric_gradient("_contrib_index_copy", {}, inputs, ctx, grad_args=[0, 2])


def test_round_ste_rounds_half_away_from_zero(ctx):
    (out,) = _run(ctx, "_contrib_round_ste", {}, [np.array([-2.5, -0.5, 0.5, 1.5, 2.5])])
    assert out.tolist() == [-3, -1, 1, 2, 3]


def test_shape_errors_name_op_argument_and_shapes():
    with pytest.raises(ShapeError, match=r"selfatt_qk.*'queries_keys_values'.*\(3, 2, 10\)"):
        infer("_contrib_interleaved_matmul_selfatt_qk", {"heads": 2}, [(3, 2, 10)])
    with pytest.raises(ShapeError, match=r"encdec_qk.*'keys_values'.*\(3, 2, 6\)"):
        infer("_contrib_interleaved_matmul_encdec_qk", {"heads": 2}, [(2, 2, 4), (3, 2, 6)])
    with pytest.raises(ShapeError, match=r"_contrib_index_copy.*'new_tensor'.*\(2, 3\)"):
        infer("_contrib_index_copy", {}, [(4, 2), (2,), (2, 3)])
    with pytest.raises(ShapeError, match=r"'index_vector'.*\(3,\)"):
        infer("_contrib_index_copy", {}, [(4, 2), (3,), (2, 2)])
    assert infer("_contrib_arange_like", {"axis": 1}, [(2, 5)])[1] == [(5,)]
    assert infer("_contrib_index_array", {"axes": (0,)}, [(2, 5)])[1] == [(2, 5, 1)]


def test_boolean_mask_keeps_flagged_rows_and_routes_gradients(ctx):
    data = np.arange(12.0).reshape(4, 3)
    (out,) = _run(ctx, "_contrib_boolean_mask", {}, [data, np.array([0.0, 2.0, 0.0, -1.0])])
    np.testing.assert_array_equal(out, data[[1, 3]])
    (empty,) = _run(ctx, "_contrib_boolean_mask", {}, [data, np.zeros(4)])
    assert empty.shape == (0, 3)
    mask = np.array([1.0, 0.0, 1.0, 1.0])
    check_numeric_gradient("_contrib_boolean_mask", {}, [data, mask], ctx, grad_args=[0])


def test_boolean_mask_shapes():
    assert infer("_contrib_boolean_mask", {}, [(4, 3), (4,)])[1] == [(0, 3)]
    with pytest.raises(ShapeError, match=r"_contrib_boolean_mask.*'index'.*\(5,\)"):
        infer("_contrib_boolean_mask", {}, [(4, 3), (5,)])
    with pytest.raises(ShapeError, match="axis=0 only"):
        infer("_contrib_boolean_mask", {"axis": 1}, [(4, 3), (3,)])
