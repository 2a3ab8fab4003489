"""LAMB's ``aggregate_num``: MXNet 1.9.1's default, its bounds, and the one-weight path."""

import numpy as np
import pytest

import rebind as mx


@pytest.mark.parametrize(("env", "expected"), [(None, 45), ("100", 45), ("0", 1), ("7", 7)])
def test_aggregate_num_follows_mxnet(monkeypatch, env, expected):
    """``max(1, min(45, MXNET_OPTIMIZER_AGGREGATION_SIZE or 45))``, as MXNet's LAMB sets it."""
    if env is None:
        monkeypatch.delenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", raising=False)
    else:
        monkeypatch.setenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", env)
    assert mx.optimizer.create("lamb").aggregate_num == expected


def _weights(dtype, seed):
    rs = np.random.RandomState(seed)
    return [mx.nd.array(rs.uniform(-1, 1, (4, 3)), dtype=dtype) for _ in range(2)]


def test_a_list_with_aggregate_num_one_takes_the_single_weight_path():
    """With aggregate_num 1 MXNet updates a list of one weight as ``update(index, ...)``."""
    listed = mx.optimizer.create("lamb", learning_rate=0.01, wd=0.01)
    listed.aggregate_num = 1
    single = mx.optimizer.create("lamb", learning_rate=0.01, wd=0.01)
    (w1, g), (w2, _) = _weights("float64", 0), _weights("float64", 0)
    s1, s2 = listed.create_state(0, w1), single.create_state(0, w2)
    listed.update([0], [w1], [g], [s1])
    single.update(0, w2, g, s2)
    np.testing.assert_array_equal(w1.asnumpy(), w2.asnumpy())


def test_several_weights_differ_from_one_at_a_time_as_in_mxnet():
    """multi_lamb_update keeps the step in float32: a float64 weight moves differently."""
    multi = mx.optimizer.create("lamb", learning_rate=0.01)
    single = mx.optimizer.create("lamb", learning_rate=0.01)
    weights, grads = _weights("float64", 1), _weights("float64", 2)
    copies = [w.copy() for w in weights]
    multi.update([0, 1], weights, grads, [multi.create_state(i, w) for i, w in enumerate(weights)])
    for i, (w, g) in enumerate(zip(copies, grads, strict=True)):
        single.update(i, w, g, single.create_state(i, w))
    for w, c in zip(weights, copies, strict=True):
        np.testing.assert_allclose(w.asnumpy(), c.asnumpy(), rtol=1e-6)
        assert not np.array_equal(w.asnumpy(), c.asnumpy())
