"""_SVRGOptimizer and _AssignmentOptimizer: registration, arguments, routing by key."""

import numpy as np
import pytest

import rebind as mx
from rebind.contrib.svrg_optimization.svrg_optimizer import _AssignmentOptimizer, _SVRGOptimizer


def test_both_are_registered_under_their_lower_cased_class_names():
    svrg = mx.optimizer.create("_SVRGOptimizer", default_optimizer="sgd")
    assert type(svrg) is _SVRGOptimizer
    assert type(mx.optimizer.create("_assignmentoptimizer")) is _AssignmentOptimizer


def test_a_default_optimizer_by_name_gets_every_argument_the_wrapper_only_base_ones():
    svrg = _SVRGOptimizer(
        default_optimizer="sgd", learning_rate=-1.0, momentum=0.9, rescale_grad=0.5, wd=0.1
    )
    assert svrg.default_opt.lr == -1.0
    assert svrg.default_opt.momentum == 0.9
    assert svrg.default_opt.rescale_grad == 0.5
    assert (svrg.lr, svrg.rescale_grad, svrg.wd) == (-1.0, 0.5, 0.1)
    assert not hasattr(svrg, "momentum")
    assert type(svrg.aux_opt) is _AssignmentOptimizer


def test_a_default_optimizer_instance_is_used_as_it_is():
    adam = mx.optimizer.create("adam", learning_rate=0.3)
    svrg = _SVRGOptimizer(default_optimizer=adam, learning_rate=0.1)
    assert svrg.default_opt is adam and adam.lr == 0.3


def test_a_default_optimizer_of_another_type_is_a_type_error():
    with pytest.raises(TypeError, match="default_optimizer"):
        _SVRGOptimizer(default_optimizer=3)


def test_assignment_optimizer_sets_the_weight_to_the_pushed_value():
    weight, grad = mx.nd.array([1.0, 2.0]), mx.nd.array([5.0, -3.0])
    _AssignmentOptimizer(learning_rate=7.0, rescale_grad=0.5).update(0, weight, grad, None)
    np.testing.assert_array_equal(weight.asnumpy(), [5.0, -3.0])


def test_kvstore_updates_parameters_with_sgd_and_full_keys_by_assignment():
    # MXNet's test_kvstore_init_aux_keys
    svrg = _SVRGOptimizer(
        default_optimizer="sgd", param_idx2name={0: "weight", 1: "weight_full"}, learning_rate=1.0
    )
    kv = mx.kv.create("local")
    kv.set_optimizer(svrg)
    weight = mx.nd.array([0, 0, 0])
    kv.init(0, weight)
    kv.push(0, mx.nd.array([1, 1, 1]))
    kv.pull(0, weight)
    full = mx.nd.array([1, 1, 1])
    kv.init(1, full)
    kv.push(1, mx.nd.array([2, 2, 2]))
    kv.pull(1, full)
    np.testing.assert_array_equal(weight.asnumpy(), [-1, -1, -1])
    np.testing.assert_array_equal(full.asnumpy(), [2, 2, 2])


def test_string_keys_route_by_name():
    svrg = _SVRGOptimizer(
        default_optimizer="sgd", param_idx2name={0: "w", 1: "w_full"}, learning_rate=0.5
    )
    kv = mx.kv.create("local")
    kv.set_optimizer(svrg)
    kv.init("w", mx.nd.array([1.0]))
    kv.init("w_full", mx.nd.array([1.0]))
    kv.push("w", [mx.nd.array([1.0]), mx.nd.array([3.0])])
    kv.push("w_full", [mx.nd.array([1.0]), mx.nd.array([3.0])])
    out = mx.nd.zeros((1,))
    kv.pull("w", out=out)
    np.testing.assert_allclose(out.asnumpy(), [1.0 - 0.5 * 4.0])
    kv.pull("w_full", out=out)
    np.testing.assert_array_equal(out.asnumpy(), [4.0])


@pytest.mark.parametrize("name", ["fullyconnected0_weight", "fully_weight", "full"])
def test_names_that_merely_contain_full_are_parameters(name):
    svrg = _SVRGOptimizer(default_optimizer="sgd", param_idx2name={0: name}, learning_rate=0.5)
    weight = mx.nd.array([1.0, 1.0])
    svrg.update(0, weight, mx.nd.array([2.0, 4.0]), svrg.create_state(0, weight))
    np.testing.assert_allclose(weight.asnumpy(), [0.0, -1.0])


def test_states_come_from_the_optimizer_that_updates_the_key():
    svrg = _SVRGOptimizer(
        default_optimizer="sgd", param_idx2name={0: "w", 1: "w_full"}, momentum=0.9
    )
    weight = mx.nd.ones((2,))
    state = svrg.create_state(0, weight)
    assert state is not None and state.shape == (2,)
    assert svrg.create_state(1, weight) is None


def test_an_index_without_a_name_is_a_key_error_naming_the_index():
    svrg = _SVRGOptimizer(default_optimizer="sgd", param_idx2name={0: "w"})
    with pytest.raises(KeyError, match="index 5"):
        svrg.update(5, mx.nd.ones((1,)), mx.nd.ones((1,)), None)


def test_update_counts_follow_the_device_in_the_wrapped_optimizer():
    svrg = _SVRGOptimizer(default_optimizer="sgd", param_idx2name={0: "w"})
    svrg._set_current_context(1)
    svrg.update(0, mx.nd.ones((1,)), mx.nd.ones((1,)), None)
    assert svrg.default_opt._all_index_update_counts[1] == {0: 1}
    assert svrg.default_opt._all_index_update_counts[0] == {}
