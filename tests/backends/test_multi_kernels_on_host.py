"""The multi-weight SGD kernel (cupy_multi_kernels), compiled for the host, against the rule.

One launch updates several weights through their addresses; every weight
must come out exactly as ``rules.sgd_step`` leaves it, whatever the sizes (an
empty weight and a one-element one included), memory between the weights
must be left alone, and more than ``GROUP`` weights take one launch per
group. ``rules.sgd_steps`` must group CuPy weights by their rates.
"""

import numpy as np
import pytest

from rebind.backends import cupy_kernels, cupy_multi_kernels
from rebind.optimizer import rules

from .host_kernels import compiler

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler to build kernels")

SHAPES = [(7, 5), (0,), (1,), (300,), (4, 3, 2)]


@pytest.fixture(autouse=True)
def _fresh_kernels(monkeypatch):
    monkeypatch.setattr(cupy_multi_kernels, "_KERNELS", {})


def _arrays(dtype, seed, shapes=SHAPES):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for shape in shapes]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("momentum", "wd"), [(0.9, 1e-3), (0.9, 0.0), (0.0, 1e-3)])
def test_one_launch_equals_the_rule_on_every_weight(host_cupy, dtype, momentum, wd):
    weights, grads, moms = (_arrays(dtype, seed) for seed in (1, 2, 3))
    kind = np.dtype(dtype).type
    lr, rescale = 0.1, 0.5
    # the rule takes its settings as MXNet's float fields hold them (float32)
    setting = rules.setting
    decay, rate = setting(kind, lr) * setting(kind, wd), setting(kind, lr) * setting(kind, rescale)
    got_w, got_m = [w.copy() for w in weights], [m.copy() for m in moms]
    states = got_m if momentum else None
    for _ in range(2):
        count = len(got_w)
        cupy_multi_kernels.sgd_steps(
            host_cupy,
            got_w,
            grads,
            states,
            [decay] * count,
            [rate] * count,
            setting(kind, momentum),
        )
    for weight, grad, mom, w, m in zip(weights, grads, moms, got_w, got_m, strict=True):
        expected_w, expected_m = weight.copy(), mom.copy()
        state = expected_m if momentum else None
        for _ in range(2):
            rules.sgd_step(expected_w, grad, state, lr, wd, momentum, rescale)
        np.testing.assert_array_equal(w, expected_w)
        np.testing.assert_array_equal(m, expected_m)
        if weight.size:
            assert not np.array_equal(w, weight)


def _offset(array, by):
    """A copy of ``array`` whose data starts ``by`` bytes past a 64-byte boundary."""
    raw = np.zeros(array.nbytes + 64 + by, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64 + by
    view = raw[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    view[...] = array
    return view


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_aligned_words_and_single_elements_give_the_same_weights(host_cupy, dtype):
    # arrays on 16-byte words go four elements a thread (a last lane of 1-3 elements
    # alone); one array off a word sends the whole group one element a thread
    shapes = [(35,), (1,), (0,), (3,), (4,), (8, 5), (2,)]
    weights, grads, moms = (_arrays(dtype, seed, shapes) for seed in (12, 13, 14))
    kind = np.dtype(dtype).type
    results = []
    for shift in (0, 4):
        cupy_multi_kernels._KERNELS.clear()
        got_w = [_offset(w, 0) for w in weights]
        got_g = [_offset(g, shift if k == 3 else 0) for k, g in enumerate(grads)]
        got_m = [_offset(m, 0) for m in moms]
        count = len(shapes)
        decays, rates = [kind(1e-3)] * count, [kind(0.05)] * count
        cupy_multi_kernels.sgd_steps(host_cupy, got_w, got_g, got_m, decays, rates, kind(0.9))
        width = 1 if shift else cupy_multi_kernels.WIDTH
        assert list(cupy_multi_kernels._KERNELS) == [("sgd_momentum", count, width)]
        results.append((got_w, got_m))
    (aligned_w, aligned_m), (single_w, single_m) = results
    for k, (weight, grad, mom) in enumerate(zip(weights, grads, moms, strict=True)):
        # the same arithmetic either way, bit for bit
        np.testing.assert_array_equal(aligned_w[k], single_w[k])
        np.testing.assert_array_equal(aligned_m[k], single_m[k])
        # and the rule's (its decay lr * wd rounds apart from 1e-3)
        rules.sgd_step(weight, grad, mom, 0.05, 1e-3 / 0.05, 0.9, 1.0)
        np.testing.assert_allclose(aligned_w[k], weight, rtol=1e-6)
        np.testing.assert_allclose(aligned_m[k], mom, rtol=1e-6)


def test_only_the_tabled_views_change(host_cupy):
    # weights that are views into one buffer: the gaps between them keep their values
    buffer = np.arange(40, dtype=np.float32)
    weights = [buffer[2:10], buffer[15:16], buffer[20:38]]
    grads = [np.ones_like(w) for w in weights]
    before = buffer.copy()
    f32 = np.float32
    cupy_multi_kernels.sgd_steps(
        host_cupy, weights, grads, None, [f32(0)] * 3, [f32(0.5)] * 3, f32(0)
    )
    changed = np.flatnonzero(buffer != before)
    assert changed.tolist() == [*range(2, 10), 15, *range(20, 38)]
    np.testing.assert_array_equal(buffer[changed], before[changed] - f32(0.5))


def _count_weights(monkeypatch, name, host_cupy):
    """Patch ``cupy_multi_kernels.<name>`` to note how many weights each call gets."""
    counts, function = [], getattr(cupy_multi_kernels, name)

    def counted(_cupy, first, *args):
        arrays = args[0] if name == "_launch_group" else None  # (rule, arrays, scalars)
        counts.append(len(first if arrays is None else arrays[0]))
        return function(host_cupy, first, *args)

    monkeypatch.setattr(cupy_multi_kernels, name, counted)
    return counts


def test_more_weights_than_a_group_take_one_launch_per_group(host_cupy, monkeypatch):
    launches = _count_weights(monkeypatch, "_launch_group", host_cupy)
    count = cupy_multi_kernels.GROUP + 3
    shapes = [(k % 5 + 1, 3) for k in range(count)]
    weights, grads, moms = (_arrays(np.float32, seed, shapes) for seed in (4, 5, 6))
    f32 = np.float32
    decay, rate = f32(0.1) * f32(1e-3), f32(0.1) * f32(0.5)  # as sgd_step makes them
    got_w, got_m = [w.copy() for w in weights], [m.copy() for m in moms]
    cupy_multi_kernels.sgd_steps(
        host_cupy, got_w, grads, got_m, [decay] * count, [rate] * count, f32(0.9)
    )
    assert launches == [cupy_multi_kernels.GROUP, 3]
    for weight, grad, mom, w, m in zip(weights, grads, moms, got_w, got_m, strict=True):
        rules.sgd_step(weight, grad, mom, 0.1, 1e-3, 0.9, 0.5)
        np.testing.assert_array_equal(w, weight)
        np.testing.assert_array_equal(m, mom)


def test_sgd_steps_launches_once_for_weights_of_other_rates(host_cupy, monkeypatch):
    # weights with decay and biases without (MXNet's wd_mult 0 for biases), and another
    # learning rate: one launch, each weight with its own rates
    launches = _count_weights(monkeypatch, "sgd_steps", host_cupy)
    monkeypatch.setattr(cupy_kernels, "fusable", lambda *a, **k: True)
    monkeypatch.setattr(rules, "_fits_pieces", lambda *a: False)  # not the NumPy pieces
    monkeypatch.setattr(rules, "_cupy", lambda: host_cupy)
    shapes = [(6, 4), (6,), (3, 6), (3,)]
    weights, grads, moms = (_arrays(np.float32, seed, shapes) for seed in (7, 8, 9))
    wds = [1e-3, 0.0, 1e-3, 0.0]
    lrs = [0.1, 0.1, 0.2, 0.1]
    got_w, got_m = [w.copy() for w in weights], [m.copy() for m in moms]
    rules.sgd_steps(got_w, grads, got_m, lrs, wds, 0.9, 0.5)
    assert launches == [4]
    monkeypatch.undo()
    for weight, grad, mom, lr, wd, w, m in zip(
        weights, grads, moms, lrs, wds, got_w, got_m, strict=True
    ):
        rules.sgd_step(weight, grad, mom, lr, wd, 0.9, 0.5)
        np.testing.assert_array_equal(w, weight)
        np.testing.assert_array_equal(m, mom)


@pytest.mark.parametrize("clip", [None, 0.05])
def test_adam_on_the_device_equals_adam_on_the_cpu(host_cupy, monkeypatch, clip):
    # the optimizer's own update_many (rates, counts, bias correction, decay multipliers)
    # once on NumPy and once through the multi-weight kernel built for the host
    import rebind as mx
    from rebind.plugins import optimizers_adam

    names = ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]  # biases: no decay
    shapes = [(6, 4), (6,), (3, 6), (3,)]

    def run(on_device):
        optimizer = mx.optimizer.create(
            "adam",
            learning_rate=0.01,
            wd=0.01,
            rescale_grad=0.5,
            clip_gradient=clip,
            param_idx2name=dict(enumerate(names)),
        )
        weights = [mx.nd.array(w) for w in _arrays(np.float32, 10, shapes)]
        states = [optimizer.create_state(k, w) for k, w in enumerate(weights)]
        with monkeypatch.context() as patch:
            if on_device:
                launches = _count_weights(patch, "adam_steps", host_cupy)
                patch.setattr(optimizers_adam, "fusable", lambda *a, **k: True)
            for step in range(3):
                grads = [mx.nd.array(g * (step + 1)) for g in _arrays(np.float32, 11, shapes)]
                optimizer.update_many(list(range(4)), weights, grads, states)
            if on_device:
                assert launches == [2] * 6  # per step: weights with decay, biases without
        return [a.asnumpy() for a in weights + [m for s in states for m in s]]

    for got, expected in zip(run(True), run(False), strict=True):
        np.testing.assert_array_equal(got, expected)
