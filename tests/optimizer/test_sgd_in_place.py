"""SGD's in-place update: MXNet's order of float32 operations, whatever the array size.

On NumPy the update runs piece by piece through a scratch buffer (a speed
matter); these tests pin down that the results are exactly those of the
whole-array formula in MXNet's order, for arrays spanning several pieces, with
and without momentum, clipping and weight decay, and for float16 weights.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.optimizer.rules import _PIECE

SHAPE = (2 * _PIECE // 517 + 1, 517)  # more than two pieces, and not a multiple of one


def _arrays(dtype=np.float32):
    rng = np.random.default_rng(7)
    weight = rng.standard_normal(SHAPE).astype(dtype)
    grads = [rng.standard_normal(SHAPE).astype(dtype) for _ in range(3)]
    return weight, grads


def _mxnet_order(weight, grads, lr, wd, momentum, rescale, clip=None):
    """The update written out whole-array, as MXNet's kernel orders it."""
    kind = weight.dtype.type
    w, mom = weight.copy(), np.zeros_like(weight)
    lr, wd, momentum, rescale = kind(lr), kind(wd), kind(momentum), kind(rescale)
    for g in grads:
        if clip is None:
            step = (lr * rescale) * g
        else:
            step = lr * np.clip(g * rescale, -kind(clip), kind(clip))
        if momentum:
            mom = momentum * mom - (lr * wd) * w - step
            w = w + mom
        else:
            w = (kind(1) - lr * wd) * w - step
    return w, mom


def _run(ctx, weight, grads, **kwargs):
    optimizer = mx.optimizer.create("sgd", **kwargs)
    updater = mx.optimizer.get_updater(optimizer)
    w = mx.nd.array(weight, ctx=ctx, dtype=weight.dtype)
    for g in grads:
        updater(0, mx.nd.array(g, ctx=ctx, dtype=g.dtype), w)
    return w.asnumpy(), updater.states[0]


@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("clip", [None, 0.01])
def test_large_sgd_update_equals_mxnets_formula(ctx, momentum, clip):
    weight, grads = _arrays()
    kwargs = dict(learning_rate=0.05, wd=1e-3, momentum=momentum, rescale_grad=1 / 128)
    if clip is not None:
        kwargs["clip_gradient"] = clip
    got, state = _run(ctx, weight, grads, **kwargs)
    expected, mom = _mxnet_order(weight, grads, 0.05, 1e-3, momentum, 1 / 128, clip)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    if momentum:
        np.testing.assert_allclose(state.asnumpy(), mom, rtol=1e-5, atol=1e-7)
    else:
        assert state is None


def test_numpy_pieces_give_exactly_the_whole_array_result():
    """On NumPy, the piece-by-piece update and the whole-array formula agree bit for bit."""
    weight, grads = _arrays()
    got, state = _run(
        mx.cpu(), weight, grads, learning_rate=0.05, wd=1e-3, momentum=0.9, rescale_grad=1 / 128
    )
    expected, mom = _mxnet_order(weight, grads, 0.05, 1e-3, 0.9, 1 / 128)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(state.asnumpy(), mom)


@pytest.mark.filterwarnings("ignore:SGD. accumulating with float16")
def test_float16_weights_update_in_their_own_type(ctx):
    weight, grads = _arrays(np.float16)
    got, _ = _run(ctx, weight, grads[:1], learning_rate=0.05, momentum=0.9, rescale_grad=0.5)
    expected, _ = _mxnet_order(weight, grads[:1], 0.05, 0.0, 0.9, 0.5)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), expected.astype(np.float32), rtol=2e-3)


def test_a_non_contiguous_weight_view_is_updated_in_place():
    """A weight that is a strided view (not cut into pieces) still changes in place."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal((200, 800)).astype(np.float32)
    grad = rng.standard_normal((200, 400)).astype(np.float32)
    weight = mx.nd.NDArray(base[:, ::2], mx.cpu())
    optimizer = mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9)
    updater = mx.optimizer.get_updater(optimizer)
    before, untouched = base[:, ::2].copy(), base[:, 1::2].copy()
    updater(0, mx.nd.array(grad), weight)
    np.testing.assert_array_equal(base[:, ::2], before - np.float32(0.1) * grad)
    np.testing.assert_array_equal(base[:, 1::2], untouched)


def test_no_weight_decay_skips_nothing_that_matters(ctx):
    """wd=0 (MXNet's default) skips the decay passes: same result as the full formula."""
    rng = np.random.default_rng(5)
    weight = rng.standard_normal((300, 300)).astype(np.float32)
    grad = rng.standard_normal((300, 300)).astype(np.float32)
    optimizer = mx.optimizer.create(
        "sgd", learning_rate=0.1, momentum=0.9, wd=0.0, rescale_grad=0.5
    )
    w, g = mx.nd.array(weight, ctx=ctx), mx.nd.array(grad, ctx=ctx)
    state = optimizer.create_state(0, w)
    for _ in range(3):
        optimizer.update(0, w, g, state)
    mom, expected = np.zeros_like(weight), weight.copy()
    lr, rescale = np.float32(0.1), np.float32(0.5)
    for _ in range(3):
        mom = np.float32(0.9) * mom - (lr * rescale) * grad
        expected = expected + mom
    np.testing.assert_allclose(w.asnumpy(), expected, rtol=1e-6, atol=1e-6)
