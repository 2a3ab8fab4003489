"""KVStoreBase: MXNet 1.9's store interface, ``teststore``, third-party stores, Module.fit."""

import warnings

import numpy as np
import pytest

import rebind as mx
from rebind import registry
from rebind.kvstore import KVStore, KVStoreBase

SHAPE = (2, 3)


def filled(value, ctx, shape=SHAPE):
    return mx.nd.array(np.full(shape, value, dtype="float32"), ctx=ctx)


def test_every_store_is_a_kvstorebase():
    for name in ("local", "device", "teststore"):
        assert isinstance(mx.kv.create(name), KVStoreBase)
    assert mx.kv.KVStoreBase.OPTIMIZER == "optimizer"


def test_teststore_describes_itself():
    kv = mx.kv.create("TestStore")
    assert (kv.type, kv.rank, kv.num_workers) == ("teststore", 0, 1)
    # MXNet calls it on the class: a static method
    assert type(kv).is_capable("optimizer") is False
    assert kv.is_capable("OPTIMIZER") is False
    with pytest.raises(ValueError, match="unknown capability 'sparse'"):
        kv.is_capable("sparse")


def test_teststore_cannot_run_an_optimizer():
    kv = mx.kv.create("teststore")
    with pytest.raises(NotImplementedError, match="TestStore does not implement set_optimizer"):
        kv.set_optimizer(mx.optimizer.create("sgd"))
    with pytest.raises(NotImplementedError, match="save_optimizer_states"):
        kv.save_optimizer_states("states")
    with pytest.raises(NotImplementedError, match="load_optimizer_states"):
        kv.load_optimizer_states("states")


def test_teststore_broadcast_copies_into_every_output(ctx):
    kv = mx.kv.create("teststore")
    out = mx.nd.zeros(SHAPE, ctx=ctx)
    kv.broadcast("w", filled(3, ctx), out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(SHAPE, 3))
    outs = [mx.nd.zeros(SHAPE, ctx=ctx), mx.nd.zeros(SHAPE, ctx=mx.cpu(1))]
    kv.broadcast(7, filled(5, ctx), out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), np.full(SHAPE, 5))


def test_teststore_pushpull_sums_over_devices(ctx):
    kv = mx.kv.create("teststore")
    values = [filled(1, ctx), filled(2, mx.cpu(1)), filled(4, mx.cpu(2))]
    outs = [mx.nd.zeros(SHAPE, ctx=ctx), mx.nd.zeros(SHAPE, ctx=mx.cpu(3))]
    kv.pushpull(3, values, out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), np.full(SHAPE, 7))
    for v, expected in zip(values, (1, 2, 4), strict=True):  # untouched with out given
        np.testing.assert_array_equal(v.asnumpy(), np.full(SHAPE, expected))
    kv.pushpull(3, values)  # in place
    for v in values:
        np.testing.assert_array_equal(v.asnumpy(), np.full(SHAPE, 7))
    single, out = filled(9, ctx), mx.nd.zeros(SHAPE, ctx=ctx)
    kv.pushpull("a", single, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(SHAPE, 9))


def test_the_interface_says_what_a_store_lacks():
    class Bare(KVStoreBase):
        pass

    store = Bare()
    for call in (
        lambda: store.broadcast(0, None, None),
        lambda: store.pushpull(0, None),
        lambda: store.is_capable("optimizer"),
        lambda: store.type,
        lambda: store.rank,
        lambda: store.num_workers,
    ):
        with pytest.raises(NotImplementedError, match="Bare does not implement"):
            call()


def test_a_registered_third_party_store_is_created_through_the_registry(fresh_registry, ctx):
    @mx.kv.KVStoreBase.register
    class HalfStore(KVStoreBase):
        """Averages instead of summing: not a KVStore, only the interface."""

        def pushpull(self, key, value, out=None, priority=0):
            total = sum(v.asnumpy() for v in value) / 2
            for target in value if out is None else out:
                target[:] = total

        type = property(lambda self: "halfstore")

    kv = mx.kv.create("HALFSTORE")
    assert isinstance(kv, HalfStore) and not isinstance(kv, KVStore)
    assert registry.get_registry("kvstores").owner("halfstore") == __name__
    values = [filled(2, ctx), filled(4, ctx)]
    kv.pushpull(0, values)
    np.testing.assert_array_equal(values[1].asnumpy(), np.full(SHAPE, 3))
    with pytest.raises(TypeError, match="expected a KVStoreBase subclass, got <class 'dict'>"):
        mx.kv.KVStoreBase.register(dict)


def test_registering_a_name_again_replaces_it_with_a_warning(fresh_registry):
    def make():
        class Twice(KVStoreBase):
            pass

        return Twice

    first, second = make(), make()
    second.__module__ = "another_package"
    mx.kv.create("local")  # the family is built: registrations land in it at once
    mx.kv.KVStoreBase.register(first)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mx.kv.KVStoreBase.register(second)
    assert any("'twice' from another_package replaces" in str(w.message) for w in caught)
    assert type(mx.kv.create("twice")) is second


def fitted_params(kvstore, contexts):
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
    out = mx.sym.SoftmaxOutput(fc, name="softmax")
    rng = np.random.RandomState(0)
    x = rng.rand(16, 3).astype("float32")
    y = (x[:, 0] > 0.5).astype("float32")
    mod = mx.mod.Module(out, context=contexts)
    mod.fit(
        mx.io.NDArrayIter(x, y, batch_size=8),
        num_epoch=2,
        kvstore=kvstore,
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.5},
        initializer=mx.init.Constant(0.1),
    )
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


def test_module_fit_sums_gradients_through_a_kvstorebase_object():
    # MXNet's Module calls init on any store and fails on teststore (no init);
    # rebind broadcasts the parameters instead, so the same fit works
    contexts = [mx.cpu(0), mx.cpu(1)]
    expected = fitted_params("local", contexts)
    got = fitted_params(mx.kv.create("teststore"), contexts)
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6)
    assert not np.allclose(expected["fc_weight"], 0.1)  # training did move the weights
