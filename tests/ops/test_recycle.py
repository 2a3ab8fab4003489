"""Large CPU outputs reuse last pass's memory, only when nothing refers to it any more."""

import numpy as np
import pytest

import rebind as mx
from rebind.executor.executor import single_backward
from rebind.ops import nn, recycle


@pytest.fixture
def small_threshold(monkeypatch):
    monkeypatch.setattr(recycle, "RECYCLE_MIN_BYTES", 1 << 12)
    monkeypatch.setattr(recycle, "_buffers", [])


def test_a_free_buffer_is_taken_again_and_a_held_one_is_not(small_threshold):
    first = recycle.take((64, 32), np.float32)
    first[...] = 7
    held = recycle.take((64, 32), np.float32)  # `first` still refers to its buffer
    assert not np.shares_memory(first, held)
    np.testing.assert_array_equal(first, 7)
    address = first.__array_interface__["data"][0]
    del first
    again = recycle.take((16, 8), np.float64)  # smaller, another dtype: a view of it
    assert again.__array_interface__["data"][0] == address
    assert again.shape == (16, 8) and again.dtype == np.float64 and again.flags.c_contiguous


def test_at_most_two_buffers_are_kept(small_threshold):
    arrays = [recycle.take((64, 64), np.float32) for _ in range(4)]
    assert len(recycle._buffers) == 2
    assert all(not np.shares_memory(a, b) for a in arrays for b in arrays if a is not b)


def _network():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=300, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def _train(steps, hold_views=True):
    symbol = _network()
    rng = np.random.default_rng(0)
    executor = symbol.simple_bind(mx.cpu(), data=(40, 20))
    for name, array in executor.arg_dict.items():
        array[:] = (
            rng.integers(0, 300, array.shape)
            if name == "softmax_label"
            else (rng.standard_normal(array.shape) * 0.1)
        )
    outputs, kept = [], []
    for _ in range(steps):
        (out,) = executor.forward(is_train=True)
        if hold_views:  # a user's view of this pass's output: its memory stays its own
            kept.append(out[:])
        outputs.append(out.asnumpy())
        with single_backward():
            executor.backward()
        executor.arg_dict["fc_weight"][:] -= executor.grad_dict["fc_weight"] * 0.5
    return outputs, [k.asnumpy() for k in kept], executor.grad_dict["fc_weight"].asnumpy()


@pytest.mark.parametrize("hold_views", [True, False])
def test_a_network_computes_the_same_with_recycled_outputs(monkeypatch, hold_views):
    expected = _train(4, hold_views)
    monkeypatch.setattr(recycle, "RECYCLE_MIN_BYTES", 1 << 12)
    monkeypatch.setattr(recycle, "_buffers", [])
    calls = []
    take = recycle.take
    addresses = []

    def counted(*args):
        calls.append(args)
        array = take(*args)
        addresses.append(array.__array_interface__["data"][0])
        return array

    monkeypatch.setattr(recycle, "take", counted)
    got = _train(4, hold_views)
    assert len(calls) >= 4  # the FullyConnected output went through the recycler
    # held views keep every pass's memory apart; otherwise one buffer serves every pass
    assert len(set(addresses)) == (len(addresses) if hold_views else 1)
    for got_part, expected_part in zip(got, expected, strict=True):
        for a, b in zip(got_part, expected_part, strict=True):
            np.testing.assert_array_equal(a, b)
    outputs, views, _ = got
    for output, view in zip(outputs, views, strict=False):  # none without held views
        np.testing.assert_array_equal(view, output)  # held views were never overwritten
    assert nn.recycle is recycle
