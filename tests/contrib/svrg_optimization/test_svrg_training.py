"""SVRGModule: fit, checkpoints, and the errors of calls made out of order."""

import logging
import warnings

import numpy as np
import pytest

import rebind as mx
from rebind.contrib.svrg_optimization import SVRGModule
from rebind.errors import LifecycleError

from .linreg import LABEL, dataset, iterator, network, svrg_module


def _quiet_fit(mod, it, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod.fit(it, **kwargs)


def _final_mse(mod, it):
    return dict(mod.score(it, "mse"))["mse"]


# -- fit ---------------------------------------------------------------------------------------
def test_fit_converges_on_a_linear_regression():
    # MXNet's test_fit: 1000 examples, batches of 32, lr 0.025, 100 epochs -> mse < 1e-5
    x, y = dataset(1000, seed=0)
    it = iterator(x, y, 32, shuffle=True)
    mod = SVRGModule(network(), data_names=["data"], label_names=[LABEL], update_freq=2)
    metric = mx.metric.create("mse")
    _quiet_fit(
        mod,
        it,
        eval_metric=metric,
        optimizer="sgd",
        optimizer_params=(("learning_rate", 0.025),),
        num_epoch=100,
        initializer=mx.init.Uniform(0.01),
    )
    assert metric.get()[1] < 1e-5


def _noisy_regression(n=200, seed=0):
    """Features in [-1, 1), ``y = x . (1, 2) + 0.5`` plus noise, and NumPy's least squares."""
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    y = (x.dot([1.0, 2.0]) + 0.5 + rng.normal(0, 0.5, n)).astype(np.float32)
    solution = np.linalg.lstsq(np.c_[x, np.ones(n)], y, rcond=None)[0]
    return x, y, solution


def test_fit_reaches_the_least_squares_solution_where_sgd_stalls():
    # with noisy labels and a constant rate SGD hovers at a noise floor; SVRG's
    # corrected gradient vanishes at the optimum, so it converges to it
    x, y, solution = _noisy_regression()
    errors = {}
    for kind in ("svrg", "sgd"):
        mx.random.seed(7)
        it = iterator(x, y, 10, shuffle=True)
        if kind == "svrg":
            mod = SVRGModule(network(), data_names=["data"], label_names=[LABEL], update_freq=2)
        else:
            mod = mx.mod.Module(network(), data_names=["data"], label_names=[LABEL])
        _quiet_fit(
            mod,
            it,
            eval_metric="mse",
            optimizer_params={"learning_rate": 0.1},
            num_epoch=20,
            initializer=mx.init.Zero(),
        )
        arg, _ = mod.get_params()
        found = np.r_[arg["fc1_weight"].asnumpy().ravel(), arg["fc1_bias"].asnumpy()]
        errors[kind] = np.abs(found - solution).max()
    assert errors["svrg"] < 1e-4
    assert errors["svrg"] < errors["sgd"] / 100


def test_fit_refreshes_the_full_gradient_every_update_freq_epochs(monkeypatch):
    x, y = dataset(40, seed=2)
    mod = SVRGModule(network(), data_names=["data"], label_names=[LABEL], update_freq=3)
    finished, refreshed = [], []
    original = SVRGModule.update_full_grads

    def spy(self, train_data):
        refreshed.append(len(finished))  # the epoch about to run
        original(self, train_data)

    monkeypatch.setattr(SVRGModule, "update_full_grads", spy)
    _quiet_fit(
        mod,
        iterator(x, y, 10),
        eval_metric="mse",
        num_epoch=7,
        epoch_end_callback=lambda epoch, *_: finished.append(epoch),
    )
    assert refreshed == [0, 3, 6]
    assert finished == list(range(7))


def test_fit_from_an_epoch_between_refreshes_still_starts_with_a_full_gradient():
    x, y = dataset(40, seed=3)
    mod = SVRGModule(network(), data_names=["data"], label_names=[LABEL], update_freq=4)
    _quiet_fit(mod, iterator(x, y, 10), eval_metric="mse", begin_epoch=2, num_epoch=3)
    assert mod._full_grads_ready and mod._mod_aux.params_initialized


def test_fit_runs_callbacks_and_validation_like_module_fit(caplog):
    x, y = dataset(40, seed=4)
    mod = SVRGModule(network(), data_names=["data"], label_names=[LABEL], update_freq=1)
    ends, scored = [], []
    with caplog.at_level(logging.INFO):
        _quiet_fit(
            mod,
            iterator(x, y, 10),
            eval_data=iterator(x, y, 20),
            eval_metric="mse",
            num_epoch=2,
            epoch_end_callback=lambda epoch, sym, arg, aux: ends.append((epoch, sorted(arg))),
            eval_end_callback=lambda param: scored.append(param.epoch),
        )
    assert ends == [(0, ["fc1_bias", "fc1_weight"]), (1, ["fc1_bias", "fc1_weight"])]
    assert scored == [0, 1]
    assert "Epoch[1] Validation-mse" in caplog.text


def test_fit_without_num_epoch_or_with_resume_from_is_refused():
    x, y = dataset(20)
    mod = SVRGModule(network(), data_names=["data"], label_names=[LABEL], update_freq=1)
    with pytest.raises(ValueError, match="num_epoch"):
        mod.fit(iterator(x, y, 10))
    with pytest.raises(NotImplementedError, match="snapshot"):
        mod.fit(iterator(x, y, 10), num_epoch=1, resume_from="somewhere")


# -- checkpoints -------------------------------------------------------------------------------
def test_checkpoint_round_trip(tmp_path):
    x, y = dataset(12, seed=5)
    mod, it = svrg_module(x, y, 4, learning_rate=0.05, momentum=0.9)
    mod.update_full_grads(it)
    it.reset()
    for batch in it:
        mod.forward_backward(batch)
        mod.update()
    prefix = str(tmp_path / "svrg")
    mod.save_checkpoint(prefix, 3, save_optimizer_states=True)
    saved, _ = mod.get_params()

    plain = SVRGModule.load(
        prefix, 3, load_optimizer_states=True, data_names=["data"], label_names=[LABEL]
    )
    assert type(plain) is mx.mod.Module  # as in MXNet: load is Module.load
    again = SVRGModule.load(
        prefix,
        3,
        load_optimizer_states=True,
        data_names=["data"],
        label_names=[LABEL],
        update_freq=2,
    )
    assert type(again) is SVRGModule and again.update_freq == 2
    again.bind(it.provide_data, it.provide_label)
    again.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.05, "momentum": 0.9})
    loaded, _ = again.get_params()
    for name, value in saved.items():
        np.testing.assert_array_equal(loaded[name].asnumpy(), value.asnumpy())
    assert again._symbol.tojson() == mod._symbol.tojson()
    # the momentum states came back: one more step matches the original module's
    for module in (mod, again):
        module.update_full_grads(it)
        it.reset()
        module.forward_backward(next(iter(it)))
        module.update()
    np.testing.assert_array_equal(
        again.get_params()[0]["fc1_weight"].asnumpy(), mod.get_params()[0]["fc1_weight"].asnumpy()
    )


def test_dumping_the_wrapped_optimizer_is_not_implemented(tmp_path):
    mod, _ = svrg_module(*dataset(8), batch_size=4, learning_rate=0.1, momentum=0.9)
    with pytest.raises(NotImplementedError, match="dump_optimizer"):
        mod.save_optimizer_states(str(tmp_path / "s.states"), dump_optimizer=True)


# -- calls out of order --------------------------------------------------------------------------
def test_training_forward_before_a_snapshot_names_update_full_grads():
    x, y = dataset(8)
    mod, it = svrg_module(x, y, 4)
    batch = next(iter(it))
    with pytest.raises(LifecycleError, match=r"update_full_grads\(train_data\)"):
        mod.forward_backward(batch)
    with pytest.raises(LifecycleError, match="update_full_grads"):
        mod.forward(batch)  # is_train defaults to the binding's for_training
    mod.forward(batch, is_train=False)  # inference needs no snapshot
    assert mod.get_outputs()[0].shape == (4, 1)


def test_update_full_grads_before_init_optimizer_is_a_lifecycle_error():
    x, y = dataset(8)
    it = iterator(x, y, 4)
    mod = SVRGModule(network(), data_names=["data"], label_names=[LABEL], update_freq=1)
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params()
    with pytest.raises(LifecycleError, match="init_optimizer"):
        mod.update_full_grads(it)


def test_update_full_grads_of_a_module_bound_for_inference_is_a_lifecycle_error():
    x, y = dataset(8)
    it = iterator(x, y, 4)
    mod = SVRGModule(network(), data_names=["data"], label_names=[LABEL], update_freq=1)
    mod.bind(it.provide_data, it.provide_label, for_training=False)
    mod.init_params()
    mod._param_dict = mod._zero_full_grads()
    with pytest.raises(LifecycleError, match="for_training=True"):
        mod.update_full_grads(it)


def test_a_module_rebound_for_inference_refuses_update_and_full_gradients():
    x, y = dataset(8)
    mod, it = svrg_module(x, y, 4)
    mod.update_full_grads(it)
    mod.bind(it.provide_data, it.provide_label, for_training=False, force_rebind=True)
    it.reset()
    mod.forward(next(iter(it)))  # an inference pass: the snapshot does not run
    assert mod.get_outputs()[0].shape == (4, 1)
    with pytest.raises(LifecycleError, match="for_training=True"):
        mod.update()
    with pytest.raises(LifecycleError, match="for_training=True"):
        mod.update_full_grads(it)


def test_update_before_init_optimizer_and_init_optimizer_before_init_params_are_refused():
    mod = SVRGModule(network(), data_names=["data"], label_names=[LABEL], update_freq=1)
    mod.bind([("data", (4, 2))], [(LABEL, (4,))])
    with pytest.raises(LifecycleError, match="init_params"):
        mod.init_optimizer()
    mod.init_params()
    with pytest.raises(LifecycleError, match="init_optimizer"):
        mod.update()


def test_forward_before_bind_is_a_lifecycle_error():
    mod = SVRGModule(network(), data_names=["data"], label_names=[LABEL], update_freq=1)
    batch = mx.io.DataBatch([mx.nd.ones((4, 2))], [mx.nd.ones((4,))])
    with pytest.raises(LifecycleError, match="bind"):
        mod.forward(batch)


def test_update_full_grads_of_an_empty_iterator_is_a_value_error():
    x, y = dataset(8)
    mod, it = svrg_module(x, y, 4)

    class Empty(mx.io.DataIter):
        def __init__(self):
            super().__init__(4)

        def reset(self):
            pass

        def next(self):
            raise StopIteration

    with pytest.raises(ValueError, match="no batch"):
        mod.update_full_grads(Empty())
