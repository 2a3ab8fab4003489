"""Update rules beyond the golden cases, against NumPy formulas written here."""

import math

import numpy as np
import pytest

import rebind as mx

W0 = np.array([[0.5, -1.0, 2.0], [1.5, -0.25, 0.0]], np.float32)
G = np.array([[3.0, -0.2, 0.1], [-2.0, 0.5, 1.0]], np.float32)


def _step(ctx, name, steps=1, index=0, **kwargs):
    """Run ``steps`` updates with gradient G from W0; return (weight, state, optimizer)."""
    optimizer = mx.optimizer.create(name, **kwargs)
    updater = mx.optimizer.get_updater(optimizer)
    weight = mx.nd.array(W0, ctx=ctx)
    for _ in range(steps):
        updater(index, mx.nd.array(G, ctx=ctx), weight)
    return weight.asnumpy(), updater.states[index], optimizer


def test_sgd_clips_the_gradient_but_not_the_weight_decay(ctx):
    weight, _, _ = _step(ctx, "sgd", learning_rate=0.1, wd=0.5, clip_gradient=0.3, rescale_grad=2)
    expected = W0 - 0.1 * (np.clip(2 * G, -0.3, 0.3) + 0.5 * W0)
    np.testing.assert_allclose(weight, expected, rtol=1e-6)


def test_adam_clips_the_gradient_with_the_weight_decay(ctx):
    weight, (mean, var), _ = _step(ctx, "adam", learning_rate=0.1, wd=0.5, clip_gradient=0.3)
    g = np.clip(G + 0.5 * W0, -0.3, 0.3)
    m, v = 0.1 * g, 0.001 * g * g
    lr = 0.1 * math.sqrt(1 - 0.999) / (1 - 0.9)
    np.testing.assert_allclose(weight, W0 - lr * m / (np.sqrt(v) + 1e-8), rtol=1e-5)
    np.testing.assert_allclose(mean.asnumpy(), m, rtol=1e-6)


def test_non_positive_clip_gradient_means_no_clipping(ctx):
    for bound in (None, 0, -1):
        weight, _, _ = _step(ctx, "adagrad", learning_rate=0.1, clip_gradient=bound)
        expected = W0 - 0.1 * G / np.sqrt(G * G + 1e-7)
        np.testing.assert_allclose(weight, expected, rtol=1e-6)


def test_rmsprop_clip_weights(ctx):
    weight, (n,), _ = _step(ctx, "rmsprop", learning_rate=0.5, clip_weights=0.6)
    n_ref = 0.1 * G * G
    expected = np.clip(W0 - 0.5 * G / np.sqrt(n_ref + 1e-8), -0.6, 0.6)
    np.testing.assert_allclose(weight, expected, rtol=1e-6)
    np.testing.assert_allclose(n.asnumpy(), n_ref, rtol=1e-6)


def test_dcasgd_with_momentum_follows_the_documented_rule(ctx):
    # MXNet 1.9.1 raises on this case (its golden case is skipped)
    weight, (mom, previous), _ = _step(ctx, "dcasgd", steps=2, learning_rate=0.1, momentum=0.5)
    w, w_prev, m = W0.astype(np.float64), W0.astype(np.float64), 0.0
    for _ in range(2):
        m = 0.5 * m - 0.1 * (G + 0.04 * G * G * (w - w_prev))
        w_prev, w = w, w + m
    np.testing.assert_allclose(weight, w, rtol=1e-6)
    np.testing.assert_allclose(mom.asnumpy(), m, rtol=1e-6)
    np.testing.assert_allclose(previous.asnumpy(), w_prev, rtol=1e-6)


def test_nadam_momentum_schedule_is_shared_by_all_weights(ctx):
    # MXNet keeps one m_schedule per optimizer: two weights advance it twice
    nadam = mx.optimizer.create("nadam", learning_rate=0.01)
    updater = mx.optimizer.get_updater(nadam)
    for index in (0, 1):
        updater(index, mx.nd.array(G, ctx=ctx), mx.nd.array(W0, ctx=ctx))
    mu_1 = 0.9 * (1 - 0.5 * 0.96 ** (1 * 0.004))
    assert nadam.m_schedule == pytest.approx(mu_1 * mu_1)


def test_lars_scales_weights_but_not_biases(ctx):
    names = {0: "fc_weight", 1: "fc_bias"}
    lars = mx.optimizer.create("lars", learning_rate=0.1, eta=0.01, param_idx2name=names)
    updater = mx.optimizer.get_updater(lars)
    weights = [mx.nd.array(W0, ctx=ctx), mx.nd.array(W0, ctx=ctx)]
    updater([0, 1], [mx.nd.array(G, ctx=ctx)] * 2, weights)
    ratio = 0.01 * np.linalg.norm(W0) / np.linalg.norm(G)
    np.testing.assert_allclose(weights[0].asnumpy(), W0 - 0.1 * ratio * G, rtol=1e-5)
    np.testing.assert_allclose(weights[1].asnumpy(), W0 - 0.1 * G, rtol=1e-6)


def test_lars_momentum_correction_per_call(ctx):
    scheduler = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=0.1)
    names = {0: "a_bias", 1: "b_bias"}
    lars = mx.optimizer.create(
        "lars", learning_rate=0.1, momentum=0.9, lr_scheduler=scheduler, param_idx2name=names
    )
    updater = mx.optimizer.get_updater(lars)
    weights = [mx.nd.zeros((2, 3), ctx=ctx) for _ in range(2)]
    for _ in range(2):  # one call per step: both weights see the 0.05 / 0.1 correction
        updater([0, 1], [mx.nd.array(G, ctx=ctx)] * 2, weights)
    mom = 0.9 * 0.5 * (-0.1 * G) - 0.05 * G
    for state in updater.states.values():
        np.testing.assert_allclose(state.asnumpy(), mom, rtol=1e-6)


def test_sgld_adds_gaussian_noise_of_variance_lr(ctx):
    lr = 0.04
    sgld = mx.optimizer.create("sgld", learning_rate=lr)
    weight = mx.nd.zeros((200, 200), ctx=ctx)
    mx.optimizer.get_updater(sgld)(0, mx.nd.zeros((200, 200), ctx=ctx), weight)
    noise = weight.asnumpy()
    assert abs(noise.mean()) < 5 * math.sqrt(lr) / 200
    assert noise.std() == pytest.approx(math.sqrt(lr), rel=0.02)


def test_sgld_drift_and_reproducibility(ctx):
    runs = []
    for _ in range(2):
        mx.random.seed(7)
        runs.append(_step(ctx, "sgld", learning_rate=0.01, wd=0.1)[0])
    np.testing.assert_array_equal(runs[0], runs[1])
    drift = W0 - 0.005 * (G + 0.1 * W0)
    assert np.abs(runs[0] - drift).max() < 6 * 0.1  # noise is N(0, 0.1)


def test_signum_rules(ctx):
    weight, _, _ = _step(ctx, "signum", learning_rate=0.1, momentum=0.0, wd=0.5)
    np.testing.assert_allclose(weight, (1 - 0.05) * W0 - 0.1 * np.sign(G), rtol=1e-6)
    weight, mom, _ = _step(ctx, "signum", learning_rate=0.1, momentum=0.9, wd_lh=0.2)
    np.testing.assert_allclose(mom.asnumpy(), -0.1 * G, rtol=1e-6)
    np.testing.assert_allclose(weight, (1 - 0.02) * W0 - 0.1 * np.sign(G), rtol=1e-6)
    with pytest.raises(ValueError, match="wd_lh=0.2 needs momentum > 0"):
        mx.optimizer.create("signum", momentum=0.0, wd_lh=0.2)


def test_group_adagrad_rules(ctx):
    weight, history, _ = _step(ctx, "groupadagrad", learning_rate=0.1)
    h = np.mean(G * G, axis=1, keepdims=True)
    assert history.shape == (2, 1)
    np.testing.assert_allclose(weight, W0 - 0.1 * G / np.sqrt(h + 1e-5), rtol=1e-6)
    with pytest.raises(ValueError, match="must be 2-D"):
        mx.optimizer.create("groupadagrad").create_state(0, mx.nd.ones((3,), ctx=ctx))
    with pytest.raises(ValueError, match="weight decay is not supported"):
        _step(ctx, "groupadagrad", wd=0.1)


def test_adadelta_ignores_the_learning_rate_and_leaves_the_gradient(ctx):
    grad = mx.nd.array(G, ctx=ctx)
    weight = mx.nd.array(W0, ctx=ctx)
    optimizer = mx.optimizer.create("adadelta", learning_rate=123.0, rescale_grad=2.0)
    mx.optimizer.get_updater(optimizer)(0, grad, weight)
    g = 2 * G
    acc_g = 0.1 * g * g
    delta = np.sqrt(1e-5) / np.sqrt(acc_g + 1e-5) * g
    np.testing.assert_allclose(weight.asnumpy(), W0 - delta, rtol=1e-5)
    np.testing.assert_array_equal(grad.asnumpy(), G)


def test_updates_refuse_non_ndarrays(ctx):
    with pytest.raises(TypeError, match="SGD.update: grad must be an NDArray"):
        mx.optimizer.create("sgd").update(0, mx.nd.ones((1,), ctx=ctx), np.ones(1), None)
