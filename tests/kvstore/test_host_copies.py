"""Sums and copies between host contexts (``kvstore/host_copies.py``): in place, in threads.

Expected values by definition: a push stores the sum of its values in the
order given (or hands it to the updater), a pull leaves every output equal to
the stored value and sharing no memory with it; splitting a big push or pull
between threads changes no value.
"""

import threading

import numpy as np
import pytest

import rebind as mx
from rebind import threadpool
from rebind.kvstore import host_copies

CPUS = [mx.cpu(0), mx.cpu(1), mx.cpu_pinned(0)]


def _values(shape, count, seed):
    rs = np.random.RandomState(seed)
    return [rs.randn(*shape).astype(np.float32) for _ in range(count)]


def _sgd(store, learning_rate=0.5):
    store.set_optimizer(mx.optimizer.SGD(learning_rate=learning_rate, rescale_grad=1.0))


@pytest.mark.parametrize("name", ["local", "device"])
def test_host_pushes_are_summed_in_order(name):
    a, b, c = _values((5, 7), 3, seed=0)
    store = mx.kv.create(name)
    store.init(3, mx.nd.zeros((5, 7)))
    store.push(3, [mx.nd.array(v, ctx=ctx) for v, ctx in zip((a, b, c), CPUS, strict=True)])
    out = mx.nd.zeros((5, 7), ctx=mx.cpu(1))
    store.pull(3, out=out)
    np.testing.assert_array_equal(out.asnumpy(), (a + b) + c)  # float32, this order


def test_the_sum_buffer_of_an_update_is_reused_and_never_stored():
    store = mx.kv.create("local")
    weight = np.ones((4, 4), np.float32)
    store.init("w", mx.nd.array(weight))
    _sgd(store)
    expected = weight.copy()
    buffers = []
    for step in range(3):
        g0, g1 = _values((4, 4), 2, seed=step)
        store.push("w", [mx.nd.array(g0, ctx=mx.cpu(0)), mx.nd.array(g1, ctx=mx.cpu(1))])
        buffers.append(store._buffers["w"])
        expected = expected - 0.5 * (g0 + g1)
        np.testing.assert_allclose(store._store["w"].asnumpy(), expected, rtol=1e-6)
    assert buffers[0] is buffers[1] is buffers[2]  # one array for every push
    assert not np.shares_memory(buffers[0], store._store["w"]._data)


def test_without_an_updater_each_push_stores_a_new_array():
    store = mx.kv.create("local")
    store.init(0, mx.nd.zeros((3,)))
    first = [mx.nd.array([1, 2, 3], ctx=mx.cpu(0)), mx.nd.array([1, 1, 1], ctx=mx.cpu(1))]
    store.push(0, first)
    kept = store._store[0]
    store.push(0, [mx.nd.array([5, 5, 5], ctx=mx.cpu(0)), mx.nd.array([1, 1, 1], ctx=mx.cpu(1))])
    np.testing.assert_array_equal(kept.asnumpy(), [2, 3, 4])  # the first sum is untouched
    np.testing.assert_array_equal(store._store[0].asnumpy(), [6, 6, 6])
    assert all(not np.shares_memory(store._store[0]._data, v._data) for v in first)


def test_a_pull_fills_every_context_with_a_copy_and_counts_the_write():
    store = mx.kv.create("local")
    (value,) = _values((6,), 1, seed=3)
    store.init("k", mx.nd.array(value))
    outs = [mx.nd.zeros((6,), ctx=ctx) for ctx in CPUS]
    versions = [out._version for out in outs]
    store.pull("k", out=outs)
    for out, version in zip(outs, versions, strict=True):
        np.testing.assert_array_equal(out.asnumpy(), value)
        assert not np.shares_memory(out._data, store._store["k"]._data)
        assert out._version == version + 1  # NDArray's write count moves, as copyto's does
    outs[0][:] = 0  # the outputs are independent arrays
    np.testing.assert_array_equal(outs[1].asnumpy(), value)


SHAPES = [(512, 300), (300,), (700, 512), (10,)]  # several MiB: above SPLIT_BYTES


def _big_pushpull(monkeypatch, count, switch):
    """A big pushpull on the policy's fixed ``count``; the outputs and the threads that copied."""
    policy = threadpool.ThreadPolicy({"REBIND_NUM_THREADS": str(count)}, cpus=2)
    monkeypatch.setattr(threadpool, "POLICY", policy)
    monkeypatch.setattr(threadpool.POOLS, "controllable", False)  # the count only, not BLAS
    monkeypatch.setenv("REBIND_CONTEXT_THREADS", switch)
    grads = [_values(shape, 2, seed=i) for i, shape in enumerate(SHAPES)]
    threads_seen = set()
    original = host_copies.copy_into

    def copy_recorded(source, target):
        threads_seen.add(threading.get_ident())
        original(source, target)

    monkeypatch.setattr(host_copies, "copy_into", copy_recorded)
    store = mx.kv.create("local")
    store.init(list(range(4)), [mx.nd.ones(shape) for shape in SHAPES])
    _sgd(store)
    pushed = [[mx.nd.array(g, ctx=mx.cpu(k)) for k, g in enumerate(pair)] for pair in grads]
    outs = [[mx.nd.zeros(shape, ctx=mx.cpu(k)) for k in range(2)] for shape in SHAPES]
    store.pushpull(list(range(4)), pushed, out=outs)
    return grads, [[o.asnumpy() for o in block] for block in outs], threads_seen


@pytest.mark.usefixtures("helpers_run_their_calls")
def test_a_big_push_and_pull_split_between_threads_equal_the_work_in_turn(monkeypatch):
    results = {}
    for switch in ("0", "1"):
        grads, results[switch], threads_seen = _big_pushpull(monkeypatch, 2, switch)
        assert len(threads_seen) == (2 if switch == "1" else 1)
    for block_turns, block_split, pair in zip(results["0"], results["1"], grads, strict=True):
        expected = 1 - 0.5 * (pair[0] + pair[1])
        for turns, split in zip(block_turns, block_split, strict=True):
            np.testing.assert_array_equal(split, turns)
            np.testing.assert_allclose(split, expected, rtol=1e-6)


def test_a_big_push_and_pull_stay_in_the_calling_thread_when_the_policy_has_one_thread(
    monkeypatch,
):
    # one thread's worth of CPU (a busy machine): two threads would only take turns
    _, _, threads_seen = _big_pushpull(monkeypatch, 1, "1")
    assert threads_seen == {threading.get_ident()}


def test_halves_cut_by_bytes_and_keep_the_order():
    groups = [(k, [mx.nd.zeros((n,))]) for k, n in enumerate([100, 10, 10, 100, 80])]
    first, second = host_copies._halves(groups)
    assert [k for k, _ in first] == [0, 1, 2] and [k for k, _ in second] == [3, 4]
