"""Convolution_v1, Pooling_v1, BatchNorm_v1, SoftmaxActivation, SVMOutput,
IdentityAttachKLSparseReg and GroupNorm."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

LEGACY_OPS = (
    "Convolution_v1",
    "Pooling_v1",
    "BatchNorm_v1",
    "SoftmaxActivation",
    "SVMOutput",
    "IdentityAttachKLSparseReg",
    "GroupNorm",
)


@pytest.mark.parametrize("case_id", case_ids(*LEGACY_OPS))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def test_every_operator_has_golden_cases():
    for name in LEGACY_OPS:
        assert case_ids(name), name


def _dev(ctx, array):
    return ctx.backend.asarray(array, array.dtype, ctx.device_id)


def _host(ctx, array):
    return np.asarray(ctx.backend.to_host(array))


def _call(ctx, name, attrs, inputs, aux=(), heads=None, is_train=True):
    """(outputs, input gradients, aux after backward) on host arrays."""
    op, op_ctx = opdef(name), OpContext(is_train, ctx.backend, ctx.device_id)
    params = op.parse(attrs)
    inputs, aux = [_dev(ctx, a) for a in inputs], [_dev(ctx, a) for a in aux]
    outs, saved = op.forward(op_ctx, params, inputs, aux)
    host_outs = [_host(ctx, o) for o in outs]
    if heads is None:
        return host_outs, None, [_host(ctx, a) for a in aux]
    need = [True] * len(inputs)
    grads = op.backward(op_ctx, params, saved, [_dev(ctx, h) for h in heads], need)
    grads = [None if g is None else _host(ctx, g) for g in grads]
    return host_outs, grads, [_host(ctx, a) for a in aux]


def _rng(seed):
    return np.random.default_rng(seed)


def _distinct(shape, seed):
    """Values far apart (no ties) so max pooling is differentiable."""
    values = _rng(seed).permutation(int(np.prod(shape))).reshape(shape) * 0.1
    return values - values.mean()


# -- Convolution_v1 ----------------------------------------------------------------


def _conv_reference(x, w, b, stride, pad):
    padded = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    kh, kw = w.shape[2:]
    oh = (padded.shape[2] - kh) // stride[0] + 1
    ow = (padded.shape[3] - kw) // stride[1] + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i, j in np.ndindex(kh, kw):
        patch = padded[:, :, i : i + stride[0] * (oh - 1) + 1 : stride[0]]
        patch = patch[:, :, :, j : j + stride[1] * (ow - 1) + 1 : stride[1]]
        out += np.einsum("nchw,fc->nfhw", patch, w[:, :, i, j])
    return out + b.reshape(1, -1, 1, 1)


def test_convolution_v1_reference_and_gradient(ctx):
    rng = _rng(1)
    x, w, b = rng.standard_normal((2, 3, 5, 6)), rng.standard_normal((4, 3, 3, 2)), rng.random(4)
    attrs = {"kernel": "(3, 2)", "num_filter": "4", "stride": "(2, 1)", "pad": "(1, 0)"}
    (out,), _, _ = _call(ctx, "Convolution_v1", attrs, [x, w, b])
    np.testing.assert_allclose(out, _conv_reference(x, w, b, (2, 1), (1, 0)), rtol=1e-10)
    check_numeric_gradient("Convolution_v1", attrs, [x, w, b], ctx, rtol=1e-5, atol=1e-7)


def test_convolution_v1_groups_gradient(ctx):
    rng = _rng(2)
    inputs = [rng.standard_normal((1, 4, 4, 4)), rng.standard_normal((2, 2, 2, 2))]
    attrs = {"kernel": "(2, 2)", "num_filter": "2", "num_group": "2", "no_bias": "True"}
    check_numeric_gradient("Convolution_v1", attrs, inputs, ctx)


def test_convolution_v1_inference_and_params():
    attrs = {"kernel": "(3, 3)", "num_filter": "4", "pad": "(1, 1)"}
    ins, outs, _ = infer("Convolution_v1", attrs, [(2, 3, 5, 5), None, None])
    assert ins[1:] == [(4, 3, 3, 3), (4,)] and outs == [(2, 4, 5, 5)]
    with pytest.raises(ShapeError, match="'data'"):
        infer("Convolution_v1", attrs, [(2, 3, 5), None, None])
    with pytest.raises(ShapeError, match="'weight'"):
        infer("Convolution_v1", attrs, [(2, 3, 5, 5), (4, 2, 3, 3), None])
    with pytest.raises(ParamError, match="kernel"):
        opdef("Convolution_v1").parse({"kernel": "(3,)", "num_filter": "2"})
    with pytest.raises(NotImplementedError, match="NHWC"):
        opdef("Convolution_v1").parse({"kernel": "(3, 3)", "num_filter": "2", "layout": "NHWC"})


# -- Pooling_v1 ----------------------------------------------------------------------


def _pool_v1_reference(x, kernel, stride, pad, pool_type, full):
    """Zero padding; windows clipped at the padded border; avg over the whole kernel."""
    padded = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    sizes = []
    for n, k, s in zip(padded.shape[2:], kernel, stride, strict=True):
        sizes.append(1 + (-(-(n - k) // s) if full else (n - k) // s))
    out = np.zeros((*x.shape[:2], *sizes))
    for i, j in np.ndindex(*sizes):
        window = padded[:, :, i * stride[0] : i * stride[0] + kernel[0]]
        window = window[:, :, :, j * stride[1] : j * stride[1] + kernel[1]]
        if pool_type == "max":
            out[:, :, i, j] = window.max(axis=(2, 3))
        else:
            total = window.sum(axis=(2, 3))
            out[:, :, i, j] = total / (kernel[0] * kernel[1]) if pool_type == "avg" else total
    return out


POOL_V1 = [
    ((1, 2, 5, 5), (2, 2), (2, 2), (1, 1), False),
    ((2, 1, 5, 7), (3, 3), (2, 2), (0, 0), True),
    ((1, 2, 6, 5), (3, 2), (1, 2), (1, 0), False),
]


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
@pytest.mark.parametrize("shape, kernel, stride, pad, full", POOL_V1)
def test_pooling_v1_reference_and_gradient(pool_type, shape, kernel, stride, pad, full, ctx):
    data = _distinct(shape, 3)
    attrs = {
        "kernel": str(kernel),
        "stride": str(stride),
        "pad": str(pad),
        "pool_type": pool_type,
        "pooling_convention": "full" if full else "valid",
    }
    (out,), _, _ = _call(ctx, "Pooling_v1", attrs, [data])
    expected = _pool_v1_reference(data, kernel, stride, pad, pool_type, full)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    check_numeric_gradient("Pooling_v1", attrs, [data], ctx, eps=1e-4)


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
def test_pooling_v1_global(pool_type, ctx):
    data = _distinct((2, 3, 3, 4), 4)
    attrs = {"global_pool": "True", "pool_type": pool_type, "kernel": "(1, 1)", "pad": "(1, 1)"}
    (out,), _, _ = _call(ctx, "Pooling_v1", attrs, [data])
    reduce = {"max": np.max, "avg": np.mean, "sum": np.sum}[pool_type]
    np.testing.assert_allclose(out, reduce(data, axis=(2, 3), keepdims=True), rtol=1e-12)
    check_numeric_gradient("Pooling_v1", attrs, [data], ctx, eps=1e-4)


def test_pooling_v1_inference_and_params():
    attrs = {"kernel": "(3, 3)", "stride": "(2, 2)", "pooling_convention": "full"}
    assert infer("Pooling_v1", attrs, [(2, 2, 6, 8)])[1] == [(2, 2, 3, 4)]
    assert infer("Pooling_v1", {"global_pool": "True"}, [(2, 2, 5, 7)])[1] == [(2, 2, 1, 1)]
    with pytest.raises(ShapeError, match="'data'.*exceeds"):
        infer("Pooling_v1", {"kernel": "(4, 4)"}, [(1, 1, 3, 5)])
    with pytest.raises(ShapeError, match="'data'"):
        infer("Pooling_v1", {"kernel": "(2, 2)"}, [(1, 1, 3, 5, 5)])
    with pytest.raises(NotImplementedError, match="3-D"):
        opdef("Pooling_v1").parse({"kernel": "(2, 2, 2)"})
    with pytest.raises(ParamError, match="pool_type"):
        opdef("Pooling_v1").parse({"kernel": "(2, 2)", "pool_type": "lp"})


# -- BatchNorm_v1 --------------------------------------------------------------------


def _bn_inputs(shape, seed=5):
    rng = _rng(seed)
    channels = shape[1]
    data = rng.standard_normal(shape) * 2 + 0.5
    inputs = [data, rng.uniform(0.5, 1.5, channels), rng.standard_normal(channels)]
    return inputs, [rng.standard_normal(channels), rng.uniform(0.5, 2, channels)]


@pytest.mark.parametrize(
    "attrs, shape, is_train",
    [
        ({"fix_gamma": "False"}, (3, 2, 2, 2), True),
        ({"fix_gamma": "False"}, (5, 3), True),
        ({"fix_gamma": "False", "use_global_stats": "True"}, (2, 3, 2, 2), True),
        ({"fix_gamma": "False"}, (2, 3, 2, 2), False),
    ],
)
def test_batchnorm_v1_numeric_gradient(attrs, shape, is_train, ctx):
    inputs, aux = _bn_inputs(shape)
    check_numeric_gradient("BatchNorm_v1", attrs, inputs, ctx, aux=aux, is_train=is_train)


def test_batchnorm_v1_outputs_variance_and_moves_statistics(ctx):
    inputs, aux = _bn_inputs((4, 3, 2, 2))
    attrs = {"fix_gamma": "False", "output_mean_var": "True", "momentum": "0.7"}
    heads = [np.ones((4, 3, 2, 2)), np.zeros(3), np.zeros(3)]
    (out, mean, var), _, aux_after = _call(ctx, "BatchNorm_v1", attrs, inputs, aux, heads)
    x, (gamma, beta) = inputs[0], (v.reshape(1, 3, 1, 1) for v in inputs[1:])
    want_mean, want_var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    np.testing.assert_allclose(mean, want_mean, rtol=1e-12)
    np.testing.assert_allclose(var, want_var, rtol=1e-12)  # the variance, not 1/std
    xhat = (x - want_mean.reshape(1, 3, 1, 1)) / np.sqrt(want_var.reshape(1, 3, 1, 1) + 1e-3)
    np.testing.assert_allclose(out, xhat * gamma + beta, rtol=1e-12)
    # MXNet's momentum is a C float: 0.7f and 1 - 0.7f, not 0.7 and 0.3
    keep, rest = float(np.float32(0.7)), float(np.float32(1) - np.float32(0.7))
    np.testing.assert_allclose(aux_after[0], keep * aux[0] + rest * want_mean, rtol=1e-12)
    np.testing.assert_allclose(aux_after[1], keep * aux[1] + rest * want_var, rtol=1e-12)


def test_batchnorm_v1_fix_gamma_writes_one_in_forward(ctx):
    inputs, aux = _bn_inputs((3, 3, 2))
    op = opdef("BatchNorm_v1")
    device = [_dev(ctx, a.copy()) for a in inputs]
    device_aux = [_dev(ctx, a.copy()) for a in aux]
    op.forward(OpContext(False, ctx.backend, ctx.device_id), op.parse({}), device, device_aux)
    np.testing.assert_array_equal(_host(ctx, device[1]), np.ones(3))


def test_batchnorm_v1_inference_mode_outputs_moving_statistics(ctx):
    inputs, aux = _bn_inputs((2, 3, 2, 2))
    attrs = {"fix_gamma": "False", "output_mean_var": "True"}
    (out, mean, var), _, _ = _call(ctx, "BatchNorm_v1", attrs, inputs, aux, is_train=False)
    np.testing.assert_array_equal(mean, aux[0])
    np.testing.assert_array_equal(var, aux[1])


def test_batchnorm_v1_inference():
    ins, outs, aux = infer("BatchNorm_v1", {"output_mean_var": "True"}, [(2, 3, 4, 4), None, None])
    assert ins[1:] == [(3,), (3,)] and outs == [(2, 3, 4, 4), (3,), (3,)] and aux == [(3,)] * 2
    with pytest.raises(ShapeError, match="'data'"):
        infer("BatchNorm_v1", {}, [(2, 3, 4), None, None])
    with pytest.raises(ShapeError, match="'gamma'"):
        infer("BatchNorm_v1", {}, [(2, 3, 4, 4), (4,), None])


# -- SoftmaxActivation ---------------------------------------------------------------


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize(
    "mode, shape, axis", [("instance", (3, 5), -1), ("channel", (2, 3, 2, 2), 1)]
)
def test_softmax_activation_reference_and_gradient(mode, shape, axis, ctx):
    data = _rng(6).standard_normal(shape)
    (out,), _, _ = _call(ctx, "SoftmaxActivation", {"mode": mode}, [data])
    np.testing.assert_allclose(out, _softmax(data, axis), rtol=1e-12)
    check_numeric_gradient("SoftmaxActivation", {"mode": mode}, [data], ctx)


def test_softmax_activation_instance_mode_on_3d_data_is_mxnets(ctx):
    # forward: softmax of each last-axis row; backward: MXNet's channel-axis formula
    data, head = _rng(7).standard_normal((2, 3, 4)), _rng(8).standard_normal((2, 3, 4))
    (out,), (grad,), _ = _call(ctx, "SoftmaxActivation", {}, [data], heads=[head])
    np.testing.assert_allclose(out, _softmax(data, -1), rtol=1e-12)
    expected = out * (head - (head * out).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(grad, expected, rtol=1e-12)


def test_softmax_activation_inference():
    assert infer("SoftmaxActivation", {}, [(2, 5)])[1] == [(2, 5)]
    with pytest.raises(ShapeError, match="'data'"):
        infer("SoftmaxActivation", {"mode": "channel"}, [(2, 5)])


# -- SVMOutput ----------------------------------------------------------------------


def _svm_loss(label, margin, coefficient, linear):
    def loss(outputs, heads):
        scores = outputs[0].reshape(-1, outputs[0].shape[-1])
        onehot = np.arange(scores.shape[1]) == label.reshape(-1, 1)
        slack = np.maximum(np.where(onehot, margin - scores, margin + scores), 0)
        return coefficient * float(np.sum(slack if linear else slack**2))

    return loss


@pytest.mark.parametrize(
    "attrs, shape",
    [
        ({}, (4, 5)),
        ({"use_linear": "True", "margin": "0.5", "regularization_coefficient": "2"}, (4, 5)),
        ({"margin": "0.8", "regularization_coefficient": "0.5"}, (2, 3, 4)),
    ],
)
def test_svm_output_gradient_is_the_hinge_loss_gradient(attrs, shape, ctx):
    rng = _rng(9)
    data = rng.uniform(-2, 2, shape)
    label = rng.integers(0, shape[-1], shape[:-1]).astype(np.float64)
    margin = float(attrs.get("margin", 1))
    coefficient = float(attrs.get("regularization_coefficient", 1))
    loss = _svm_loss(label, margin, coefficient, "use_linear" in attrs)
    check_numeric_gradient(
        "SVMOutput", attrs, [data, label], ctx, grad_args=[0], loss=loss, eps=1e-5
    )


def test_svm_output_ignores_head_gradient_and_label(ctx):
    data, label = _rng(10).uniform(-2, 2, (3, 4)), np.array([0.0, 3.0, 1.0])
    (out,), (grad_a, label_grad), _ = _call(ctx, "SVMOutput", {}, [data, label], heads=[data])
    _, (grad_b, _), _ = _call(ctx, "SVMOutput", {}, [data, label], heads=[np.zeros((3, 4))])
    np.testing.assert_array_equal(out, data)
    np.testing.assert_array_equal(grad_a, grad_b)
    assert label_grad is None and opdef("SVMOutput").is_loss


def test_svm_output_inference():
    ins, outs, _ = infer("SVMOutput", {}, [(2, 3, 4), None])
    assert ins[1] == (2, 3) and outs == [(2, 3, 4)]
    with pytest.raises(ShapeError, match="'label'"):
        infer("SVMOutput", {}, [(2, 4), (3,)])


# -- IdentityAttachKLSparseReg ------------------------------------------------------


def test_kl_sparse_reg_penalty_and_moving_average(ctx):
    rng = _rng(11)
    data, head = rng.uniform(0.1, 0.9, (4, 3)), rng.standard_normal((4, 3))
    moving = rng.uniform(0.2, 0.8, 3)
    attrs = {"sparseness_target": "0.2", "penalty": "0.1", "momentum": "0.6"}
    name = "IdentityAttachKLSparseReg"
    (out,), (grad,), (after,) = _call(ctx, name, attrs, [data], [moving], heads=[head])
    np.testing.assert_array_equal(out, data)
    want = 0.6 * moving + 0.4 * data.mean(axis=0)
    np.testing.assert_allclose(after, want, rtol=1e-12)
    penalty = 0.1 * (-0.2 / want + 0.8 / (1 - want))
    np.testing.assert_allclose(grad, head + penalty, rtol=1e-12)


def test_kl_sparse_reg_inference():
    _, outs, aux = infer("IdentityAttachKLSparseReg", {}, [(4, 6)])
    assert outs == [(4, 6)] and aux == [(6,)]
    with pytest.raises(ShapeError, match="'moving_avg'"):
        infer("IdentityAttachKLSparseReg", {}, [(4, 6)], aux_shapes=[(5,)])
    with pytest.raises(ParamError, match="momentum"):
        opdef("IdentityAttachKLSparseReg").parse({"momentum": "1.5"})


# -- GroupNorm ------------------------------------------------------------------------


def _group_norm_reference(x, gamma, beta, groups, eps):
    grouped = x.reshape(x.shape[0], groups, -1)
    mean, var = grouped.mean(axis=2, keepdims=True), grouped.var(axis=2, keepdims=True)
    xhat = ((grouped - mean) / np.sqrt(var + eps)).reshape(x.shape)
    shape = (1, groups, -1)
    out = xhat.reshape(x.shape[0], groups, -1) * gamma.reshape(shape) + beta.reshape(shape)
    return out.reshape(x.shape), mean[..., 0], np.sqrt(var + eps)[..., 0]


@pytest.mark.parametrize("shape, groups", [((2, 4, 3), 2), ((2, 6, 2, 2), 3), ((1, 3, 4), 1)])
def test_group_norm_reference_and_gradient(shape, groups, ctx):
    rng = _rng(12)
    inputs = [rng.standard_normal(shape) * 2, rng.uniform(0.5, 1.5, groups), rng.random(groups)]
    attrs = {"num_groups": str(groups), "eps": "0.001", "output_mean_var": "True"}
    outs, _, _ = _call(ctx, "GroupNorm", attrs, inputs)
    for got, want in zip(outs, _group_norm_reference(*inputs, groups, 1e-3), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    attrs["output_mean_var"] = "False"
    check_numeric_gradient("GroupNorm", attrs, inputs, ctx)


def test_group_norm_inference():
    ins, outs, _ = infer(
        "GroupNorm", {"num_groups": "2", "output_mean_var": "1"}, [(2, 4, 3), None, None]
    )
    assert ins[1:] == [(2,), (2,)] and outs == [(2, 4, 3), (2, 2), (2, 2)]
    with pytest.raises(ShapeError, match="'data'.*num_groups=3"):
        infer("GroupNorm", {"num_groups": "3"}, [(2, 4, 3), None, None])
    with pytest.raises(ShapeError, match="'gamma'"):
        infer("GroupNorm", {"num_groups": "2"}, [(2, 4, 3), (4,), None])
    with pytest.raises(ShapeError, match="'data'"):
        infer("GroupNorm", {}, [(2, 4), None, None])
