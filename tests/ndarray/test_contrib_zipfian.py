"""mx.nd.contrib.rand_zipfian and mx.sym.contrib.rand_zipfian (MXNet's Python samplers).

Expected values by definition (MXNet's docstring): P(class) = (log(class + 2) -
log(class + 1)) / log(range_max + 1); expected counts are P times num_sampled.
Recorded from MXNet 1.9.1 (``rand_zipfian(mx.nd.array([3]), 4, 5)``): the true
class 3 expects 0.49815515 and sampled classes 0, 1, 2, 4 expect 1.54741123,
0.90517754, 0.64223369, 0.40702239 (its docstring shows the probabilities
instead, 0.12453879 for class 3: the code multiplies by num_sampled).
"""

import numpy as np
import pytest

import rebind as mx


def _probability(classes, range_max):
    classes = np.asarray(classes, dtype=np.float64)
    return (np.log(classes + 2) - np.log(classes + 1)) / np.log(range_max + 1)


def _check(sampled, count_true, count_sampled, true_classes, num_sampled, range_max):
    sampled = sampled.asnumpy()
    assert sampled.dtype == np.int64 and sampled.shape == (num_sampled,)
    assert sampled.min() >= 0 and sampled.max() < range_max
    assert count_true.dtype == np.float64 and count_sampled.dtype == np.float64
    expected_true = _probability(true_classes, range_max) * num_sampled
    np.testing.assert_allclose(count_true.asnumpy(), expected_true, rtol=1e-12)
    expected_sampled = _probability(sampled, range_max) * num_sampled
    np.testing.assert_allclose(count_sampled.asnumpy(), expected_sampled, rtol=1e-12)


def test_counts_recorded_from_mxnet():
    mx.random.seed(1)
    sampled, count_true, count_sampled = mx.nd.contrib.rand_zipfian(mx.nd.array([3]), 4, 5)
    np.testing.assert_allclose(count_true.asnumpy(), [0.49815515], rtol=1e-7)
    recorded = {0: 1.54741123, 1: 0.90517754, 2: 0.64223369, 4: 0.40702239}
    expected = [recorded.get(c, _probability(c, 5) * 4) for c in sampled.asnumpy()]
    np.testing.assert_allclose(count_sampled.asnumpy(), expected, rtol=1e-7)


@pytest.mark.parametrize("range_max", [5, 20])
def test_ndarray_sampler_follows_the_zipfian_law(range_max):
    mx.random.seed(7)
    true_classes = mx.nd.array([0, 3, range_max - 1], dtype="int32")
    num_sampled = 20000
    outs = mx.nd.contrib.rand_zipfian(true_classes, num_sampled, range_max)
    _check(*outs, [0, 3, range_max - 1], num_sampled, range_max)
    frequencies = np.bincount(outs[0].asnumpy(), minlength=range_max) / num_sampled
    np.testing.assert_allclose(
        frequencies, _probability(np.arange(range_max), range_max), atol=0.02
    )


def test_symbol_sampler_binds_and_matches_the_law():
    mx.random.seed(3)
    true_classes = mx.sym.var("true_classes")
    outputs = mx.sym.Group(list(mx.sym.contrib.rand_zipfian(true_classes, 1000, 20)))
    classes = mx.nd.array([1, 7], dtype="int32")
    executor = outputs.bind(mx.cpu(), {"true_classes": classes})
    _check(*executor.forward(), [1, 7], 1000, 20)


def test_symbol_sampler_needs_a_symbol():
    with pytest.raises(TypeError, match="true_classes must be a Symbol"):
        mx.sym.contrib.rand_zipfian(mx.nd.array([1]), 4, 5)
