"""Key-value stores: keys and values, sums across contexts, updates on the store, plugins."""

import importlib
import os
import pickle
import struct
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import rebind as mx
from rebind import registry
from rebind.errors import DTypeMismatchError, FormatError, ShapeError, UnknownNameError
from rebind.kvstore import KVStore, KVStoreError
from rebind.optimizer import states as updater_states

SHAPE = (2, 3)
STORES = ["local", "device"]


def nd(values, ctx, dtype="float32"):
    return mx.nd.array(np.asarray(values, dtype=dtype), ctx=ctx, dtype=dtype)


def filled(value, ctx, shape=SHAPE):
    return nd(np.full(shape, value), ctx)


def pulled(store, key, ctx, shape=SHAPE):
    out = mx.nd.zeros(shape, ctx=ctx)
    store.pull(key, out=out)
    return out.asnumpy()


@pytest.fixture(params=STORES)
def kv(request):
    """A fresh store of each built-in type."""
    return mx.kv.create(request.param)


@pytest.fixture
def ctxs(ctx):
    """Two contexts to push from: the backend under test and another CPU device."""
    return [ctx, mx.cpu(1)]


# -- creating stores --------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, expected",
    [
        ("local", "local"),
        ("LOCAL", "local"),
        ("device", "device"),
        ("Device", "device"),
        ("local_update_cpu", "local_update_cpu"),
        ("local_allreduce_cpu", "local_allreduce_cpu"),
        ("local_allreduce_device", "local_allreduce_device"),
    ],
)
def test_create_by_name(name, expected):
    store = mx.kv.create(name)
    assert isinstance(store, mx.kvstore.KVStore)
    assert store.type == expected
    assert (store.rank, store.num_workers) == (0, 1)
    assert store.is_capable("optimizer") and store.is_capable(mx.kv.KVStore.OPTIMIZER)
    store.barrier()
    assert store.num_dead_node(0) == 0


def test_aliases_and_defaults():
    assert mx.kv is mx.kvstore
    assert mx.kv.create().type == "local"
    assert registry.get_registry("kvstores").owner("device") == "rebind.plugins.kvstores_local"
    with pytest.raises(ValueError, match="unknown capability 'allreduce'"):
        mx.kv.create().is_capable("allreduce")


def test_unknown_name_lists_known_and_suggests():
    with pytest.raises(UnknownNameError) as info:
        mx.kv.create("devise")
    message = str(info.value)
    assert "unknown kvstore 'devise'" in message
    assert "available: device, dist_async," in message
    assert ", local," in message
    assert "Did you mean 'device'?" in message
    # MXNet's bare 'dist' is not registered: the same message, nothing pretends
    with pytest.raises(UnknownNameError, match="unknown kvstore 'dist'; available: device"):
        mx.kv.create("dist")
    with pytest.raises(TypeError, match="name must be a string"):
        mx.kv.create(3)


# -- init, push, pull -----------------------------------------------------------------


@pytest.mark.parametrize("key", [3, "fc1_weight"])
def test_init_then_pull_into_several_outputs(kv, ctxs, key):
    value = nd(np.arange(6).reshape(SHAPE), ctxs[0])
    kv.init(key, value)
    value[:] = -1  # the store keeps its own copy
    outs = [mx.nd.zeros(SHAPE, ctx=c) for c in (*ctxs, ctxs[0])]
    kv.pull(key, out=outs)
    for out, context in zip(outs, (*ctxs, ctxs[0]), strict=True):
        assert out.context == context
        np.testing.assert_array_equal(out.asnumpy(), np.arange(6).reshape(SHAPE))


def test_push_of_one_value_per_device_sums_them(kv, ctxs):
    kv.init(9, filled(100, ctxs[0]))
    kv.push(9, [filled(1, ctxs[0]), filled(2, ctxs[1]), filled(4, ctxs[0])])
    # without an updater the store holds the sum, replacing the initial value
    for context in ctxs:
        np.testing.assert_array_equal(pulled(kv, 9, context), np.full(SHAPE, 7))


def test_lists_of_keys_with_lists_of_values(kv, ctxs):
    keys = ["a", "b", "c"]
    kv.init(keys, [filled(0, ctxs[0], (2,)), filled(0, ctxs[1], (3,)), filled(0, ctxs[0], (1,))])
    rs = np.random.RandomState(0)
    values = [[nd(rs.randn(2), c) for c in ctxs], nd(rs.randn(3), ctxs[1]), [nd([5.0], ctxs[0])]]
    kv.push(keys, values)
    outs = [[mx.nd.zeros(2, ctx=c) for c in ctxs], mx.nd.zeros(3, ctx=ctxs[0]), [mx.nd.zeros(1)]]
    kv.pull(keys, out=outs)
    expected = values[0][0].asnumpy() + values[0][1].asnumpy()
    for out in outs[0]:
        np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-6)
    np.testing.assert_array_equal(outs[1].asnumpy(), values[1].asnumpy())
    np.testing.assert_array_equal(outs[2][0].asnumpy(), [5.0])


def test_repeated_keys_in_one_push_are_summed(kv, ctx):
    kv.init(4, filled(0, ctx))
    kv.push([4, 4], [filled(1.5, ctx), [filled(2, ctx), filled(0.25, ctx)]])
    np.testing.assert_array_equal(pulled(kv, 4, ctx), np.full(SHAPE, 3.75))


def test_stored_value_does_not_alias_a_pushed_array(kv, ctx):
    kv.init(0, filled(0, ctx))
    grad = filled(2, ctx)
    kv.push(0, grad)
    grad[:] = 50
    np.testing.assert_array_equal(pulled(kv, 0, ctx), np.full(SHAPE, 2))


def test_pushpull_into_out_or_into_the_values(kv, ctxs):
    kv.init("g", filled(0, ctxs[0]))
    out = [mx.nd.zeros(SHAPE, ctx=c) for c in ctxs]
    kv.pushpull("g", [filled(1, ctxs[0]), filled(2, ctxs[1])], out=out)
    assert all((o.asnumpy() == 3).all() for o in out)
    grads = [filled(3, ctxs[0]), filled(4, ctxs[1])]
    kv.pushpull("g", grads)  # as Module does without update_on_kvstore
    assert [g.context for g in grads] == ctxs
    assert all((g.asnumpy() == 7).all() for g in grads)


def test_broadcast_initializes_and_pulls_once_per_key(kv, ctxs):
    outs = [mx.nd.zeros(SHAPE, ctx=c) for c in ctxs]
    kv.broadcast("w", filled(6, ctxs[1]), out=outs)
    assert all((o.asnumpy() == 6).all() for o in outs)
    with pytest.raises(KVStoreError, match="duplicate init of key 'w'"):
        kv.broadcast("w", filled(1, ctxs[0]), out=outs)


def test_device_store_sums_on_the_first_value_gpu_and_host_values_on_pinned(ctxs):
    seen = []
    store = mx.kv.create("device")
    store.init(1, filled(1, ctxs[1]))
    store._set_updater(lambda key, merged, stored: seen.append((merged.context, stored.context)))
    store.push(1, [filled(1, ctxs[0]), filled(1, ctxs[1])])
    store.push(1, [filled(1, ctxs[1]), filled(1, ctxs[0])])
    first = ctxs[0] if ctxs[0].device_type == "gpu" else mx.cpu_pinned(0)
    assert seen == [(first, first), (mx.cpu_pinned(0), mx.cpu_pinned(0))]


def test_local_store_sums_on_pinned_host_memory(ctxs):
    seen = []
    store = mx.kv.create("local")
    store.init(1, filled(1, ctxs[0]))
    store._set_updater(lambda key, merged, stored: seen.append((merged.context, stored.context)))
    store.push(1, [filled(1, ctxs[0]), filled(1, ctxs[1])])
    assert seen == [(mx.cpu_pinned(0), mx.cpu_pinned(0))]


# MXNet 1.9.1, every local store type, init from cpu(1), 1 or 2 pushing CPUs:
# kv._updater.states[0].context is cpu_pinned(0) and the saved record says device type 3
@pytest.mark.parametrize(
    "name", ["local", "device", "local_allreduce_cpu", "local_update_cpu", "local_allreduce_device"]
)
@pytest.mark.parametrize("devices", [1, 2])
def test_cpu_store_keeps_optimizer_states_on_cpu_pinned_as_mxnet(name, devices, tmp_path):
    store = mx.kv.create(name)
    store.set_optimizer(mx.optimizer.create("sgd", momentum=0.9, learning_rate=0.1))
    store.init(0, mx.nd.ones((2,), ctx=mx.cpu(1)))
    store.push(0, [mx.nd.ones((2,), ctx=mx.cpu(i)) for i in range(devices)])
    out = [mx.nd.zeros((2,), ctx=mx.cpu(i)) for i in range(devices)]
    store.pull(0, out=out)
    assert [o.context for o in out] == [mx.cpu(i) for i in range(devices)]
    np.testing.assert_allclose(out[0].asnumpy(), [1 - 0.1 * devices] * 2, rtol=1e-6)
    assert store._updater.states[0].context == mx.cpu_pinned(0)
    store.save_optimizer_states(str(tmp_path / "kv.states"))
    raw = (tmp_path / "kv.states").read_bytes()
    assert raw.count(struct.pack("<ii", 3, 0)) == 1 and struct.pack("<ii", 1, 0) not in raw


# -- updates on the store ----------------------------------------------------------------


@pytest.mark.parametrize("keys", [[0, 1], ["fc_weight", "fc_bias"]])
def test_sgd_on_the_store_applies_w_minus_lr_times_summed_grads(kv, ctxs, keys):
    rs = np.random.RandomState(1)
    # values with few significant bits keep every step exact in float32
    weights = {k: np.round(rs.randn(*SHAPE) * 8) / 8 for k in keys}
    kv.init(keys, [nd(weights[k], ctxs[0]) for k in keys])
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.5))
    for _ in range(3):
        grads = {k: [np.round(rs.randn(*SHAPE) * 4) / 4 for _ in ctxs] for k in keys}
        kv.push(keys, [[nd(g, c) for g, c in zip(grads[k], ctxs, strict=True)] for k in keys])
        for k in keys:
            weights[k] = weights[k] - 0.5 * (grads[k][0] + grads[k][1])
    for k in keys:
        for context in ctxs:
            np.testing.assert_array_equal(pulled(kv, k, context), weights[k].astype(np.float32))


def test_pushpull_with_optimizer_returns_updated_weights(kv, ctxs):
    kv.init("w", filled(1, ctxs[0]))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.25))
    weights = [mx.nd.zeros(SHAPE, ctx=c) for c in ctxs]
    kv.pushpull("w", [filled(1, ctxs[0]), filled(1, ctxs[1])], out=weights)
    assert all((w.asnumpy() == 0.5).all() for w in weights)


def test_custom_updater_gets_key_sum_and_stored_value(kv, ctxs):
    calls = []

    def update(key, merged, stored):
        calls.append((key, merged.asnumpy().copy(), stored.asnumpy().copy()))
        stored += merged * 2

    kv.init([7, 2], [filled(10, ctxs[0]), filled(20, ctxs[1])])
    kv._set_updater(update)
    kv.push([7, 2], [[filled(1, ctxs[0]), filled(2, ctxs[1])], filled(5, ctxs[0])])
    # MXNet processes keys in ascending order of its int keys
    assert [c[0] for c in calls] == [2, 7]
    assert all(isinstance(c[0], int) for c in calls)
    np.testing.assert_array_equal(calls[0][1], np.full(SHAPE, 5))
    np.testing.assert_array_equal(calls[0][2], np.full(SHAPE, 20))
    np.testing.assert_array_equal(calls[1][1], np.full(SHAPE, 3))
    np.testing.assert_array_equal(calls[1][2], np.full(SHAPE, 10))
    np.testing.assert_array_equal(pulled(kv, 7, ctxs[1]), np.full(SHAPE, 16))
    np.testing.assert_array_equal(pulled(kv, 2, ctxs[0]), np.full(SHAPE, 30))


def test_custom_updater_gets_str_keys_as_bytes_in_init_order(kv, ctx):
    calls = []
    kv.set_updater(lambda key, merged, stored: calls.append(key))
    kv.init(["zeta", "alpha"], [filled(0, ctx), filled(0, ctx)])
    kv.init("beta", filled(0, ctx))
    kv.push(["beta", "alpha", "zeta"], [filled(1, ctx)] * 3)
    # as MXNet passes them under Python 3: bytes, ordered by first init
    assert calls == [b"zeta", b"alpha", b"beta"]


# -- optimizer states --------------------------------------------------------------------


def _store_with_momentum(name, weights, ctx, lr=0.1):
    store = mx.kv.create(name)
    store.init(list(weights), [nd(w, ctx) for w in weights.values()])
    store.set_optimizer(mx.optimizer.create("sgd", learning_rate=lr, momentum=0.9, wd=0.01))
    return store


def _push_steps(store, keys, ctxs, seed, steps):
    rs = np.random.RandomState(seed)
    for _ in range(steps):
        store.push(keys, [[nd(rs.randn(*SHAPE), c) for c in ctxs] for _ in keys])


@pytest.mark.parametrize("dump_optimizer", [False, True])
def test_saved_states_resume_exactly(kv, ctxs, tmp_path, dump_optimizer):
    keys = ["w0", "w1"]
    rs = np.random.RandomState(2)
    start = {k: rs.randn(*SHAPE) for k in keys}
    uninterrupted = _store_with_momentum(kv.type, start, ctxs[0])
    _push_steps(uninterrupted, keys, ctxs, seed=3, steps=3)
    _push_steps(uninterrupted, keys, ctxs, seed=4, steps=3)

    first = _store_with_momentum(kv.type, start, ctxs[0])
    _push_steps(first, keys, ctxs, seed=3, steps=3)
    path = tmp_path / "kv.states"
    first.save_optimizer_states(str(path), dump_optimizer=dump_optimizer)
    # states alone are MXNet's pickle (MXNet reads them); with the optimizer, rebind's format
    expected_head = updater_states.MAGIC if dump_optimizer else b"\x80\x04\x95"
    assert path.read_bytes().startswith(expected_head)
    assert not [p for p in os.listdir(tmp_path) if p != "kv.states"]  # no temporary left

    middle = {k: pulled(first, k, ctxs[0]) for k in keys}
    # a different learning rate is replaced by the saved optimizer only when dumped
    resumed = _store_with_momentum(kv.type, middle, ctxs[1], lr=0.1 if not dump_optimizer else 5)
    resumed.load_optimizer_states(path)
    _push_steps(resumed, keys, ctxs, seed=4, steps=3)
    for k in keys:
        expected = pulled(uninterrupted, k, ctxs[0])
        np.testing.assert_array_equal(pulled(resumed, k, ctxs[0]), expected)

    without_states = _store_with_momentum(kv.type, middle, ctxs[0])
    _push_steps(without_states, keys, ctxs, seed=4, steps=3)
    assert not np.array_equal(pulled(without_states, "w0", ctxs[0]), pulled(resumed, "w0", ctxs[0]))


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo should-not-run",))


def test_loading_refuses_pickles_that_run_code(kv, tmp_path):
    kv.set_optimizer(mx.optimizer.create("sgd"))
    path = tmp_path / "evil.states"
    path.write_bytes(pickle.dumps({0: _Evil()}))
    with pytest.raises(FormatError, match="system"):
        kv.load_optimizer_states(str(path))


def test_states_need_an_optimizer(kv, tmp_path):
    with pytest.raises(KVStoreError, match="no optimizer is set; call set_optimizer"):
        kv.save_optimizer_states(str(tmp_path / "x"))
    kv._set_updater(lambda key, merged, stored: None)
    with pytest.raises(KVStoreError, match="has no get_states"):
        kv.load_optimizer_states(str(tmp_path / "x"))
    with pytest.raises(TypeError, match="needs an Optimizer.*mx.optimizer.create"):
        kv.set_optimizer("sgd")
    with pytest.raises(TypeError, match="must be callable"):
        kv._set_updater(3)


# -- errors ------------------------------------------------------------------------------


def test_pull_or_push_of_an_uninitialized_key_names_it(kv, ctx):
    with pytest.raises(KVStoreError, match="pull of key 'fc2_bias', which has not been init"):
        kv.pull("fc2_bias", out=filled(0, ctx))
    with pytest.raises(KVStoreError, match=r"push of key 5, .*call init\(5, value\) first"):
        kv.push(5, filled(0, ctx))


def test_double_init_is_refused(kv, ctx):
    kv.init(1, filled(0, ctx))
    with pytest.raises(KVStoreError, match="duplicate init of key 1"):
        kv.init(1, filled(1, ctx))
    with pytest.raises(KVStoreError, match="duplicate init of key 2"):
        kv.init([2, 2], [filled(1, ctx), filled(1, ctx)])
    with pytest.raises(KVStoreError, match="duplicate init of key 3"):
        kv.init(3, [filled(1, ctx), filled(1, ctx)])
    assert 2 not in kv._store and 3 not in kv._store


def test_push_of_a_wrong_shape_or_dtype_names_key_and_both(kv, ctx):
    kv.init("fc_weight", filled(0, ctx))
    with pytest.raises(ShapeError, match=r"key 'fc_weight' .* shape \(3, 2\).* shape \(2, 3\)"):
        kv.push("fc_weight", [filled(1, ctx), filled(1, ctx, (3, 2))])
    np.testing.assert_array_equal(pulled(kv, "fc_weight", ctx), np.zeros(SHAPE))
    with pytest.raises(DTypeMismatchError, match="dtype float64.* dtype float32"):
        kv.push("fc_weight", nd(np.ones(SHAPE), ctx, dtype="float64"))
    with pytest.raises(ShapeError, match=r"pull of key 'fc_weight' .* shape \(6,\)"):
        kv.pull("fc_weight", out=mx.nd.zeros(6, ctx=ctx))


def test_malformed_keys_and_values(kv, ctx):
    with pytest.raises(TypeError, match="keys mix int and str"):
        kv.init([1, "a"], [filled(0, ctx), filled(0, ctx)])
    kv.init(1, filled(0, ctx))
    with pytest.raises(KVStoreError, match="uses int keys"):
        kv.init("a", filled(0, ctx))
    with pytest.raises(ValueError, match="2 keys need a list of 2 values"):
        kv.push([1, 1], [filled(0, ctx)])
    with pytest.raises(TypeError, match="key 1 needs an NDArray"):
        kv.push(1, np.zeros(SHAPE))
    with pytest.raises(TypeError, match="a key is an int or a str"):
        kv.push(1.5, filled(0, ctx))
    with pytest.raises(TypeError, match="pull needs out="):
        kv.pull(1)


def test_compression_is_not_implemented(kv, ctx):
    with pytest.raises(NotImplementedError, match="gradient compression"):
        kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})


# -- third-party stores ------------------------------------------------------------------

THIRD_PARTY = """
from rebind import hookimpl
from rebind.context import cpu
from rebind.kvstore import KVStore


class MeanStore(KVStore):
    '''Averages the values pushed for a key instead of summing them.'''

    def _home_context(self, value):
        return cpu(0)

    def _reduce_context(self, values):
        return cpu(0)

    def _merge(self, arrays):
        merged = super()._merge(arrays)
        merged[:] = merged / len(arrays)
        return merged


@hookimpl
def rebind_add_kvstores(registry):
    registry.add("mean", lambda: MeanStore("mean"))
"""


def test_third_party_store_from_an_entry_point(tmp_path, monkeypatch, fresh_registry, ctxs):
    (tmp_path / "fake_kv_pkg.py").write_text(textwrap.dedent(THIRD_PARTY))
    dist = tmp_path / "fake_kv_pkg-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake_kv_pkg\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[rebind]\nfake_kv_pkg = fake_kv_pkg\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    monkeypatch.delitem(sys.modules, "fake_kv_pkg", raising=False)
    registry.reset()
    store = mx.kv.create("MEAN")
    assert store.type == "mean"
    assert registry.get_registry("kvstores").owner("mean") == "fake_kv_pkg"
    store.init(0, filled(0, ctxs[0]))
    store.set_optimizer(mx.optimizer.create("sgd", learning_rate=1.0))
    store.push(0, [filled(2, ctxs[0]), filled(4, ctxs[1])])
    np.testing.assert_array_equal(pulled(store, 0, ctxs[0]), np.full(SHAPE, -3))
    with pytest.raises(UnknownNameError, match="Did you mean 'mean'"):
        mx.kv.create("meen")


def test_mxnet_register_decorator(fresh_registry, ctx):
    @mx.kv.KVStoreBase.register
    class TracingStore(KVStore):
        def _home_context(self, value):
            return value.context

        def _reduce_context(self, values):
            return values[-1].context

    store = mx.kv.create("TracingStore")
    assert isinstance(store, TracingStore) and store.type == "tracingstore"
    with pytest.raises(TypeError, match="expected a KVStoreBase subclass"):
        mx.kv.register(dict)


def test_a_factory_must_make_a_kvstore(fresh_registry):
    @mx.hookimpl
    def rebind_add_kvstores(registry):
        registry.add("broken", dict)

    plugin = type(sys)("broken_kv_plugin")
    plugin.rebind_add_kvstores = rebind_add_kvstores
    registry.register_plugin(plugin)
    with pytest.raises(mx.PluginError, match="'broken' .*broken_kv_plugin.* made a dict"):
        mx.kv.create("broken")


def test_the_base_class_says_what_is_missing(ctx):
    store = KVStore()
    assert store.type == "kvstore"
    with pytest.raises(NotImplementedError, match="KVStore does not say where values are kept"):
        store.init(0, filled(0, ctx))


@pytest.mark.parametrize("name", ["local", "device"])
def test_cpu_store_saves_the_states_file_mxnet_saves(name, tmp_path):
    """tests/recording/record_kvstore_states.py: the same steps give MXNet's exact bytes."""
    store = mx.kv.create(name)
    store.set_optimizer(mx.optimizer.create("sgd", momentum=0.9, learning_rate=0.1))
    store.init(0, mx.nd.ones((2,), ctx=mx.cpu(1)))
    store.push(0, [mx.nd.ones((2,), ctx=mx.cpu(i)) for i in range(2)])
    store.save_optimizer_states(str(tmp_path / "kv.states"))
    golden = Path(__file__).parent.parent / "golden" / "states" / "kvstore" / f"{name}.states"
    assert (tmp_path / "kv.states").read_bytes() == golden.read_bytes()
