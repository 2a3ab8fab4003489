"""Dropout and LeakyReLU (leaky, prelu, rrelu, elu, selu, gelu)."""

import math

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

SELU_LAMBDA, SELU_ALPHA = 1.0507009873554805, 1.6732632423543772


@pytest.mark.parametrize("case_id", case_ids("LeakyReLU", "Dropout"))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _run(ctx, op_name, attrs, inputs, is_train, heads=None):
    op = opdef(op_name)
    params = op.parse(attrs)
    op_ctx = OpContext(is_train, ctx.backend, ctx.device_id)
    args = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, saved = op.forward(op_ctx, params, args, [])
    host = [np.asarray(ctx.backend.to_host(o)) for o in outs]
    if heads is None:
        return host, None
    heads = [ctx.backend.asarray(h, h.dtype, ctx.device_id) for h in heads]
    grads = op.backward(op_ctx, params, saved, heads, [True] * len(inputs))
    return host, [None if g is None else np.asarray(ctx.backend.to_host(g)) for g in grads]


def _away_from_zero(rng, shape):
    data = rng.standard_normal(shape)
    data[np.abs(data) < 1e-2] = 0.5  # no finite difference across the kink at 0
    return data


# -- Dropout ------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.3, 0.75])
def test_dropout_training_keep_ratio_scale_and_gradient(p, ctx):
    rng = np.random.default_rng(30)
    data = rng.uniform(1, 2, (100, 500)).astype(np.float32)
    head = rng.standard_normal(data.shape).astype(np.float32)
    outs, grads = _run(ctx, "Dropout", {"p": str(p)}, [data], True, [head])
    kept = outs[0] != 0
    # 50,000 draws: the keep fraction is within 5 standard deviations of 1 - p
    sigma = math.sqrt(p * (1 - p) / data.size)
    assert abs(kept.mean() - (1 - p)) < 5 * sigma
    scale = np.float32(1 / (1 - p))
    np.testing.assert_array_equal(outs[0][kept], data[kept] * scale)
    np.testing.assert_array_equal(grads[0], head * (kept * scale))  # mask * scale exactly


def test_dropout_axes_share_the_mask(ctx):
    data = np.ones((6, 40, 5), np.float32)
    outs, _ = _run(ctx, "Dropout", {"p": "0.5", "axes": "(1,)"}, [data], True)
    out = outs[0]
    assert np.all(out == out[:, :1, :])  # one draw per (sample, feature), shared on axis 1
    assert set(np.unique(out)) <= {0.0, 2.0} and 0 < (out != 0).mean() < 1


@pytest.mark.parametrize(
    "attrs, is_train, identity",
    [
        ({"p": "0.5"}, False, True),
        ({"p": "0.5", "mode": "always"}, False, False),
        ({"p": "0"}, True, True),
        ({"p": "1"}, True, False),
    ],
)
def test_dropout_modes(attrs, is_train, identity, ctx):
    data = np.ones((20, 30), np.float32)
    outs, grads = _run(ctx, "Dropout", attrs, [data], is_train, [np.ones_like(data)])
    if identity:
        np.testing.assert_array_equal(outs[0], data)
        np.testing.assert_array_equal(grads[0], np.ones_like(data))
    else:
        assert (outs[0] == 0).any()
        np.testing.assert_array_equal(grads[0], outs[0])  # ones in, so grad = mask * scale
    if attrs["p"] == "1":
        assert not outs[0].any()  # drops everything, no NaN from 0 * inf


def test_dropout_same_seed_same_mask(ctx):
    data = np.ones((10, 10), np.float32)
    masks = []
    for _ in range(2):
        ctx.backend.seed(1234)
        masks.append(_run(ctx, "Dropout", {"p": "0.5"}, [data], True)[0][0])
    np.testing.assert_array_equal(masks[0], masks[1])


def test_dropout_inference_numeric_gradient(ctx):
    rng = np.random.default_rng(31)
    check_numeric_gradient(
        "Dropout", {"p": "0.4"}, [rng.standard_normal((3, 4))], ctx, is_train=False
    )


def test_dropout_shapes_and_params():
    op = opdef("Dropout")
    params = op.parse({})
    assert (params.p, params.mode, params.axes) == (0.5, "training", ())
    assert op.outputs(params) == ("output",) and op.num_hidden(params) == 1
    ins, outs, _ = infer("Dropout", {"axes": "(0, 2)"}, [(2, 3, 4)])
    assert ins == [(2, 3, 4)] and outs == [(2, 3, 4)]
    with pytest.raises(ShapeError, match="axes=\\(3,\\)"):
        infer("Dropout", {"axes": "(3,)"}, [(2, 3, 4)])
    with pytest.raises(ParamError, match="p must be in"):
        op.parse({"p": "1.5"})
    with pytest.raises(ParamError, match="mode='sometimes' is invalid"):
        op.parse({"mode": "sometimes"})


# -- LeakyReLU ----------------------------------------------------------------


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"act_type": "leaky", "slope": "0.1"},
        {"act_type": "elu", "slope": "0.7"},
        {"act_type": "gelu"},
    ],
)
def test_leakyrelu_numeric_gradient(attrs, ctx):
    rng = np.random.default_rng(32)
    check_numeric_gradient("LeakyReLU", attrs, [_away_from_zero(rng, (3, 4))], ctx)


def test_selu_numeric_gradient_above_zero(ctx):
    rng = np.random.default_rng(33)
    data = np.abs(_away_from_zero(rng, (3, 4)))
    check_numeric_gradient("LeakyReLU", {"act_type": "selu"}, [data], ctx)


def test_selu_gradient_below_zero_follows_mxnet(ctx):
    """MXNet 1.9.1 uses lambda * (out + alpha) for x < 0 (the golden case records it)."""
    data = np.array([[-0.5, -2.0, 1.5]])
    outs, grads = _run(ctx, "LeakyReLU", {"act_type": "selu"}, [data], True, [np.ones((1, 3))])
    expected_out = SELU_LAMBDA * np.where(data > 0, data, SELU_ALPHA * np.expm1(data))
    np.testing.assert_allclose(outs[0], expected_out, rtol=1e-12)
    local = np.where(data > 0, SELU_LAMBDA, SELU_LAMBDA * (expected_out + SELU_ALPHA))
    np.testing.assert_allclose(grads[0], local, rtol=1e-12)


@pytest.mark.parametrize("shape, gamma", [((2, 3, 2), (3,)), ((4, 3), (3,)), ((2, 3, 2), (1,))])
def test_prelu_numeric_gradient(shape, gamma, ctx):
    rng = np.random.default_rng(34)
    inputs = [_away_from_zero(rng, shape), rng.uniform(0.1, 0.5, gamma)]
    check_numeric_gradient("LeakyReLU", {"act_type": "prelu"}, inputs, ctx)


def test_rrelu_inference_numeric_gradient(ctx):
    rng = np.random.default_rng(35)
    check_numeric_gradient(
        "LeakyReLU", {"act_type": "rrelu"}, [_away_from_zero(rng, (3, 4))], ctx, is_train=False
    )


def test_rrelu_training_draws_slopes_in_bounds(ctx):
    rng = np.random.default_rng(36)
    data = -np.abs(rng.standard_normal((50, 40))) - 0.1
    data[0] = 1.0  # positive inputs pass through
    head = rng.standard_normal(data.shape)
    attrs = {"act_type": "rrelu", "lower_bound": "0.2", "upper_bound": "0.4"}
    (out, mask), grads = _run(ctx, "LeakyReLU", attrs, [data], True, [head])
    assert mask.min() >= 0.2 and mask.max() < 0.4 and np.unique(mask).size > 100
    assert abs(mask.mean() - 0.3) < 0.01
    np.testing.assert_allclose(out, np.where(data > 0, data, data * mask), rtol=1e-12)
    np.testing.assert_allclose(grads[0], head * np.where(data > 0, 1, mask), rtol=1e-12)
    (out, mask), _ = _run(ctx, "LeakyReLU", attrs, [data], False)
    np.testing.assert_allclose(out, np.where(data > 0, data, 0.3 * data), rtol=1e-12)


def test_leakyrelu_float16_keeps_dtype(ctx):
    data = np.linspace(-3, 3, 12, dtype=np.float16).reshape(3, 4)
    for act in ("leaky", "elu", "selu", "gelu"):
        outs, grads = _run(ctx, "LeakyReLU", {"act_type": act}, [data], True, [np.ones_like(data)])
        assert outs[0].dtype == np.float16 and grads[0].dtype == np.float16
    gelu = (
        0.5
        * data
        * (1 + np.array([math.erf(v / math.sqrt(2)) for v in data.ravel()]).reshape(3, 4))
    )
    np.testing.assert_allclose(outs[0], gelu, rtol=2e-3, atol=2e-3)


def test_leakyrelu_names_and_shapes():
    op = opdef("LeakyReLU")
    prelu, rrelu = op.parse({"act_type": "prelu"}), op.parse({"act_type": "rrelu"})
    assert op.arguments(prelu) == ("data", "gamma") and op.outputs(prelu) == ("output",)
    assert op.arguments(rrelu) == ("data",) and op.outputs(rrelu) == ("output", "mask")
    ins, outs, _ = infer("LeakyReLU", {"act_type": "prelu"}, [(2, 5, 3), None])
    assert ins == [(2, 5, 3), (5,)] and outs == [(2, 5, 3)]
    ins, _, _ = infer("LeakyReLU", {"act_type": "prelu"}, [(2, 5, 3), (1,)])
    assert ins[1] == (1,)  # one slope shared by every channel
    _, outs, _ = infer("LeakyReLU", {"act_type": "rrelu"}, [(2, 3)])
    assert outs == [(2, 3), (2, 3)]


def test_leakyrelu_shape_errors():
    with pytest.raises(ShapeError) as info:
        infer("LeakyReLU", {"act_type": "prelu"}, [(2, 5, 3), (3,)])
    message = str(info.value)
    assert "node0" in message and "'gamma'" in message and "(3,)" in message
    assert "(5,)" in message
    with pytest.raises(ShapeError, match="channel axis"):
        infer("LeakyReLU", {"act_type": "prelu"}, [(4,), None])


@pytest.mark.parametrize(
    "attrs, fragment",
    [
        ({"act_type": "swish"}, "act_type='swish' is invalid"),
        ({"act_type": "rrelu", "lower_bound": "0.5", "upper_bound": "0.2"}, "must not exceed"),
        ({"slope": "abc"}, "slope='abc' is invalid"),
        ({"alpha": "1"}, "unknown parameter 'alpha'"),
    ],
)
def test_leakyrelu_bad_params(attrs, fragment):
    with pytest.raises(ParamError, match=fragment):
        opdef("LeakyReLU").parse(attrs)


@pytest.mark.parametrize(
    ("data", "gamma"), [((3, 4), (3, 4)), ((2, 3, 4), (2, 3)), ((2, 3, 4, 5), (1,))]
)
def test_prelu_broadcasts_gamma_over_data_axes_0_and_1(ctx, data, gamma):
    # MXNet's test_prelu uses a gamma of data's own shape on 2-D data
    rng = np.random.default_rng(len(data))
    x, g = rng.standard_normal(data), rng.uniform(0.1, 0.5, gamma)
    assert infer("LeakyReLU", {"act_type": "prelu"}, [data, gamma])[1] == [data]
    view = g.reshape(g.shape + (1,) * (len(data) - len(gamma))) if len(gamma) > 1 else g
    (out,), _ = opdef("LeakyReLU").forward(
        OpContext(True, ctx.backend, ctx.device_id),
        opdef("LeakyReLU").parse({"act_type": "prelu"}),
        [
            ctx.backend.asarray(x, "float64", ctx.device_id),
            ctx.backend.asarray(g, "float64", ctx.device_id),
        ],
        [],
    )
    np.testing.assert_allclose(ctx.backend.to_host(out), np.where(x > 0, x, x * view))
    check_numeric_gradient("LeakyReLU", {"act_type": "prelu"}, [x, g], ctx)


def test_prelu_rejects_a_gamma_that_cannot_broadcast():
    with pytest.raises(ShapeError, match="gamma"):
        infer("LeakyReLU", {"act_type": "prelu"}, [(2, 3, 4), (4,)])
