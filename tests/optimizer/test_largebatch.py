"""LBSGD and MXNet's Test optimizer against MXNet 1.9.1's recorded steps."""

import json
from pathlib import Path

import numpy as np
import pytest

import rebind as mx

from .largebatch_cases import CASES, inputs

RECORDED = json.loads((Path(__file__).parent / "data" / "largebatch.json").read_text())


@pytest.mark.parametrize("case", sorted(CASES))
def test_steps_match_mxnet(case, ctx):
    name, kwargs = CASES[case]
    weight0, grads = inputs()
    updater = mx.optimizer.get_updater(mx.optimizer.create(name, learning_rate=0.1, **kwargs))
    weight = mx.nd.array(weight0, ctx=ctx)
    for step, (grad, expected) in enumerate(zip(grads, RECORDED[case], strict=True)):
        updater(0, mx.nd.array(grad, ctx=ctx), weight)
        np.testing.assert_allclose(
            weight.asnumpy(), expected, rtol=1e-5, atol=1e-6, err_msg=f"{case}, step {step}"
        )


def test_batch_scale_steps_once_per_macro_batch_with_the_mean():
    opt = mx.optimizer.create("lbsgd", learning_rate=0.1, batch_scale=2, warmup_epochs=0)
    updater = mx.optimizer.get_updater(opt)
    weight = mx.nd.array(np.ones((2, 2)))
    g1, g2 = np.full((2, 2), 0.2), np.full((2, 2), 0.6)
    grad = mx.nd.array(g1)
    updater(0, grad, weight)
    np.testing.assert_array_equal(weight.asnumpy(), np.ones((2, 2)))  # half a macro batch
    grad[:] = g2  # the caller reuses its gradient array, as a module's backward does
    updater(0, grad, weight)
    # rate 0.1 * batch_scale (warm-up done) on the mean of the two gradients
    np.testing.assert_allclose(weight.asnumpy(), 1 - 0.2 * (g1 + g2) / 2, rtol=1e-6)


def test_warmup_factor_grows_to_batch_scale():
    opt = mx.optimizer.LBSGD(batch_scale=4, warmup_epochs=1, updates_per_epoch=10)
    assert opt._get_lbmult(0) == 1.0 and opt._get_lbmult(5) == pytest.approx(2.5)
    assert opt._get_lbmult(10) == 4.0 and opt._get_lbmult(50) == 4.0


def test_group_adagrad_has_mxnets_contrib_path():
    from rebind.optimizer.contrib import GroupAdaGrad

    assert GroupAdaGrad is mx.optimizer.GroupAdaGrad
    opt = GroupAdaGrad(learning_rate=0.5)
    weight, grad = mx.nd.ones((2, 3)), mx.nd.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    history = opt.create_state(0, weight)
    opt.update(0, weight, grad, history)
    # h = mean(g^2) per row; w -= lr * g / sqrt(h + eps)
    expected = 1 - 0.5 * grad.asnumpy() / np.sqrt(np.array([[1.0], [4.0]]) + 1e-5)
    np.testing.assert_allclose(weight.asnumpy(), expected, rtol=1e-6)
