"""SVRGModule: binding, full gradients, the SVRG step, against NumPy and MXNet 1.9.1's numbers."""

import json
from pathlib import Path

import numpy as np
import pytest

import rebind as mx
from rebind.contrib.svrg_optimization import SVRGModule
from rebind.contrib.svrg_optimization.svrg_optimizer import _SVRGOptimizer

from ...module.log_capture import logs_warning
from .linreg import (
    LABEL,
    batch_grads,
    dataset,
    full_grads,
    iterator,
    network,
    padded_batches,
    svrg_module,
    weights,
)

RECORDED = json.loads((Path(__file__).parent / "data" / "svrg_mxnet.json").read_text())


# -- construction and binding -----------------------------------------------------------------
@pytest.mark.parametrize("bad", [None, 2.0, "2", [2]])
def test_update_freq_that_is_not_an_int_is_a_type_error(bad):
    with pytest.raises(TypeError, match="update_freq must be an integer"):
        SVRGModule(network(), data_names=["data"], label_names=[LABEL], update_freq=bad)


@pytest.mark.parametrize("bad", [0, -3])
def test_update_freq_not_positive_is_a_value_error(bad):
    with pytest.raises(ValueError, match="positive integer"):
        SVRGModule(network(), data_names=["data"], label_names=[LABEL], update_freq=bad)


def test_svrg_module_is_a_module_with_a_separate_snapshot_module():
    mod = SVRGModule(network(), data_names=["data"], label_names=[LABEL], update_freq=3)
    assert isinstance(mod, mx.mod.Module)
    assert type(mod._mod_aux) is mx.mod.Module
    assert mod.update_freq == 3
    assert mod._ctx_len == 1
    assert mod._mod_aux._context == mod._context


def test_bind_for_training_binds_both_modules_to_the_same_shapes():
    mod = SVRGModule(network(), data_names=["data"], label_names=[LABEL], update_freq=2)
    mod.bind([("data", (5, 2))], [(LABEL, (5,))])
    assert mod.binded and mod._mod_aux.binded
    assert mod._mod_aux.data_shapes[0].shape == (5, 2)
    assert mod._mod_aux._exec_group is not mod._exec_group


def test_bind_for_inference_leaves_the_snapshot_unbound():
    mod = SVRGModule(network(), data_names=["data"], label_names=[LABEL], update_freq=2)
    mod.bind([("data", (5, 2))], [(LABEL, (5,))], for_training=False)
    assert mod.binded and not mod._mod_aux.binded


def test_bind_with_malformed_data_shapes_is_a_type_error():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=1)
    mod = SVRGModule(net, data_names=["data"], label_names=None, update_freq=2)
    with pytest.raises(TypeError):
        mod.bind(data_shapes=["data", mx.nd.zeros((2, 1))])
    mod.bind(data_shapes=[("data", (2, 1))])
    assert mod.binded and mod._mod_aux.binded


def test_reshape_reshapes_both_modules():
    mod, _ = svrg_module(*dataset(8), batch_size=4)
    mod.reshape([("data", (3, 2))], [(LABEL, (3,))])
    assert mod.data_shapes[0].shape == (3, 2)
    assert mod._mod_aux.data_shapes[0].shape == (3, 2)


# -- the optimizer ------------------------------------------------------------------------------
def test_init_optimizer_installs_the_svrg_wrapper_numbering_full_keys_after_parameters():
    mod, _ = svrg_module(*dataset(8), batch_size=4)
    case = RECORDED["one_context_padded"]
    assert type(mod._optimizer) is _SVRGOptimizer
    assert type(mod._optimizer.default_opt).__name__ == case["default_type"]
    assert {str(k): v for k, v in mod._optimizer.idx2name.items()} == case["idx2name"]
    assert mod._optimizer.rescale_grad == case["rescale_grad"] == 0.25
    assert mod._optimizer.default_opt.rescale_grad == 0.25
    assert mod._optimizer.default_opt.lr == 0.01


def test_init_optimizer_with_a_kvstore_adds_full_keys_and_keeps_the_weights():
    store = mx.kv.create("local")
    mod, _ = svrg_module(*dataset(8), batch_size=4, kvstore=store, learning_rate=0.1)
    assert mod._kvstore is store
    out = mx.nd.ones((1, 2))
    store.pull("fc1_weight_full", out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.zeros((1, 2)))
    # MXNet pulled those zeros into the weights; rebind leaves them as initialised
    np.testing.assert_array_equal(mod._exec_group.param_arrays[0][0].asnumpy(), [[1, 1]])


def test_init_optimizer_with_an_optimizer_instance_uses_it_for_the_parameters():
    mod, it = svrg_module(*dataset(8), batch_size=4)
    sgd = mx.optimizer.create("sgd", learning_rate=0.5, rescale_grad=0.25)
    mod.init_optimizer(optimizer=sgd, force_init=True)
    assert mod._optimizer.default_opt is sgd
    assert mod._optimizer.idx2name[2] == "fc1_weight_full"


def test_second_init_optimizer_without_force_warns_and_keeps_everything():
    mod, _ = svrg_module(*dataset(8), batch_size=4)
    optimizer, full = mod._optimizer, mod._param_dict
    with logs_warning(r"^optimizer already initialized, ignoring"):  # MXNet logs it
        mod.init_optimizer()
    assert mod._optimizer is optimizer and mod._param_dict is full


# -- full gradients ---------------------------------------------------------------------------
@pytest.mark.parametrize("n, batch_size", [(12, 4), (10, 4), (7, 3)])
def test_update_full_grads_is_numpy_full_gradient_at_the_snapshot(n, batch_size, ctx):
    x, y = dataset(n, seed=n)
    mod, it = svrg_module(x, y, batch_size, context=ctx)
    w, b = weights(mod)
    mod.update_full_grads(it)
    expected_w, expected_b = full_grads(w, b, x, y, batch_size)
    np.testing.assert_allclose(mod._param_dict[0]["fc1_weight"].asnumpy(), expected_w, rtol=1e-6)
    np.testing.assert_allclose(mod._param_dict[0]["fc1_bias"].asnumpy(), expected_b, rtol=1e-6)
    snapshot, _ = mod._mod_aux.get_params()
    np.testing.assert_array_equal(snapshot["fc1_weight"].asnumpy(), w)


def test_update_full_grads_is_the_mean_of_the_modules_own_batch_gradients():
    # MXNet's test_update_full_grad: two batches, gradients summed and halved
    x, y = dataset(10, seed=3)
    mod, it = svrg_module(x, y, 5)
    arg, aux = mod.get_params()
    mod._mod_aux.set_params(arg, aux)
    total = np.zeros((1, 2), np.float32)
    for batch in it:
        mod.forward(batch)
        mod.backward()
        total += mod._exec_group.grad_arrays[0][0].asnumpy()
    mod.update_full_grads(it)
    np.testing.assert_array_equal(mod._param_dict[0]["fc1_weight"].asnumpy(), total / 2)


def test_each_refresh_starts_from_zero():
    x, y = dataset(12, seed=1)
    mod, it = svrg_module(x, y, 4)
    mod.update_full_grads(it)
    first = mod._param_dict[0]["fc1_weight"].asnumpy().copy()
    mod.update_full_grads(it)  # same weights: the same full gradient (MXNet added the first)
    np.testing.assert_array_equal(mod._param_dict[0]["fc1_weight"].asnumpy(), first)


@pytest.mark.parametrize("case", ["one_context_padded", "one_context_momentum", "two_contexts"])
def test_full_gradients_match_mxnet(case):
    rec = RECORDED[case]
    x, y = np.array(rec["x"], np.float32), np.array(rec["y"], np.float32)
    contexts = [mx.cpu(i) for i in range(rec["contexts"])]
    mod, it = svrg_module(x, y, rec["batch_size"], context=contexts, **rec["optimizer_params"])
    mod.update_full_grads(it)
    for ctx, recorded in enumerate(rec["full_grads"]):
        for name, value in recorded.items():
            np.testing.assert_allclose(mod._param_dict[ctx][name].asnumpy(), value, rtol=1e-6)


# -- the SVRG step ----------------------------------------------------------------------------
def test_update_steps_along_the_variance_reduced_gradient(ctx):
    x, y = dataset(12, seed=2)
    lr, batch_size = 0.01, 4
    mod, it = svrg_module(x, y, batch_size, context=ctx, learning_rate=lr)
    mod.update_full_grads(it)
    w_snap, b_snap = weights(mod)
    mu_w, mu_b = full_grads(w_snap, b_snap, x, y, batch_size)
    w, b = w_snap.copy(), b_snap.copy()
    it.reset()
    for (xb, yb, _), batch in zip(padded_batches(x, y, batch_size), it, strict=True):
        mod.forward_backward(batch)
        mod.update()
        gw, gb = batch_grads(w, b, xb, yb)
        sw, sb = batch_grads(w_snap, b_snap, xb, yb)
        w = w - lr / batch_size * (gw - sw + mu_w)
        b = b - lr / batch_size * (gb - sb + mu_b)
        got_w, got_b = weights(mod)
        np.testing.assert_allclose(got_w, w, rtol=1e-5)
        np.testing.assert_allclose(got_b, b, rtol=1e-5, atol=1e-7)


def test_the_first_step_after_a_refresh_is_the_full_gradient_step():
    # at the snapshot g(w) = g(w~), so the step is -lr * rescale * mu exactly
    x, y = dataset(8, seed=4)
    mod, it = svrg_module(x, y, 4, learning_rate=0.02)
    mod.update_full_grads(it)
    mu = mod._param_dict[0]["fc1_weight"].asnumpy().copy()
    it.reset()
    mod.forward_backward(next(iter(it)))
    mod.update()
    np.testing.assert_allclose(weights(mod)[0], 1 - 0.02 / 4 * mu, rtol=1e-6)


@pytest.mark.parametrize("case", ["one_context_padded", "one_context_momentum", "two_contexts"])
def test_an_epoch_of_updates_matches_mxnet(case):
    rec = RECORDED[case]
    x, y = np.array(rec["x"], np.float32), np.array(rec["y"], np.float32)
    contexts = [mx.cpu(i) for i in range(rec["contexts"])]
    mod, it = svrg_module(x, y, rec["batch_size"], context=contexts, **rec["optimizer_params"])
    mod.update_full_grads(it)
    it.reset()
    for batch, recorded in zip(it, rec["weights_after_each_update"], strict=True):
        mod.forward_backward(batch)
        mod.update()
        arg, _ = mod.get_params()
        for name, value in recorded.items():
            np.testing.assert_allclose(arg[name].asnumpy(), value, rtol=2e-6, atol=1e-7)


def test_auto_named_fully_connected_weights_are_trained_not_assigned():
    # MXNet routed every name containing "full" (fullyconnected0_weight) to assignment
    x, y = dataset(8, seed=5)
    mod, it = svrg_module(x, y, 4, name=None, learning_rate=0.01)
    name = mod._exec_group.param_names[0]
    assert name.startswith("fullyconnected")
    mod.update_full_grads(it)
    mu = mod._param_dict[0][name].asnumpy().copy()
    it.reset()
    mod.forward_backward(next(iter(it)))
    mod.update()
    np.testing.assert_allclose(mod.get_params()[0][name].asnumpy(), 1 - 0.01 / 4 * mu, rtol=1e-6)


def test_fixed_parameters_have_no_full_gradient_and_stay_fixed():
    x, y = dataset(8, seed=6)
    it = iterator(x, y, 4)
    mod = SVRGModule(
        network(),
        data_names=["data"],
        label_names=[LABEL],
        fixed_param_names=["fc1_bias"],
        update_freq=1,
    )
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.One())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.01})
    mod.update_full_grads(it)
    np.testing.assert_array_equal(mod._param_dict[0]["fc1_bias"].asnumpy(), [0])
    it.reset()
    mod.forward_backward(next(iter(it)))
    mod.update()
    np.testing.assert_array_equal(mod.get_params()[0]["fc1_bias"].asnumpy(), [0])
    assert not np.array_equal(mod.get_params()[0]["fc1_weight"].asnumpy(), [[1, 1]])


# -- kvstore ----------------------------------------------------------------------------------
def test_accumulate_kvstore_sums_the_values_and_gives_each_context_the_mean():
    # MXNet's test_accumulate_kvstore: four values pushed to one context's full key
    store = mx.kv.create("local")
    mod, _ = svrg_module(*dataset(8), batch_size=4, kvstore=store)
    values = [mx.nd.ones((1, 2)) for _ in range(4)]
    mod._accumulate_kvstore("fc1_weight", values)
    assert len(mod._param_dict) == mod._ctx_len == 1
    np.testing.assert_array_equal(values[0].asnumpy(), [[4, 4]])
    np.testing.assert_array_equal(mod._param_dict[0]["fc1_weight"].asnumpy(), [[4, 4]])


def test_two_contexts_share_the_full_gradient_of_the_whole_batch():
    x, y = dataset(16, seed=7)
    mod, it = svrg_module(x, y, 4, context=[mx.cpu(0), mx.cpu(1)])
    assert mod._kvstore is not None
    w, b = weights(mod)
    mod.update_full_grads(it)
    expected_w, _ = full_grads(w, b, x, y, 4)
    for ctx in range(2):
        # each context holds half the mean, so the store's sum over contexts is the mean
        got = mod._param_dict[ctx]["fc1_weight"].asnumpy()
        np.testing.assert_allclose(got, expected_w / 2, rtol=1e-6)
