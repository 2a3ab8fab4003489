"""Optimizer updates with row_sparse gradients, weights and states (MXNet's lazy/standard paths).

Golden values: tests/golden/sparse_updates/updates.json, recorded from MXNet 1.9.1
by tests/recording/record_sparse_updates.py.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import rebind as mx
from rebind.base import MXNetError
from rebind.ndarray.sparse_array import make_sparse

GOLDEN = Path(__file__).parents[1] / "golden" / "sparse_updates" / "updates.json"
CASES = json.loads(GOLDEN.read_text())["cases"]


def rsp(dense_rows, rows, shape):
    """A row_sparse array holding ``dense_rows`` at ``rows`` (ascending)."""
    values = np.array(dense_rows, dtype="float32").reshape((len(rows),) + tuple(shape[1:]))
    return make_sparse("row_sparse", values, (np.asarray(rows, dtype="int64"),), shape, mx.cpu())


def weight_of(values, stype):
    values = np.array(values, dtype="float32")  # a copy: the array keeps these values
    if stype == "default":
        return mx.nd.array(values)
    return rsp(values, range(values.shape[0]), values.shape)


def make_optimizer(name, kwargs):
    if name == "groupadagrad":
        return mx.optimizer.contrib.GroupAdaGrad(**kwargs)
    return mx.optimizer.create(name, **kwargs)


def flat(state):
    if state is None:
        return []
    return list(state) if isinstance(state, (list, tuple)) else [state]


@pytest.mark.parametrize(
    "case",
    CASES,
    ids=[f"{c['optimizer']}-{i // 2}-{c['weight_stype']}" for i, c in enumerate(CASES)],
)
def test_update_matches_mxnet(case):
    opt = make_optimizer(case["optimizer"], case["kwargs"])
    weight = weight_of(case["weight"], case["weight_stype"])
    state = opt.create_state(0, weight)
    assert [s.stype for s in flat(state)] == case["state_stypes"]
    shape = weight.shape
    for rows, grad, step in zip(case["rows"], case["grads"], case["steps"], strict=False):
        if "error" in step:
            with pytest.raises(MXNetError, match="Operator not implemented"):
                opt.update(0, weight, rsp(grad, rows, shape), state)
            return
        opt.update(0, weight, rsp(grad, rows, shape), state)
        assert weight.stype == step["weight_stype"]
        np.testing.assert_allclose(weight.asnumpy(), step["weight"], rtol=1e-6, atol=1e-7)
        assert [s.stype for s in flat(state)] == step["state_stypes"]
        for got, expected in zip(flat(state), step["states"], strict=True):
            np.testing.assert_allclose(got.asnumpy(), expected, rtol=1e-6, atol=1e-7)


def test_lazy_sgd_leaves_absent_rows_and_their_momentum_alone():
    # by definition: a lazy update touches only the rows the gradient holds
    opt = mx.optimizer.SGD(learning_rate=0.5, momentum=0.9, wd=0.1)
    start = np.arange(12, dtype="float32").reshape(4, 3)
    weight = weight_of(start, "row_sparse")
    state = opt.create_state(0, weight)
    opt.update(0, weight, rsp(np.ones((1, 3)), [2], (4, 3)), state)
    got = weight.asnumpy()
    np.testing.assert_array_equal(got[[0, 1, 3]], start[[0, 1, 3]])
    mom = -0.5 * 0.1 * start[2] - 0.5 * 1.0
    np.testing.assert_allclose(got[2], start[2] + mom, rtol=1e-6)
    np.testing.assert_allclose(state.asnumpy()[2], mom, rtol=1e-6)
    assert not state.asnumpy()[[0, 1, 3]].any()


def test_standard_sgd_decays_every_row():
    opt = mx.optimizer.SGD(learning_rate=0.5, wd=0.1, lazy_update=False)
    start = np.ones((3, 2), dtype="float32")
    weight = weight_of(start, "row_sparse")
    opt.update(0, weight, rsp(np.ones((1, 2)), [0], (3, 2)), None)
    expected = start * (1 - 0.05)
    expected[0] -= 0.5
    np.testing.assert_allclose(weight.asnumpy(), expected, rtol=1e-6)


def test_row_sparse_weight_must_hold_every_row():
    opt = mx.optimizer.SGD(learning_rate=0.1)
    weight = rsp(np.ones((2, 2)), [0, 2], (3, 2))
    with pytest.raises(
        MXNetError, match=r"weights.data.shape\[0\] \(2\) == weights.shape\[0\] \(3\)"
    ):
        opt.update(0, weight, rsp(np.ones((1, 2)), [0], (3, 2)), None)


def test_optimizer_without_sparse_kernel_takes_the_dense_fallback():
    # MXNet's storage fallback: the dense update with the missing rows as zeros
    start = np.linspace(-1, 1, 8, dtype="float32").reshape(4, 2)
    grad_rows = np.array([[0.5, -0.25]], dtype="float32")
    sparse_opt = mx.optimizer.create("nag", learning_rate=0.1, momentum=0.9, wd=0.01)
    dense_opt = mx.optimizer.create("nag", learning_rate=0.1, momentum=0.9, wd=0.01)
    weight = weight_of(start, "row_sparse")
    dense = mx.nd.array(start)
    sparse_state, dense_state = sparse_opt.create_state(0, weight), dense_opt.create_state(0, dense)
    dense_grad = np.zeros((4, 2), dtype="float32")
    dense_grad[3] = grad_rows[0]
    for _ in range(2):
        sparse_opt.update(0, weight, rsp(grad_rows, [3], (4, 2)), sparse_state)
        dense_opt.update(0, dense, mx.nd.array(dense_grad), dense_state)
    assert weight.stype == "row_sparse"
    np.testing.assert_array_equal(weight.asnumpy(), dense.asnumpy())


def test_updater_applies_lazy_updates_through_update_many():
    opt = mx.optimizer.SGD(learning_rate=1.0)
    updater = mx.optimizer.get_updater(opt)
    weight = weight_of(np.zeros((3, 2)), "row_sparse")
    updater([0], [rsp(np.ones((1, 2)), [1], (3, 2))], [weight])
    np.testing.assert_array_equal(weight.asnumpy(), [[0, 0], [-1, -1], [0, 0]])


def test_row_sparse_states_round_trip_mxnet_pickles():
    # MXNet 1.9.1 pickles row_sparse states as sparse records (recorded file)
    recorded = (GOLDEN.parent / "adam_row_sparse.states").read_bytes()
    updater = mx.optimizer.get_updater(mx.optimizer.create("adam", learning_rate=0.1))
    updater.set_states(recorded)
    mean, var = updater.states[0]
    assert mean.stype == var.stype == "row_sparse"
    grad = np.zeros((6, 3), dtype="float32")
    grad[[1, 4]] = np.arange(6).reshape(2, 3)
    # first Adam step from zero moments: m = (1 - beta1) g, v = (1 - beta2) g^2 (float32)
    one = np.float32(1)
    np.testing.assert_allclose(mean.asnumpy(), (one - np.float32(0.9)) * grad, rtol=1e-6)
    np.testing.assert_allclose(var.asnumpy(), (one - np.float32(0.999)) * grad**2, rtol=1e-6)
    assert updater.get_states() == recorded  # written back byte for byte
    updater.set_states(updater.get_states(dump_optimizer=True))  # rebind's own format
    assert [s.stype for s in updater.states[0]] == ["row_sparse", "row_sparse"]
