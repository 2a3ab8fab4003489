"""BatchNorm, InstanceNorm, LayerNorm, L2Normalization."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

NORM_OPS = ("BatchNorm", "InstanceNorm", "LayerNorm", "L2Normalization")


@pytest.mark.parametrize("case_id", case_ids(*NORM_OPS))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _host(ctx, array):
    return np.asarray(ctx.backend.to_host(array))


def _dev(ctx, array):
    return ctx.backend.asarray(array, array.dtype, ctx.device_id)


def _first_output_loss(outputs, heads):
    return float(np.sum(outputs[0] * heads[0]))


# -- BatchNorm ----------------------------------------------------------------


def _bn_inputs(rng, shape, axis=1):
    channels = shape[axis]
    data = rng.standard_normal(shape) * 2 + 0.5
    gamma, beta = rng.uniform(0.5, 1.5, channels), rng.standard_normal(channels)
    aux = [rng.standard_normal(channels), rng.uniform(0.5, 2, channels)]
    return [data, gamma, beta], aux


@pytest.mark.parametrize(
    "attrs, shape, axis, is_train",
    [
        ({"fix_gamma": "False"}, (3, 2, 2, 2), 1, True),
        ({"fix_gamma": "False", "axis": "-1"}, (2, 3, 2), -1, True),
        ({"fix_gamma": "False"}, (4, 3), 1, True),
        ({"fix_gamma": "False", "use_global_stats": "True"}, (2, 3, 2), 1, True),
        ({"fix_gamma": "False"}, (2, 3, 2), 1, False),  # inference: moving statistics
        ({}, (3, 2, 2), 1, True),  # fix_gamma: gamma is 1, its gradient 0
    ],
)
def test_batchnorm_numeric_gradient(attrs, shape, axis, is_train, ctx):
    rng = np.random.default_rng(20)
    inputs, aux = _bn_inputs(rng, shape, axis)
    # with fix_gamma, gamma does not enter the output: both gradients are then 0
    check_numeric_gradient("BatchNorm", attrs, inputs, ctx, aux=aux, is_train=is_train)


def test_batchnorm_fix_gamma_ignores_gamma_and_gives_zero_gradient(ctx):
    rng = np.random.default_rng(21)
    inputs, aux = _bn_inputs(rng, (4, 3, 2))
    op = opdef("BatchNorm")
    params = op.parse({})
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    outs, saved = op.forward(
        op_ctx, params, [_dev(ctx, a) for a in inputs], [_dev(ctx, a) for a in aux]
    )
    grads = op.backward(
        op_ctx, params, saved, [_dev(ctx, rng.standard_normal((4, 3, 2)))], [True] * 3
    )
    x = inputs[0]
    mean, var = x.mean(axis=(0, 2), keepdims=True), x.var(axis=(0, 2), keepdims=True)
    expected = (x - mean) / np.sqrt(var + 1e-3) + inputs[2].reshape(1, 3, 1)
    np.testing.assert_allclose(_host(ctx, outs[0]), expected, rtol=1e-10)
    np.testing.assert_array_equal(_host(ctx, grads[1]), np.zeros(3))


def test_batchnorm_moves_statistics_in_backward_only(ctx):
    rng = np.random.default_rng(22)
    inputs, aux = _bn_inputs(rng, (5, 3, 4))
    op = opdef("BatchNorm")
    params = op.parse({"momentum": "0.8", "output_mean_var": "True", "fix_gamma": "False"})
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    aux_dev = [_dev(ctx, a) for a in aux]
    outs, saved = op.forward(op_ctx, params, [_dev(ctx, a) for a in inputs], aux_dev)
    np.testing.assert_array_equal(_host(ctx, aux_dev[0]), aux[0])  # unchanged by forward
    x = inputs[0]
    mean, var = x.mean(axis=(0, 2)), x.var(axis=(0, 2))  # biased variance
    np.testing.assert_allclose(_host(ctx, outs[1]), mean, rtol=1e-12)
    np.testing.assert_allclose(_host(ctx, outs[2]), 1 / np.sqrt(var + 1e-3), rtol=1e-12)
    heads = [_dev(ctx, np.ones(s)) for s in [(5, 3, 4), (3,), (3,)]]
    op.backward(op_ctx, params, saved, heads, [False, False, False])
    # MXNet's momentum is a C float: 0.8f and 1 - 0.8f (0.19999999), not 0.8 and 0.2
    keep, rest = float(np.float32(0.8)), float(np.float32(1) - np.float32(0.8))
    np.testing.assert_allclose(_host(ctx, aux_dev[0]), keep * aux[0] + rest * mean, rtol=1e-12)
    np.testing.assert_allclose(_host(ctx, aux_dev[1]), keep * aux[1] + rest * var, rtol=1e-12)


@pytest.mark.parametrize("is_train, global_stats", [(False, "False"), (True, "True")])
def test_batchnorm_moving_statistics_used_and_kept(is_train, global_stats, ctx):
    rng = np.random.default_rng(23)
    inputs, aux = _bn_inputs(rng, (2, 3, 2))
    op = opdef("BatchNorm")
    params = op.parse({"use_global_stats": global_stats, "fix_gamma": "False"})
    op_ctx = OpContext(is_train, ctx.backend, ctx.device_id)
    aux_dev = [_dev(ctx, a) for a in aux]
    outs, saved = op.forward(op_ctx, params, [_dev(ctx, a) for a in inputs], aux_dev)
    shaped = [a.reshape(1, 3, 1) for a in (*inputs[1:], *aux)]
    expected = (inputs[0] - shaped[2]) / np.sqrt(shaped[3] + 1e-3) * shaped[0] + shaped[1]
    np.testing.assert_allclose(_host(ctx, outs[0]), expected, rtol=1e-12)
    op.backward(op_ctx, params, saved, [_dev(ctx, np.ones((2, 3, 2)))], [True] * 3)
    np.testing.assert_array_equal(_host(ctx, aux_dev[1]), aux[1])


def test_batchnorm_float16_keeps_float32_parameters(ctx):
    rng = np.random.default_rng(24)
    inputs, aux = _bn_inputs(rng, (4, 3, 2))
    inputs = [inputs[0].astype(np.float16)] + [a.astype(np.float32) for a in inputs[1:]]
    aux = [a.astype(np.float32) for a in aux]
    op = opdef("BatchNorm")
    params = op.parse({"fix_gamma": "False", "output_mean_var": "True"})
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    outs, saved = op.forward(
        op_ctx, params, [_dev(ctx, a) for a in inputs], [_dev(ctx, a) for a in aux]
    )
    assert [o.dtype.name for o in outs] == ["float16", "float32", "float32"]
    heads = [np.ones((4, 3, 2), np.float16), np.ones(3, np.float32), np.ones(3, np.float32)]
    grads = op.backward(op_ctx, params, saved, [_dev(ctx, h) for h in heads], [True] * 3)
    assert [g.dtype.name for g in grads] == ["float16", "float32", "float32"]
    _, out_types, aux_types = op.infer_types(params, ["float16", None, None])
    assert out_types == ["float16", "float32", "float32"] and aux_types == ["float32"] * 2


@pytest.mark.parametrize(
    "attrs, data, channels",
    [({}, (2, 3, 4, 5), 3), ({"axis": "-1"}, (2, 3, 4, 5), 5), ({"axis": "2"}, (2, 3, 4), 4)],
)
def test_batchnorm_infers_parameters_from_data(attrs, data, channels):
    ins, outs, aux = infer("BatchNorm", attrs, [data, None, None])
    assert ins == [data, (channels,), (channels,)] and outs == [data]
    assert aux == [(channels,), (channels,)]
    _, outs, _ = infer("BatchNorm", {**attrs, "output_mean_var": "True"}, [data, None, None])
    assert outs == [data, (channels,), (channels,)]


def test_batchnorm_names():
    op = opdef("BatchNorm")
    plain, with_stats = op.parse({}), op.parse({"output_mean_var": "True"})
    assert op.arguments(plain) == ("data", "gamma", "beta")
    assert op.aux_states(plain) == ("moving_mean", "moving_var")
    assert op.outputs(plain) == ("output",) and op.num_hidden(plain) == 2
    assert op.outputs(with_stats) == ("output", "mean", "var") and op.num_hidden(with_stats) == 0


def test_batchnorm_shape_errors():
    with pytest.raises(ShapeError) as info:
        infer("BatchNorm", {}, [(2, 3, 4), (4,), None])
    message = str(info.value)
    assert "node0" in message and "'gamma'" in message and "(4,)" in message
    assert "(3,)" in message
    with pytest.raises(ShapeError, match="axis 3 is out of range"):
        infer("BatchNorm", {"axis": "3"}, [(2, 3, 4), None, None])


# -- InstanceNorm, LayerNorm --------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 2, 2, 3)])
def test_instancenorm_numeric_gradient(shape, ctx):
    rng = np.random.default_rng(25)
    inputs = [
        rng.standard_normal(shape),
        rng.uniform(0.5, 1.5, shape[1]),
        rng.standard_normal(shape[1]),
    ]
    check_numeric_gradient("InstanceNorm", {"eps": "0.01"}, inputs, ctx)


def test_instancenorm_shapes():
    ins, outs, _ = infer("InstanceNorm", {}, [(2, 3, 4, 5), None, None])
    assert ins == [(2, 3, 4, 5), (3,), (3,)] and outs == [(2, 3, 4, 5)]
    assert opdef("InstanceNorm").num_hidden(opdef("InstanceNorm").parse({})) == 2
    with pytest.raises(ShapeError, match="at least 3 dimensions"):
        infer("InstanceNorm", {}, [(2, 3), None, None])
    with pytest.raises(ShapeError, match="'beta'"):
        infer("InstanceNorm", {}, [(2, 3, 4), None, (4,)])


@pytest.mark.parametrize(
    "attrs, shape, axis",
    [({}, (2, 3, 4), -1), ({"axis": "1", "eps": "0.01"}, (2, 3, 2), 1), ({"axis": "0"}, (3, 2), 0)],
)
def test_layernorm_numeric_gradient(attrs, shape, axis, ctx):
    rng = np.random.default_rng(26)
    size = shape[axis]
    inputs = [rng.standard_normal(shape), rng.uniform(0.5, 1.5, size), rng.standard_normal(size)]
    check_numeric_gradient("LayerNorm", attrs, inputs, ctx)


def test_layernorm_mean_and_std_outputs(ctx):
    rng = np.random.default_rng(27)
    data = rng.standard_normal((2, 3, 4))
    op = opdef("LayerNorm")
    params = op.parse({"output_mean_var": "True", "axis": "1"})
    outs, _ = op.forward(
        OpContext(True, ctx.backend, ctx.device_id),
        params,
        [_dev(ctx, data), _dev(ctx, np.ones(3)), _dev(ctx, np.zeros(3))],
        [],
    )
    np.testing.assert_allclose(_host(ctx, outs[1]), data.mean(axis=1, keepdims=True))
    std = np.sqrt(data.var(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(_host(ctx, outs[2]), std)
    assert op.outputs(params) == ("output", "mean", "std")
    ins, outs, _ = infer(
        "LayerNorm", {"output_mean_var": "True", "axis": "1"}, [(2, 3, 4), None, None]
    )
    assert ins[1:] == [(3,), (3,)] and outs == [(2, 3, 4), (2, 1, 4), (2, 1, 4)]


def test_layernorm_shape_errors():
    with pytest.raises(ShapeError, match="'gamma'"):
        infer("LayerNorm", {}, [(2, 3, 4), (3,), None])
    with pytest.raises(ShapeError, match="axis 3 is out of range"):
        infer("LayerNorm", {"axis": "3"}, [(2, 3, 4), None, None])


# -- L2Normalization ----------------------------------------------------------


@pytest.mark.parametrize(
    "mode, shape",
    [
        ("instance", (2, 3, 2)),
        ("instance", (3, 4)),
        ("channel", (2, 3, 2)),
        ("spatial", (2, 2, 2, 2)),
    ],
)
def test_l2normalization_numeric_gradient(mode, shape, ctx):
    rng = np.random.default_rng(28)
    check_numeric_gradient("L2Normalization", {"mode": mode}, [rng.standard_normal(shape)], ctx)


def test_l2normalization_values(ctx):
    data = np.arange(1.0, 25.0).reshape(2, 3, 4)
    op = opdef("L2Normalization")
    for mode, axes in [("instance", (1, 2)), ("channel", (1,)), ("spatial", (2,))]:
        outs, _ = op.forward(
            OpContext(False, ctx.backend, ctx.device_id),
            op.parse({"mode": mode}),
            [_dev(ctx, data)],
            [],
        )
        norm = np.sqrt((data**2).sum(axis=axes, keepdims=True) + 1e-10)
        np.testing.assert_allclose(_host(ctx, outs[0]), data / norm, rtol=1e-12)


def test_l2normalization_shapes():
    ins, outs, _ = infer("L2Normalization", {"mode": "channel"}, [(2, 3, 4)])
    assert ins == [(2, 3, 4)] and outs == [(2, 3, 4)]
    with pytest.raises(ShapeError, match="at least 3 dimensions"):
        infer("L2Normalization", {"mode": "spatial"}, [(2, 3)])
    with pytest.raises(ShapeError, match="at least 2 dimensions"):
        infer("L2Normalization", {}, [(5,)])


@pytest.mark.parametrize(
    "op_name, attrs, fragment",
    [
        ("BatchNorm", {"eps": "-1"}, "eps must be non-negative"),
        ("BatchNorm", {"fix_gamma": "maybe"}, "fix_gamma='maybe' is invalid"),
        ("BatchNorm", {"axes": "1"}, "unknown parameter 'axes'"),
        ("LayerNorm", {"axis": "x"}, "axis='x' is invalid"),
        ("L2Normalization", {"mode": "batch"}, "mode='batch' is invalid"),
        ("InstanceNorm", {"epsilon": "1"}, "unknown parameter 'epsilon'"),
    ],
)
def test_bad_params(op_name, attrs, fragment):
    with pytest.raises(ParamError, match=fragment):
        opdef(op_name).parse(attrs)


def test_fix_gamma_backward_writes_one_into_gamma(ctx):
    # MXNet 1.9 resets gamma to 1 in backward, undoing e.g. weight decay on it
    from rebind.ops import OpContext
    from tests.ops.harness import opdef

    op = opdef("BatchNorm")
    params = op.parse({})
    xp = ctx.backend.xp
    data = ctx.backend.asarray(np.random.default_rng(0).standard_normal((4, 3)), np.float32, 0)
    gamma = xp.full((3,), 0.7, dtype=np.float32)
    beta = xp.zeros(3, dtype=np.float32)
    aux = [xp.zeros(3, dtype=np.float32), xp.ones(3, dtype=np.float32)]
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    outs, saved = op.forward(op_ctx, params, [data, gamma, beta], aux)
    op.backward(op_ctx, params, saved, [xp.ones_like(outs[0])], [True, True, True])
    np.testing.assert_array_equal(ctx.backend.to_host(gamma), np.ones(3, dtype=np.float32))


def test_affine_gradients_of_a_large_batch_keep_their_digits(ctx):
    # MXNet's test_layer_norm: 4096 rows of float32 against a float64 reference at 1e-4
    rng = np.random.default_rng(7)
    data = rng.normal(size=(4096, 512)).astype(np.float32)
    gamma, beta = rng.normal(size=512).astype(np.float32), rng.normal(size=512).astype(np.float32)
    head = rng.normal(size=(4096, 512)).astype(np.float32)
    op = opdef("LayerNorm")
    params = op.parse({"axis": "-1", "eps": "0.001"})
    run = OpContext(True, ctx.backend, ctx.device_id)
    arrays = [ctx.backend.asarray(a, "float32", ctx.device_id) for a in (data, gamma, beta)]
    _, saved = op.forward(run, params, arrays, [])
    head_on = ctx.backend.asarray(head, "float32", ctx.device_id)
    _, gamma_grad, beta_grad = op.backward(run, params, saved, [head_on], [False, True, True])
    x = data.astype(np.float64)
    xhat = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-3)
    np.testing.assert_allclose(
        ctx.backend.to_host(gamma_grad), (head * xhat).sum(0), atol=1e-4, rtol=1e-5
    )
    np.testing.assert_allclose(
        ctx.backend.to_host(beta_grad), head.astype(np.float64).sum(0), atol=1e-4, rtol=1e-5
    )
