"""The Optimizer base: creation by name, registration, multipliers, counts, float16."""

import importlib
import sys
import textwrap
import warnings

import numpy as np
import pytest

import rebind as mx
from rebind import registry
from rebind.errors import UnknownNameError
from rebind.optimizer import Optimizer

MXNET_NAMES = (
    "sgd nag adam adagrad groupadagrad rmsprop adadelta adamax nadam ftrl signum ftml sgld "
    "dcasgd lamb lars ccsgd"
).split()


# -- creation and registration ---------------------------------------------------


@pytest.mark.parametrize("name", MXNET_NAMES)
def test_every_mxnet_name_is_a_builtin_plugin(name):
    optimizers = registry.get_registry("optimizers")
    assert optimizers.owner(name).startswith("rebind.plugins.optimizers_")
    assert isinstance(mx.optimizer.create(name), Optimizer)


def test_create_is_case_insensitive_and_reaches_classes_by_name():
    adam = mx.optimizer.create("AdAm", learning_rate=0.1, beta1=0.5)
    assert type(adam) is mx.optimizer.Adam is mx.opt.ADAM
    assert (adam.lr, adam.beta1) == (0.1, 0.5)
    assert type(mx.optimizer.Optimizer.create_optimizer("SGD")) is mx.optimizer.SGD
    assert mx.optimizer.Ftrl is mx.optimizer.FTRL


def test_create_passes_an_instance_through():
    sgd = mx.optimizer.SGD(learning_rate=0.3)
    assert mx.optimizer.create(sgd) is sgd
    with pytest.raises(TypeError, match="one or the other"):
        mx.optimizer.create(sgd, learning_rate=0.1)


def test_unknown_name_lists_known_and_suggests():
    with pytest.raises(UnknownNameError) as info:
        mx.optimizer.create("rmsprob")
    message = str(info.value)
    assert "unknown optimizer 'rmsprob'" in message
    assert "sgd" in message and "adam" in message
    assert "Did you mean 'rmsprop'?" in message
    assert isinstance(info.value, ValueError)  # MXNet raises ValueError


def test_unknown_attribute_is_an_attribute_error():
    assert not hasattr(mx.optimizer, "NoSuchOptimizer")
    with pytest.raises(AttributeError):
        mx.optimizer._private_thing  # noqa: B018


def test_register_decorator(fresh_registry):
    @mx.optimizer.Optimizer.register
    class HalfSGD(Optimizer):
        def update(self, index, weight, grad, state):
            weight._data -= 0.5 * self._get_lr(index) * grad._data

    created = mx.optimizer.create("halfsgd", learning_rate=1.0)
    assert type(created) is HalfSGD
    assert registry.get_registry("optimizers").owner("HalfSGD") == __name__
    with pytest.warns(UserWarning, match="replaces the one from"):

        @mx.optimizer.register
        class SGD(Optimizer):  # noqa: F811 (a clash on purpose)
            pass

    assert mx.optimizer.create("sgd").__class__ is SGD


THIRD_PARTY = """
from rebind import hookimpl
from rebind.optimizer import Optimizer


class DoubleStep(Optimizer):
    def update(self, index, weight, grad, state):
        self._update_count(index)
        weight._data -= 2 * self._get_lr(index) * grad._data


@hookimpl
def rebind_add_optimizers(registry):
    registry.add("doublestep", DoubleStep)
"""


def test_third_party_optimizer_from_entry_point(tmp_path, monkeypatch, fresh_registry, ctx):
    (tmp_path / "fake_opt_pkg.py").write_text(textwrap.dedent(THIRD_PARTY))
    dist = tmp_path / "fake_opt_pkg-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake_opt_pkg\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[rebind]\nfake_opt_pkg = fake_opt_pkg\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    monkeypatch.delitem(sys.modules, "fake_opt_pkg", raising=False)
    registry.reset()
    optimizer = mx.optimizer.create("DoubleStep", learning_rate=0.25)
    assert registry.get_registry("optimizers").owner("doublestep") == "fake_opt_pkg"
    weight = mx.nd.array([1.0, 2.0], ctx=ctx)
    mx.optimizer.get_updater(optimizer)(0, mx.nd.array([1.0, -1.0], ctx=ctx), weight)
    np.testing.assert_allclose(weight.asnumpy(), [0.5, 2.5])


# -- learning rates and multipliers ------------------------------------------------


def test_defaults_match_mxnet():
    base = Optimizer()
    assert (base.lr, base.wd, base.rescale_grad, base.clip_gradient) == (0.01, 0.0, 1.0, None)
    assert (base.num_update, base.begin_num_update, base.multi_precision) == (0, 0, False)
    defaults = {
        "adam": 0.001,
        "rmsprop": 0.001,
        "adamax": 0.002,
        "nadam": 0.001,
        "lamb": 0.001,
        "ftrl": 0.1,
        "signum": 0.01,
        "sgd": 0.01,
    }
    for name, lr in defaults.items():
        assert mx.optimizer.create(name).lr == lr, name


def test_set_learning_rate_refused_with_a_scheduler():
    plain = mx.optimizer.create("sgd", learning_rate=0.1)
    plain.set_learning_rate(0.2)
    assert plain.lr == plain.learning_rate == 0.2
    scheduled = mx.optimizer.create(
        "sgd", lr_scheduler=mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=0.4)
    )
    with pytest.raises(UserWarning, match="LRScheduler of the optimizer has already been defined"):
        scheduled.set_learning_rate(0.2)
    assert scheduled.lr is None  # the rate comes from the scheduler, as in MXNet
    scheduled.num_update = 3
    assert scheduled.learning_rate == pytest.approx(0.1)


def test_ftrl_keeps_the_scheduler_base_lr():
    scheduler = mx.lr_scheduler.FactorScheduler(step=5, base_lr=0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ftrl = mx.optimizer.create("ftrl", lr_scheduler=scheduler)
    assert scheduler.base_lr == 0.3 and ftrl.lr == 0.1
    assert ftrl._get_lr(0) == 0.3


def test_no_weight_decay_on_biases_and_betas_by_default():
    names = {0: "fc_weight", 1: "fc_bias", 2: "bn_gamma", 3: "bn_beta", 4: "bn_moving_mean"}
    sgd = mx.optimizer.create("sgd", wd=0.1, param_idx2name=names)
    assert sgd.wd_mult == {"fc_bias": 0.0, "bn_beta": 0.0, "bn_moving_mean": 0.0}
    assert [sgd._get_wd(i) for i in range(5)] == [0.1, 0.0, 0.1, 0.0, 0.0]
    assert sgd._get_wd(99) == 0.1  # unnamed indices decay
    lars = mx.optimizer.create("lars", wd=0.1, param_idx2name=names)
    assert lars._get_wd(2) == 0.0  # LARS decays only *_weight


def test_multipliers_from_symbol_attributes():
    data = mx.sym.Variable("data")
    scale = mx.sym.Variable("scale", lr_mult=2.0, wd_mult=0.5)
    net = mx.sym.FullyConnected(data * scale, num_hidden=3, name="fc")
    names = dict(enumerate(net.list_arguments()))
    sgd = mx.optimizer.create("sgd", learning_rate=0.1, wd=0.01, sym=net, param_idx2name=names)
    scale_index = net.list_arguments().index("scale")
    bias_index = net.list_arguments().index("fc_bias")
    assert sgd.lr_mult == {"scale": 2.0}
    assert sgd.wd_mult["scale"] == 0.5  # the attribute beats the no-decay default
    assert sgd._get_lr(scale_index) == pytest.approx(0.2)
    assert sgd._get_wd(scale_index) == pytest.approx(0.005)
    assert sgd._get_wd(bias_index) == 0.0
    sgd.set_lr_mult({"fc_weight": 3.0})
    assert sgd.lr_mult == {"scale": 2.0, "fc_weight": 3.0}


def test_multiplier_precedence_index_then_name_then_param_dict():
    class Param:
        lr_mult, wd_mult = 5.0, 0.0

    sgd = mx.optimizer.create("sgd", learning_rate=1.0, wd=1.0, param_idx2name={0: "a_weight"})
    sgd.set_lr_mult({"a_weight": 2.0, 0: 3.0})
    assert sgd._get_lr(0) == 3.0
    sgd.param_dict = {0: Param()}
    assert (sgd._get_lr(0), sgd._get_wd(0)) == (5.0, 0.0)


def test_bad_param_idx2name_is_refused():
    with pytest.raises(TypeError, match="param_idx2name should be a dict"):
        mx.optimizer.create("sgd", param_idx2name=["a_weight"])


# -- update counts ----------------------------------------------------------------


def test_update_counts_per_index_and_begin_num_update(ctx):
    sgd = mx.optimizer.create("sgd", begin_num_update=10)
    updater = mx.optimizer.get_updater(sgd)
    weights = [mx.nd.zeros((2,), ctx=ctx) for _ in range(2)]
    grad = mx.nd.ones((2,), ctx=ctx)
    for _ in range(3):
        updater(0, grad, weights[0])
    updater(1, grad, weights[1])
    assert sgd._index_update_count == {0: 13, 1: 11}
    assert sgd.num_update == 13


def test_update_counts_are_kept_per_device():
    sgd = mx.optimizer.create("sgd")
    sgd._set_current_context(0)
    sgd._update_count([0, 1])
    sgd._set_current_context(1)
    sgd._update_count(0)
    assert sgd._all_index_update_counts == {0: {0: 1, 1: 1}, 1: {0: 1}}
    assert sgd.num_update == 1


# -- float16 and master copies ------------------------------------------------------


def test_multi_precision_keeps_a_float32_master_copy(ctx):
    start = np.array([0.1, -0.2, 0.3], np.float32)
    grad = np.array([1e-4, 2e-4, -3e-4], np.float32)
    sgd = mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9, multi_precision=True)
    updater = mx.optimizer.get_updater(sgd)
    weight = mx.nd.array(start, ctx=ctx, dtype="float16")
    for _ in range(5):
        updater(0, mx.nd.array(grad, ctx=ctx, dtype="float16"), weight)
    mom, master = updater.states[0]  # SGD keeps MXNet's order: (momentum, master copy)
    assert master.dtype == mom.dtype == np.float32 and weight.dtype == np.float16
    # independent float32 reference; the float16 gradient is what the update sees
    g32, w32, m32 = grad.astype(np.float16).astype(np.float32), start.astype(np.float16), 0
    w32 = w32.astype(np.float32)
    for _ in range(5):
        m32 = 0.9 * m32 - 0.1 * g32
        w32 = w32 + m32
    np.testing.assert_allclose(master.asnumpy(), w32, rtol=1e-6)
    np.testing.assert_array_equal(weight.asnumpy(), w32.astype(np.float16))


def test_multi_precision_master_copy_first_for_other_optimizers(ctx):
    adam = mx.optimizer.create("adam", multi_precision=True)
    state = adam.create_state_multi_precision(0, mx.nd.ones((2,), ctx=ctx, dtype="float16"))
    master, (mean, var) = state
    assert master.dtype == mean.dtype == var.dtype == np.float32
    assert master.context == ctx


def test_float16_without_multi_precision_warns(ctx):
    with pytest.warns(UserWarning, match="multi_precision=True"):
        mx.optimizer.create("adam").create_state_multi_precision(
            0, mx.nd.ones((2,), ctx=ctx, dtype="float16")
        )


def test_state_dtypes_follow_mxnet(ctx):
    weight = mx.nd.ones((2, 2), ctx=ctx, dtype="float64")
    assert mx.optimizer.create("adam").create_state(0, weight)[0].dtype == np.float64
    # AdaGrad, RMSProp, AdaDelta and Ftrl keep float32 states whatever the weight
    for name in ("adagrad", "rmsprop", "adadelta", "ftrl"):
        state = mx.optimizer.create(name).create_state(0, weight)
        first = state if isinstance(state, mx.nd.NDArray) else state[0]
        assert first.dtype == np.float32, name


def test_base_update_is_not_implemented(ctx):
    weight = mx.nd.ones((1,), ctx=ctx)
    with pytest.raises(NotImplementedError, match="Optimizer does not define update"):
        Optimizer().update(0, weight, weight, None)
