"""MutableModule: re-binds when input shapes change, keeping parameters, updates and optimizer."""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import LifecycleError

from .core_nets import mlp, np_forward, np_sgd_step, random_params, separable, to_nd

DIM, MAX_BATCH = 6, 8


def mutable(ctx, for_training=True, **kwargs):
    """A MutableModule of ``mlp`` bound for up to MAX_BATCH rows, with ``random_params``."""
    kwargs.setdefault("max_data_shapes", [("data", (MAX_BATCH, DIM))])
    kwargs.setdefault("max_label_shapes", [("softmax_label", (MAX_BATCH,))])
    mod = mx.mod.MutableModule(mlp(), ["data"], ["softmax_label"], context=ctx, **kwargs)
    mod.bind([("data", (2, DIM))], [("softmax_label", (2,))], for_training=for_training)
    mod.init_params(arg_params=to_nd(random_params(DIM)))
    return mod


def batch_of(rows, seed=0):
    x, y = separable(rows, DIM, seed=seed)
    return mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]), x, y


def params_of(mod):
    return {name: value.asnumpy() for name, value in mod.get_params()[0].items()}


def test_bind_uses_the_maximum_shapes(ctx):
    mod = mutable(ctx)
    assert mod.data_shapes[0].shape == (MAX_BATCH, DIM)
    assert mod.label_shapes[0].shape == (MAX_BATCH,)
    assert mod.binded and mod.params_initialized and mod.symbol is mod._symbol


def test_a_shape_change_rebinds_sharing_the_parameter_arrays(ctx, xp):
    mod = mutable(ctx, for_training=False)
    first = mod._curr_module
    batch, x, _ = batch_of(MAX_BATCH, seed=1)
    mod.forward(batch)
    assert mod._curr_module is first  # the bound shapes: no re-bind
    small, x_small, _ = batch_of(3, seed=2)
    mod.forward(small)
    second = mod._curr_module
    assert second is not first and second.data_shapes[0].shape == (3, DIM)
    for mine, theirs in zip(
        second._exec_group.param_arrays, first._exec_group.param_arrays, strict=True
    ):
        assert mine[0] is theirs[0]
    assert xp.shares_memory(
        second._exec_group.execs[0].arg_dict["data"].data,
        first._exec_group.execs[0].arg_dict["data"].data,
    )
    expected = np_forward(random_params(DIM), x_small)[2]
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), expected, rtol=1e-5, atol=1e-6)
    mod.forward(batch)  # back to the larger shape
    np.testing.assert_allclose(
        mod.get_outputs()[0].asnumpy(), np_forward(random_params(DIM), x)[2], rtol=1e-5, atol=1e-6
    )


def test_updates_and_optimizer_state_survive_a_rebind(ctx):
    lr = 0.3
    mod = mutable(ctx)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": lr})
    expected = random_params(DIM)
    updater = mod._updater
    for rows, seed in ((MAX_BATCH, 3), (5, 4), (5, 5), (2, 6), (MAX_BATCH, 7)):
        batch, x, y = batch_of(rows, seed)
        mod.forward_backward(batch)
        mod.update()
        assert mod._curr_module._updater is updater
        # Module's rescale_grad is 1/batch of the first binding (MAX_BATCH), as in MXNet
        expected = np_sgd_step(expected, x, y, lr * len(x) / MAX_BATCH)
        for name, value in params_of(mod).items():
            np.testing.assert_allclose(
                value,
                expected[name],
                rtol=1e-5,
                atol=1e-6,
                err_msg=f"{name} after a batch of {rows}",
            )


def test_get_params_after_a_rebind_sees_earlier_updates(ctx):
    mod = mutable(ctx)
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    batch, _, _ = batch_of(MAX_BATCH, seed=1)
    mod.forward_backward(batch)
    mod.update()
    on_device = mod._curr_module._exec_group.param_arrays[0][0].asnumpy()
    small, _, _ = batch_of(3, seed=2)
    mod.forward(small, is_train=False)
    name = mod._curr_module._exec_group.param_names[0]
    np.testing.assert_array_equal(mod.get_params()[0][name].asnumpy(), on_device)


def _conv_net():
    data = mx.sym.Variable("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv1")
    pooled = mx.sym.Pooling(
        mx.sym.Activation(conv, act_type="relu"), global_pool=True, kernel=(1, 1), pool_type="avg"
    )
    scores = mx.sym.FullyConnected(mx.sym.Flatten(pooled), num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(scores, name="softmax")


def test_images_of_varying_size_match_a_module_bound_for_each_size(ctx):
    rs = np.random.RandomState(0)
    mod = mx.mod.MutableModule(
        _conv_net(),
        ["data"],
        ["softmax_label"],
        context=ctx,
        max_data_shapes=[("data", (2, 1, 12, 12))],
    )
    mod.bind([("data", (2, 1, 8, 8))], [("softmax_label", (2,))], for_training=False)
    mod.init_params(initializer=mx.init.Xavier())
    arg_params, aux_params = mod.get_params()
    for size in (12, 7, 10, 12):
        images = rs.randn(2, 1, size, size).astype(np.float32)
        batch = mx.io.DataBatch([mx.nd.array(images)], [mx.nd.zeros((2,))])
        mod.forward(batch)
        ref = mx.mod.Module(_conv_net(), context=ctx)
        ref.bind([("data", images.shape)], [("softmax_label", (2,))], for_training=False)
        ref.init_params(arg_params=arg_params, aux_params=aux_params)
        ref.forward(batch)
        np.testing.assert_allclose(
            mod.get_outputs()[0].asnumpy(), ref.get_outputs()[0].asnumpy(), rtol=1e-5, atol=1e-6
        )


def test_fixed_param_prefix_fixes_every_parameter_it_starts(ctx):
    mod = mutable(ctx, fixed_param_prefix=["fc1"])
    assert mod._fixed_param_names == ["fc1_weight", "fc1_bias"]
    assert mod._curr_module._exec_group.grad_req["fc1_weight"] == "null"
    before = params_of(mod)
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    for rows, seed in ((MAX_BATCH, 1), (4, 2)):
        mod.forward_backward(batch_of(rows, seed)[0])
        mod.update()
    after = params_of(mod)
    for name in ("fc1_weight", "fc1_bias"):
        np.testing.assert_array_equal(after[name], before[name])
    assert not np.array_equal(after["fc2_weight"], before["fc2_weight"])
    assert mod._curr_module._exec_group.grad_req["fc1_bias"] == "null"  # after the re-bind too


def test_a_single_prefix_string_and_no_prefix():
    net = mlp()
    assert mx.mod.MutableModule(
        net, ["data"], ["softmax_label"], fixed_param_prefix="fc2"
    )._fixed_param_names == ["fc2_weight", "fc2_bias"]
    assert mx.mod.MutableModule(net, ["data"], ["softmax_label"])._fixed_param_names == []


def test_max_shapes_must_name_inputs():
    with pytest.raises(ValueError, match="max_data_shapes names 'image'"):
        mx.mod.MutableModule(
            mlp(), ["data"], ["softmax_label"], max_data_shapes=[("image", (4, DIM))]
        )


def test_force_rebind_keeps_parameters_and_forward_needs_params(ctx):
    mod = mx.mod.MutableModule(mlp(), ["data"], ["softmax_label"], context=ctx)
    with pytest.raises(LifecycleError, match=r"MutableModule.forward\(\).*bind\(\)"):
        mod.forward(batch_of(2)[0])
    mod.bind([("data", (4, DIM))], [("softmax_label", (4,))])
    with pytest.raises(LifecycleError, match=r"init_params\(\)"):
        mod.forward(batch_of(4)[0])
    mod.init_params(arg_params=to_nd(random_params(DIM)))
    mod.forward(batch_of(3)[0])
    before = params_of(mod)
    with pytest.warns(UserWarning, match="label_shapes don't match"):  # no labels: as MXNet
        mod.bind([("data", (4, DIM))], None, for_training=False, force_rebind=True)
    assert mod.data_shapes[0].shape == (4, DIM) and not mod.for_training
    for name, value in params_of(mod).items():
        np.testing.assert_array_equal(value, before[name])


def test_fit_and_predict_over_batches_of_two_sizes(ctx):
    x, y = separable(40, DIM, seed=3)
    train = mx.io.NDArrayIter(
        x, y, batch_size=MAX_BATCH, shuffle=False, last_batch_handle="discard"
    )
    mod = mx.mod.MutableModule(
        mlp(),
        ["data"],
        ["softmax_label"],
        context=ctx,
        max_data_shapes=[("data", (MAX_BATCH, DIM))],
    )
    mod.fit(
        train, num_epoch=3, optimizer_params={"learning_rate": 0.5}, initializer=mx.init.Xavier()
    )
    small, _, _ = batch_of(3, seed=9)
    mod.forward(small, is_train=False)
    assert mod.get_outputs()[0].shape == (3, 3)


def test_save_checkpoint_loads_back_into_a_module(ctx, tmp_path):
    mod = mutable(ctx)
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    mod.forward_backward(batch_of(5, seed=1)[0])
    mod.update()
    prefix = str(tmp_path / "mut")
    mod.save_checkpoint(prefix, 1, save_optimizer_states=True)
    assert (tmp_path / "mut-0001.states").exists()
    loaded = mx.mod.Module.load(prefix, 1, context=ctx)
    loaded.bind([("data", (5, DIM))], [("softmax_label", (5,))], for_training=False)
    batch = batch_of(5, seed=2)[0]
    loaded.forward(batch)
    mod.forward(batch, is_train=False)
    np.testing.assert_array_equal(loaded.get_outputs()[0].asnumpy(), mod.get_outputs()[0].asnumpy())
