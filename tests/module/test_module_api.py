"""Module's intermediate API on a small MLP, checked against NumPy computed independently."""

import warnings

import numpy as np
import pytest

import rebind as mx
from rebind.errors import LifecycleError

from .core_nets import (
    bound_module,
    mlp,
    np_forward,
    np_gradients,
    np_sgd_step,
    random_params,
    separable,
    to_nd,
)
from .log_capture import logs_warning

X, Y = separable(8)


def _batch(x=X, y=Y, ctx=None):
    return mx.io.DataBatch([mx.nd.array(x, ctx=ctx)], [mx.nd.array(y, ctx=ctx)])


def _params(mod):
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


def test_forward_matches_numpy(ctx):
    params = random_params()
    mod = bound_module(ctx, params=params)
    mod.forward(_batch(ctx=ctx), is_train=False)
    (out,) = mod.get_outputs()
    assert out.context == ctx and out.shape == (8, 3)
    np.testing.assert_allclose(out.asnumpy(), np_forward(params, X)[2], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("wd", [0.0, 0.01])
def test_sgd_steps_match_numpy(ctx, wd):
    params = random_params()
    mod = bound_module(ctx, params=params)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.3, "wd": wd})
    expected = params
    for _ in range(3):
        mod.forward_backward(_batch(ctx=ctx))
        mod.update()
        expected = np_sgd_step(expected, X, Y, lr=0.3, wd=wd)
    for name, value in _params(mod).items():
        np.testing.assert_allclose(value, expected[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_gradients_and_rescale_grad(ctx):
    params = random_params()
    mod = bound_module(ctx, params=params)
    mod.init_optimizer()
    assert mod._optimizer.rescale_grad == pytest.approx(1 / 8)
    mod.forward_backward(_batch(ctx=ctx))
    expected = np_gradients(params, X, Y)
    group = mod._exec_group
    for name, block in zip(group.param_names, group.grad_arrays, strict=True):
        np.testing.assert_allclose(block[0].asnumpy(), expected[name], rtol=1e-4, atol=1e-5)


def test_get_params_are_cpu_copies_and_set_params_changes_outputs(ctx):
    mod = bound_module(ctx)
    arg_params, aux_params = mod.get_params()
    assert aux_params == {}
    assert all(v.context == mx.cpu() for v in arg_params.values())
    other = random_params(seed=5)
    mod.set_params(to_nd(other), {})
    np.testing.assert_array_equal(_params(mod)["fc2_weight"], other["fc2_weight"])
    mod.forward(_batch(ctx=ctx), is_train=False)
    np.testing.assert_allclose(
        mod.get_outputs()[0].asnumpy(), np_forward(other, X)[2], rtol=1e-5, atol=1e-6
    )


def test_get_params_follows_updates(ctx):
    mod = bound_module(ctx)
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    before = _params(mod)
    mod.forward_backward(_batch(ctx=ctx))
    mod.update()
    after = _params(mod)
    assert not np.array_equal(before["fc1_weight"], after["fc1_weight"])


def test_missing_params_are_a_runtime_error_and_extra_a_value_error(ctx):
    mod = mx.mod.Module(mlp(), context=ctx)
    mod.bind([("data", (8, 6))], [("softmax_label", (8,))])
    params = to_nd(random_params())
    partial = {k: v for k, v in params.items() if k != "fc1_weight"}
    with pytest.raises(RuntimeError, match="fc1_weight"):
        mod.init_params(arg_params=partial)
    with pytest.raises(ValueError, match="extra"):
        mod.init_params(arg_params=dict(params, extra=mx.nd.ones((2,))))
    mod.init_params(arg_params=dict(params, extra=mx.nd.ones((2,))), allow_extra=True)
    mod.init_params(
        initializer=mx.init.One(), arg_params=partial, allow_missing=True, force_init=True
    )
    np.testing.assert_array_equal(_params(mod)["fc1_weight"], np.ones((8, 6), np.float32))
    np.testing.assert_array_equal(_params(mod)["fc1_bias"], params["fc1_bias"].asnumpy())


def test_missing_is_reported_before_extra_and_nothing_is_assigned(ctx):
    """MXNet's test_module_set_params: missing + extra without either allowance is a
    RuntimeError (the missing value is reported first); with allow_missing, a ValueError."""
    mod = bound_module(ctx)
    before = _params(mod)
    params = to_nd(random_params())
    missing_and_extra = {"fc1_bias": params["fc1_bias"], "extra": mx.nd.ones((2,))}
    with pytest.raises(RuntimeError, match="is not presented"):
        mod.set_params(missing_and_extra, {}, force_init=True)
    with pytest.raises(ValueError, match="extra"):
        mod.set_params(missing_and_extra, {}, allow_missing=True, force_init=True)
    for name, value in _params(mod).items():
        np.testing.assert_array_equal(value, before[name])


def test_set_params_allow_missing_keeps_current_values(ctx):
    mod = bound_module(ctx)
    kept = _params(mod)["fc1_bias"]
    mod.set_params({"fc1_weight": mx.nd.zeros((8, 6))}, {}, allow_missing=True)
    params = _params(mod)
    np.testing.assert_array_equal(params["fc1_weight"], np.zeros((8, 6), np.float32))
    np.testing.assert_array_equal(params["fc1_bias"], kept)


def test_init_params_honours_init_attributes(ctx):
    data = mx.sym.Variable("data")
    weight = mx.sym.Variable("fc_weight", init=mx.init.Constant(0.5))
    out = mx.sym.FullyConnected(data, weight=weight, name="fc", num_hidden=2)
    mod = mx.mod.Module(out, label_names=None, context=ctx)
    mod.bind([("data", (1, 3))])
    mod.init_params(mx.init.Uniform(0.01))
    params = _params(mod)
    np.testing.assert_array_equal(params["fc_weight"], np.full((2, 3), 0.5, np.float32))
    np.testing.assert_array_equal(params["fc_bias"], np.zeros(2, np.float32))


def test_init_params_twice_warns_and_keeps_values(ctx):
    mod = bound_module(ctx)
    before = _params(mod)
    with pytest.warns(UserWarning, match="already initialized"):
        mod.init_params(mx.init.One())
    assert all(np.array_equal(before[k], v) for k, v in _params(mod).items())


def test_fixed_params_get_no_gradient_and_no_update(ctx):
    params = random_params()
    mod = bound_module(ctx, params=params, fixed_param_names=["fc1_weight"])
    assert mod._exec_group.grad_req["fc1_weight"] == "null"
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    mod.forward_backward(_batch(ctx=ctx))
    mod.update()
    after = _params(mod)
    np.testing.assert_array_equal(after["fc1_weight"], params["fc1_weight"])
    assert not np.array_equal(after["fc1_bias"], params["fc1_bias"])


def test_update_after_a_forced_rebind_reaches_the_new_arrays(ctx):
    # Module.update keeps its one-device lists between steps; a new binding makes new ones
    params = random_params()
    mod = bound_module(ctx, params=params)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.3})
    mod.forward_backward(_batch(ctx=ctx))
    mod.update()
    stepped = _params(mod)
    mod.bind([("data", (8, 6))], [("softmax_label", (8,))], force_rebind=True)
    mod.init_params(arg_params=to_nd(stepped), force_init=True)
    mod.forward_backward(_batch(ctx=ctx))
    mod.update()
    expected = np_sgd_step(stepped, X, Y, lr=0.3, wd=0.0)
    for name, value in _params(mod).items():
        np.testing.assert_allclose(value, expected[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_lr_mult_attribute_reaches_the_optimizer(ctx):
    params = random_params()
    mod = mx.mod.Module(mlp(lr_mult=0.0), context=ctx)
    mod.bind([("data", (8, 6))], [("softmax_label", (8,))])
    mod.init_params(arg_params=to_nd(params))
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    mod.forward_backward(_batch(ctx=ctx))
    mod.update()
    np.testing.assert_array_equal(_params(mod)["fc1_weight"], params["fc1_weight"])


def test_input_gradients(ctx):
    params = random_params()
    mod = mx.mod.Module(mlp(), context=ctx)
    mod.bind([("data", (8, 6))], [("softmax_label", (8,))], inputs_need_grad=True)
    mod.init_params(arg_params=to_nd(params))
    mod.forward_backward(_batch(ctx=ctx))
    (grad,) = mod.get_input_grads()
    np.testing.assert_allclose(
        grad.asnumpy(), np_gradients(params, X, Y)["data"], rtol=1e-4, atol=1e-5
    )
    plain = bound_module(ctx, params=params)
    plain.forward_backward(_batch(ctx=ctx))
    with pytest.raises(LifecycleError, match="inputs_need_grad=True"):
        plain.get_input_grads()


def test_grad_req_add_accumulates(ctx):
    params = random_params()
    mod = mx.mod.Module(mlp(), context=ctx)
    mod.bind([("data", (8, 6))], [("softmax_label", (8,))], grad_req="add")
    mod.init_params(arg_params=to_nd(params))
    for _ in range(2):
        mod.forward_backward(_batch(ctx=ctx))
    grads = dict(zip(mod._exec_group.param_names, mod._exec_group.grad_arrays, strict=True))
    expected = np_gradients(params, X, Y)
    np.testing.assert_allclose(
        grads["fc2_weight"][0].asnumpy(), 2 * expected["fc2_weight"], rtol=1e-4, atol=1e-5
    )


def test_grad_req_dict_and_list(ctx):
    mod = mx.mod.Module(mlp(), context=ctx)
    mod.bind([("data", (8, 6))], [("softmax_label", (8,))], grad_req={"fc2_bias": "null"})
    assert mod._exec_group.grad_req["fc2_bias"] == "null"
    assert mod._exec_group.grad_req["fc1_weight"] == "write"
    assert mod._exec_group.grad_req["data"] == "null"
    other = mx.mod.Module(mlp(), context=ctx)
    names = mlp().list_arguments()
    other.bind([("data", (8, 6))], [("softmax_label", (8,))], grad_req=["add"] * len(names))
    assert set(other._exec_group.grad_req.values()) == {"add"}


def test_forward_on_another_batch_size_reshapes(ctx):
    params = random_params()
    mod = bound_module(ctx, params=params)
    x5, y5 = separable(5, seed=3)
    mod.forward(_batch(x5, y5, ctx=ctx), is_train=False)
    assert mod.data_shapes[0].shape == (5, 6)
    np.testing.assert_allclose(
        mod.get_outputs()[0].asnumpy(), np_forward(params, x5)[2], rtol=1e-5, atol=1e-6
    )
    x12, y12 = separable(12, seed=4)
    mod.forward(_batch(x12, y12, ctx=ctx), is_train=False)
    np.testing.assert_allclose(
        mod.get_outputs()[0].asnumpy(), np_forward(params, x12)[2], rtol=1e-5, atol=1e-6
    )
    mod.forward(_batch(ctx=ctx), is_train=False)
    assert mod.output_shapes == [("softmax_output", (8, 3))]


def test_unlabelled_batch_of_another_size_on_a_training_binding(ctx):
    params = random_params()
    mod = bound_module(ctx, params=params)
    x3 = X[:3]
    out = mod.predict(x3)  # MXNet: a shape error on the label; rebind re-shapes the label too
    np.testing.assert_allclose(out.asnumpy(), np_forward(params, x3)[2], rtol=1e-5, atol=1e-6)
    assert mod.label_shapes[0].shape == (3,)


def test_reshape_keeps_parameters_shared(ctx):
    mod = bound_module(ctx)
    weights = mod._exec_group.param_arrays[0][0]
    mod.reshape([("data", (3, 6))], [("softmax_label", (3,))])
    assert mod._exec_group.param_arrays[0][0] is weights
    assert mod.label_shapes[0].shape == (3,)


def test_save_and_load_params(ctx, tmp_path):
    params = random_params()
    mod = bound_module(ctx, params=params)
    fname = str(tmp_path / "p.params")
    mod.save_params(fname)
    assert sorted(mx.nd.load(fname)) == sorted(f"arg:{k}" for k in params)
    fresh = mx.mod.Module(mlp(), context=ctx)
    fresh.bind([("data", (8, 6))], [("softmax_label", (8,))])
    fresh.load_params(fname)
    assert fresh.params_initialized
    assert all(np.array_equal(v, params[k]) for k, v in _params(fresh).items())
    unbound = mx.mod.Module(mlp(), context=ctx)
    unbound.load_params(fname)  # rebind: kept until bind, as Module.load does
    assert unbound.params_initialized and not unbound.binded
    unbound.bind([("data", (8, 6))], [("softmax_label", (8,))], for_training=False)
    unbound.forward(_batch(ctx=ctx))
    np.testing.assert_allclose(
        unbound.get_outputs()[0].asnumpy(), np_forward(params, X)[2], rtol=1e-5, atol=1e-6
    )


def test_lifecycle_errors_name_the_missing_call():
    mod = mx.mod.Module(mlp())
    with pytest.raises(LifecycleError, match=r"Module\.forward\(\).*unbound.*bind\(\)"):
        mod.forward(_batch())
    with pytest.raises(LifecycleError, match=r"init_params\(\).*bind\(\)"):
        mod.init_params()
    mod.bind([("data", (8, 6))], [("softmax_label", (8,))])
    with pytest.raises(LifecycleError, match=r"init_optimizer\(\).*init_params\(\)"):
        mod.init_optimizer()
    mod.init_params()
    with pytest.raises(LifecycleError, match=r"update\(\).*init_optimizer\(\)"):
        mod.update()
    assert (mod.binded, mod.params_initialized, mod.optimizer_initialized) == (True, True, False)


def test_second_bind_warns_and_force_rebind_keeps_trained_params(ctx):
    mod = bound_module(ctx)
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    mod.forward_backward(_batch(ctx=ctx))
    mod.update()
    trained = {k: v.copy() for k, v in mod._exec_group.execs[0].arg_dict.items()}
    with logs_warning(r"^Already bound, ignoring bind\(\)"):  # MXNet logs it
        mod.bind([("data", (8, 6))], [("softmax_label", (8,))])
    with pytest.warns(UserWarning, match="label_names"):  # bound without labels, as MXNet
        mod.bind([("data", (4, 6))], None, for_training=False, force_rebind=True)
    assert mod.optimizer_initialized and not mod.for_training
    for name in ("fc1_weight", "fc2_bias"):
        np.testing.assert_array_equal(_params(mod)[name], trained[name].asnumpy())


def test_names_and_shapes():
    mod = mx.mod.Module(mlp())
    assert mod.data_names == ["data"] and mod.label_names == ["softmax_label"]
    assert mod.output_names == ["softmax_output"]
    mod.bind([("data", (8, 6))], [("softmax_label", (8,))])
    assert [tuple(d) for d in mod.data_shapes] == [("data", (8, 6))]
    assert mod.output_shapes == [("softmax_output", (8, 3))]
    assert mod.symbol is mod._symbol


def test_unknown_data_name_is_an_error_and_label_name_a_warning():
    with pytest.raises(ValueError, match="data_names"):
        mx.mod.Module(mlp(), data_names=["image"])
    with pytest.warns(UserWarning, match="label_names"):
        mx.mod.Module(mlp(), label_names=["target"])


def test_states_are_inputs_set_by_set_states(ctx):
    data, state = mx.sym.Variable("data"), mx.sym.Variable("state")
    mod = mx.mod.Module(data + state, label_names=None, state_names=["state"], context=ctx)
    mod.bind([("data", (2, 3))])
    mod.init_params()
    mod.set_states(value=2.0)
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 3), ctx=ctx)]))
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), np.full((2, 3), 3.0))
    mod.set_states(states=[[mx.nd.full((2, 3), 5.0, ctx=ctx)]])
    np.testing.assert_array_equal(mod.get_states()[0].asnumpy(), np.full((2, 3), 5.0))
    assert mod.get_states(merge_multi_context=False)[0][0].shape == (2, 3)


def test_optimizer_instance_and_rescale_warning(ctx):
    mod = bound_module(ctx)
    sgd = mx.optimizer.create("sgd", learning_rate=0.1)
    with pytest.warns(UserWarning, match="rescale_grad"):
        mod.init_optimizer(optimizer=sgd)
    assert mod._optimizer is sgd and mod._updater.optimizer is sgd
    assert sgd.idx2name == {0: "fc1_weight", 1: "fc1_bias", 2: "fc2_weight", 3: "fc2_bias"}


def test_optimizer_states_round_trip(ctx, tmp_path):
    mod = bound_module(ctx)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    mod.forward_backward(_batch(ctx=ctx))
    mod.update()
    fname = str(tmp_path / "o.states")
    mod.save_optimizer_states(fname)
    saved = {k: v.asnumpy() for k, v in mod._updater.states.items()}
    mod.forward_backward(_batch(ctx=ctx))
    mod.update()
    mod.load_optimizer_states(fname)
    for index, value in mod._updater.states.items():
        np.testing.assert_array_equal(value.asnumpy(), saved[index])


def test_borrow_optimizer_shares_the_updater(ctx):
    owner = bound_module(ctx)
    owner.init_optimizer()
    other = bound_module(ctx)
    other.borrow_optimizer(owner)
    assert other.optimizer_initialized and other._updater is owner._updater
    lender = bound_module(ctx)
    with pytest.raises(LifecycleError, match=r"init_optimizer\(\)"):
        bound_module(ctx).borrow_optimizer(lender)


def test_predict_on_an_array_and_install_monitor(ctx):
    params = random_params()
    mod = bound_module(ctx, params=params)
    out = mod.predict(X)
    np.testing.assert_allclose(out.asnumpy(), np_forward(params, X)[2], rtol=1e-5, atol=1e-6)
    installed = []
    mod.install_monitor(type("Mon", (), {"install": lambda self, exe: installed.append(exe)})())
    assert installed == mod._exec_group.execs


def test_group2ctxs_places_grouped_layers(ctx):
    data = mx.sym.Variable("data")
    with mx.AttrScope(ctx_group="stage2"):
        out = mx.sym.FullyConnected(data, name="fc", num_hidden=2)
    mod = mx.mod.Module(out, label_names=None, context=mx.cpu(0), group2ctxs={"stage2": mx.cpu(1)})
    mod.bind([("data", (2, 3))])
    mod.init_params(mx.init.One())
    assert mod._exec_group.execs[0].arg_dict["fc_weight"].context == mx.cpu(1)
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 3))]), is_train=False)
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), np.full((2, 2), 3.0))


def test_module_without_loss_backward_needs_out_grads(ctx):
    data = mx.sym.Variable("data")
    out = mx.sym.FullyConnected(data, name="fc", num_hidden=2)
    mod = mx.mod.Module(out, label_names=None, context=ctx)
    mod.bind([("data", (2, 3))], inputs_need_grad=True)
    mod.init_params(mx.init.One())
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 3), ctx=ctx)]))
    mod.backward(out_grads=[mx.nd.ones((2, 2), ctx=ctx)])
    np.testing.assert_array_equal(mod.get_input_grads()[0].asnumpy(), np.full((2, 3), 2.0))


def test_inference_binding_refuses_backward(ctx):
    mod = mx.mod.Module(mlp(), context=ctx)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod.bind([("data", (8, 6))], for_training=False)
    mod.init_params()
    mod.forward(_batch(ctx=ctx))
    with pytest.raises(LifecycleError, match="for_training=True"):
        mod.backward()
