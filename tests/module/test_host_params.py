"""Several cpu contexts updated on the kvstore read the store's weights (``module/host_params.py``).

The contexts' parameter arrays hold the store's value itself: no copy after
each update, the same values as MXNet's copies bit for bit (the copies are
what ``REBIND_SHARE_HOST_PARAMS=0`` keeps), and each context owns its copy
again wherever the update runs per context.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.kvstore import host_copies

from .core_nets import separable

TWO = [mx.cpu(0), mx.cpu(1)]
BATCH, DIM, HIDDEN, CLASSES = 8, 5, 7, 3


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("REBIND_PROGRESS", "0")


def _net():
    h = mx.sym.FullyConnected(mx.sym.Variable("data"), name="fc1", num_hidden=HIDDEN)
    h = mx.sym.BatchNorm(h, name="bn", fix_gamma=False)
    h = mx.sym.Activation(h, name="relu1", act_type="relu")
    h = mx.sym.FullyConnected(h, name="fc2", num_hidden=CLASSES)
    return mx.sym.SoftmaxOutput(h, name="softmax")


def _params():
    rs = np.random.RandomState(3)
    shapes = {
        "fc1_weight": (HIDDEN, DIM),
        "fc1_bias": (HIDDEN,),
        "bn_gamma": (HIDDEN,),
        "bn_beta": (HIDDEN,),
        "fc2_weight": (CLASSES, HIDDEN),
        "fc2_bias": (CLASSES,),
    }
    return {name: mx.nd.array(0.5 * rs.randn(*shape)) for name, shape in shapes.items()}


def _iter():
    x, y = separable(4 * BATCH, dim=DIM, classes=CLASSES, seed=5)
    return mx.io.NDArrayIter(x, y, batch_size=BATCH)


def _batches():
    return list(_iter())


def _module(context=TWO, optimizer="sgd", **optimizer_kwargs):
    module = mx.mod.Module(_net(), context=context)
    module.bind(_iter().provide_data, _iter().provide_label)
    module.init_params(arg_params=_params(), aux_params=None, allow_missing=True)
    params = {"learning_rate": 0.1}
    params.update({"momentum": 0.9, "wd": 1e-3} if optimizer == "sgd" else {})
    module.init_optimizer(kvstore="local", optimizer=optimizer, optimizer_params=params)
    return module


def _train(module, steps=6):
    batches = _batches()
    for step in range(steps):
        module.forward_backward(batches[step % len(batches)])
        module.update()
    arg_params, aux_params = module.get_params()
    return {name: value.asnumpy() for name, value in {**arg_params, **aux_params}.items()}


def _one_memory(module):
    group = module._exec_group
    return [block[0]._data is block[1]._data for block in group.param_arrays]


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_contexts_and_store_hold_one_array_with_the_copies_values(monkeypatch, optimizer):
    shared = _module(optimizer=optimizer)
    store = shared._kvstore
    group = shared._exec_group
    assert all(_one_memory(shared))
    for name, block in zip(group.param_names, group.param_arrays, strict=True):
        assert block[0]._data is store._store[name]._data
    monkeypatch.setenv("REBIND_SHARE_HOST_PARAMS", "0")
    copies = _module(optimizer=optimizer)
    assert not any(_one_memory(copies))
    got, want = _train(shared), _train(copies)
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    # BatchNorm's moving statistics stay per context (each its half of the batch)
    moving = shared._exec_group.aux_arrays[0]
    assert moving[0]._data is not moving[1]._data
    assert not np.array_equal(moving[0].asnumpy(), moving[1].asnumpy())


def test_fit_on_two_contexts_trains_as_the_copies_do(monkeypatch):
    def fit():
        mx.random.seed(2)
        module = mx.mod.Module(_net(), context=TWO)
        x, y = separable(4 * BATCH, dim=DIM, classes=CLASSES, seed=5)
        module.fit(
            mx.io.NDArrayIter(x, y, batch_size=BATCH),
            arg_params=_params(),
            allow_missing=True,
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
            num_epoch=3,
        )
        return module, {k: v.asnumpy() for k, v in module.get_params()[0].items()}

    shared, got = fit()
    assert all(_one_memory(shared))
    monkeypatch.setenv("REBIND_SHARE_HOST_PARAMS", "0")
    copies, want = fit()
    assert not any(_one_memory(copies))
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_update_on_each_context_keeps_a_copy_per_context(monkeypatch):
    """MXNET_UPDATE_ON_KVSTORE=0: each context's updater changes only its own weights."""
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    module = _module()
    assert not any(_one_memory(module))
    got = _train(module)
    monkeypatch.setenv("REBIND_SHARE_HOST_PARAMS", "0")
    want = _train(_module())
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_a_new_optimizer_updating_per_context_gives_each_context_its_copy_back(monkeypatch):
    module = _module()
    _train(module, steps=2)
    assert all(_one_memory(module))
    before = [block[0].asnumpy() for block in module._exec_group.param_arrays]
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    module.init_optimizer(
        kvstore="local", optimizer="sgd", optimizer_params={"learning_rate": 0.1}, force_init=True
    )
    group = module._exec_group
    assert not any(_one_memory(module))
    for block, value in zip(group.param_arrays, before, strict=True):
        for array in block:  # each copy starts from the shared value
            np.testing.assert_array_equal(array.asnumpy(), value)
    # an update per context moves each copy once (twice the step had they stayed one array)
    batch = _batches()[0]
    module.forward_backward(batch)
    module.update()
    # the store summed the gradients and pulled the sum into every context's gradient
    grads = [block[0].asnumpy() for block in group.grad_arrays]
    for block, grad in zip(group.grad_arrays, grads, strict=True):
        np.testing.assert_array_equal(block[1].asnumpy(), grad)
    rescale = np.float32(0.1) * np.float32(1.0 / BATCH)
    for block, value, grad in zip(group.param_arrays, before, grads, strict=True):
        for array in block:
            np.testing.assert_allclose(
                array.asnumpy(), value - rescale * grad, rtol=1e-5, atol=1e-6
            )


def test_parameters_set_after_init_optimizer_are_the_ones_updated():
    """rebind: set_params after init_optimizer reaches the store (MXNet's next pull undid it)."""
    module = _module()
    _train(module, steps=2)
    fresh = _params()
    module.set_params(fresh, None, allow_missing=True)
    store = module._kvstore
    for name, value in fresh.items():
        np.testing.assert_array_equal(store._store[name].asnumpy(), value.asnumpy())


def test_a_pull_into_the_stored_array_itself_copies_nothing_and_counts_a_write():
    store = mx.kv.create("local")
    store.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.5))
    store.init("w", mx.nd.ones((2, 3)))
    targets = [mx.nd.zeros((2, 3), ctx=mx.cpu(0)), mx.nd.zeros((2, 3), ctx=mx.cpu(1))]
    assert store._share_stored("w", targets)
    versions = [target._version for target in targets]
    store.push("w", [mx.nd.ones((2, 3)), mx.nd.ones((2, 3), ctx=mx.cpu(1))])
    for target in targets:  # the update changed what the targets hold: 1 - 0.5 * 2
        np.testing.assert_array_equal(target.asnumpy(), np.zeros((2, 3), np.float32))
    store.pull("w", out=targets)
    assert [target._version for target in targets] == [v + 1 for v in versions]
    assert all(target._data is store._store["w"]._data for target in targets)
    separate = mx.nd.ones((2, 3))
    host_copies.copy_into(store._store["w"], separate)  # another array: a copy
    np.testing.assert_array_equal(separate.asnumpy(), np.zeros((2, 3), np.float32))


def test_share_stored_refuses_what_it_cannot_share():
    store = mx.kv.create("local")
    store.init("w", mx.nd.ones((2, 3)))
    target = mx.nd.zeros((2, 3))
    assert not store._share_stored("w", [target])  # no updater: push replaces the value
    store.set_optimizer(mx.optimizer.create("sgd"))
    assert not store._share_stored("w", [mx.nd.zeros((3, 2))])  # another shape
    assert not store._share_stored("w", [mx.nd.zeros((2, 3), dtype="float64")])
    assert not store._share_stored("missing", [target])
    assert target._data is not store._store["w"]._data


def test_one_context_and_a_bucketing_module_share_as_their_groups_allow():
    one = _module(context=mx.cpu())
    assert one._kvstore is None  # one context, no store: nothing to share
    sym_gen_calls = []

    def sym_gen(key):
        sym_gen_calls.append(key)
        return _net(), ("data",), ("softmax_label",)

    bucketing = mx.mod.BucketingModule(sym_gen, default_bucket_key=DIM, context=TWO)
    batch = _batches()[0]
    bucketing.bind(_iter().provide_data, _iter().provide_label)
    bucketing.init_params(arg_params=_params(), allow_missing=True)
    bucketing.init_optimizer(kvstore="local", optimizer_params={"learning_rate": 0.1})
    assert all(_one_memory(bucketing._curr_module))
    bucketing.forward_backward(batch)
    bucketing.update()
    assert all(_one_memory(bucketing._curr_module))
