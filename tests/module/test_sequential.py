"""SequentialModule: a chain of modules computes what one module of the whole network does."""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import LifecycleError

from .log_capture import logs_warning

BATCH, FEATURES, HIDDEN, CLASSES = 6, 4, 5, 3


def _first_symbol():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=HIDDEN, name="fc1")
    return mx.sym.Activation(fc1, act_type="tanh", name="act1")


def _second_symbol(data_name="data"):
    data = mx.sym.Variable(data_name)
    fc2 = mx.sym.FullyConnected(data, num_hidden=CLASSES, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def _combined_symbol():
    fc2 = mx.sym.FullyConnected(_first_symbol(), num_hidden=CLASSES, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def _params(seed=0):
    rng = np.random.RandomState(seed)
    shapes = {
        "fc1_weight": (HIDDEN, FEATURES),
        "fc1_bias": (HIDDEN,),
        "fc2_weight": (CLASSES, HIDDEN),
        "fc2_bias": (CLASSES,),
    }
    return {name: rng.randn(*shape).astype(np.float32) for name, shape in shapes.items()}


def _batch(ctx, seed=1):
    rng = np.random.RandomState(seed)
    x = rng.randn(BATCH, FEATURES).astype(np.float32)
    y = rng.randint(0, CLASSES, size=BATCH).astype(np.float32)
    return mx.io.DataBatch([mx.nd.array(x, ctx=ctx)], [mx.nd.array(y, ctx=ctx)])


def _chain(ctx, auto_wiring=True):
    first = mx.mod.Module(_first_symbol(), label_names=None, context=ctx)
    second_data = "data" if auto_wiring else "act1_output"
    second = mx.mod.Module(_second_symbol(second_data), data_names=[second_data], context=ctx)
    seq = mx.mod.SequentialModule()
    return seq.add(first).add(second, take_labels=True, auto_wiring=auto_wiring)


def _ready(module, params, inputs_need_grad=False):
    module.bind(
        data_shapes=[("data", (BATCH, FEATURES))],
        label_shapes=[("softmax_label", (BATCH,))],
        inputs_need_grad=inputs_need_grad,
    )
    module.init_params(arg_params={k: mx.nd.array(v) for k, v in params.items()})
    return module


def _param_grads(module):
    group = module._exec_group
    return {
        name: grad[0].asnumpy()
        for name, grad in zip(group.param_names, group.grad_arrays, strict=True)
    }


@pytest.mark.parametrize("auto_wiring", [True, False])
def test_chain_equals_one_module_of_the_whole_network(ctx, auto_wiring):
    params = _params()
    seq = _ready(_chain(ctx, auto_wiring), params, inputs_need_grad=True)
    whole = _ready(mx.mod.Module(_combined_symbol(), context=ctx), params, inputs_need_grad=True)
    batch = _batch(ctx)
    seq.forward_backward(batch)
    whole.forward_backward(batch)
    np.testing.assert_allclose(
        seq.get_outputs()[0].asnumpy(), whole.get_outputs()[0].asnumpy(), rtol=1e-5, atol=1e-6
    )
    grads = {**_param_grads(seq._modules[0]), **_param_grads(seq._modules[1])}
    expected = _param_grads(whole)
    assert sorted(grads) == sorted(expected)
    for name in expected:
        np.testing.assert_allclose(grads[name], expected[name], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(
        seq.get_input_grads()[0].asnumpy(),
        whole.get_input_grads()[0].asnumpy(),
        rtol=1e-4,
        atol=1e-6,
    )


def test_chain_update_equals_one_module_update(ctx):
    params = _params(seed=2)
    seq = _ready(_chain(ctx), params)
    whole = _ready(mx.mod.Module(_combined_symbol(), context=ctx), params)
    for module in (seq, whole):
        module.init_optimizer(
            optimizer="sgd", optimizer_params={"learning_rate": 0.5, "momentum": 0.9}
        )
    for seed in (3, 4):
        for module in (seq, whole):
            module.forward_backward(_batch(ctx, seed))
            module.update()
    got, expected = seq.get_params()[0], whole.get_params()[0]
    for name in expected:
        np.testing.assert_allclose(
            got[name].asnumpy(), expected[name].asnumpy(), rtol=1e-4, atol=1e-6
        )


def test_auto_wiring_renames_to_the_next_modules_data_names(ctx):
    seq = _ready(_chain(ctx, auto_wiring=True), _params())
    second = seq._modules[1]
    assert [d.name for d in second.data_shapes] == ["data"]
    assert second.data_shapes[0].shape == (BATCH, HIDDEN)
    assert seq.data_names == ["data"] and seq.output_names == ["softmax_output"]
    assert seq.output_shapes == second.output_shapes
    assert seq.data_shapes == seq._modules[0].data_shapes


def test_without_auto_wiring_names_must_match():
    first = mx.mod.Module(_first_symbol(), label_names=None)
    second = mx.mod.Module(_second_symbol("data"))
    seq = mx.mod.SequentialModule().add(first).add(second, take_labels=True)
    with pytest.raises(ValueError, match="act1_output"):
        seq.bind(
            data_shapes=[("data", (BATCH, FEATURES))], label_shapes=[("softmax_label", (BATCH,))]
        )


def test_auto_wiring_needs_as_many_inputs_as_outputs():
    first = mx.mod.Module(_first_symbol(), label_names=None)
    two = mx.sym.Variable("a") + mx.sym.Variable("b")
    second = mx.mod.Module(two, data_names=["a", "b"], label_names=None)
    seq = mx.mod.SequentialModule().add(first).add(second, auto_wiring=True)
    with pytest.raises(ValueError, match="auto_wiring of module 1"):
        seq.bind(data_shapes=[("data", (BATCH, FEATURES))])


def test_labels_go_only_to_modules_that_take_them(ctx):
    seq = _ready(_chain(ctx), _params())
    first, second = seq._modules
    assert first.label_shapes is None
    assert [tuple(d) for d in second.label_shapes] == [("softmax_label", (BATCH,))]
    assert seq.label_shapes == second.label_shapes
    assert not first.inputs_need_grad and second.inputs_need_grad

    batch = _batch(ctx)
    seq.forward(batch, is_train=False)
    metric = mx.metric.create("acc")
    seq.update_metric(metric, batch.label)
    predicted = seq.get_outputs()[0].asnumpy().argmax(1)
    assert metric.num_inst == BATCH
    assert metric.get()[1] == pytest.approx(np.mean(predicted == batch.label[0].asnumpy()))


def test_no_module_takes_labels_no_label_shapes_no_metric(ctx):
    first = mx.mod.Module(_first_symbol(), label_names=None, context=ctx)
    seq = mx.mod.SequentialModule().add(first)
    seq.bind(data_shapes=[("data", (BATCH, FEATURES))], label_shapes=[("softmax_label", (BATCH,))])
    seq.init_params()
    assert seq.label_shapes is None
    batch = _batch(ctx)
    seq.forward(batch)
    metric = mx.metric.create("acc")
    seq.update_metric(metric, batch.label)
    assert metric.num_inst == 0


def test_get_params_merges_and_set_params_splits(ctx):
    params = _params(seed=5)
    seq = _ready(_chain(ctx), params)
    arg_params, aux_params = seq.get_params()
    assert sorted(arg_params) == sorted(params) and aux_params == {}
    for name, value in params.items():
        np.testing.assert_array_equal(arg_params[name].asnumpy(), value)
    new = _params(seed=6)
    seq.set_params({k: mx.nd.array(v) for k, v in new.items()}, {})
    assert seq._modules[0].get_params()[0].keys() == {"fc1_weight", "fc1_bias"}
    np.testing.assert_array_equal(seq.get_params()[0]["fc2_weight"].asnumpy(), new["fc2_weight"])


def test_init_params_refuses_extra_and_missing_names(ctx):
    params = _params()
    extra = {k: mx.nd.array(v) for k, v in params.items()}
    extra["fc9_weight"] = mx.nd.zeros((1,))
    seq = _chain(ctx)
    seq.bind(data_shapes=[("data", (BATCH, FEATURES))], label_shapes=[("softmax_label", (BATCH,))])
    with pytest.raises(ValueError, match="fc9_weight"):
        seq.init_params(arg_params=extra)
    seq.init_params(arg_params=extra, allow_extra=True, force_init=True)
    assert seq.params_initialized
    seq2 = _chain(ctx)
    seq2.bind(data_shapes=[("data", (BATCH, FEATURES))], label_shapes=[("softmax_label", (BATCH,))])
    partial = {k: mx.nd.array(v) for k, v in params.items() if k != "fc2_bias"}
    with pytest.raises(RuntimeError, match="fc2_bias"):
        seq2.init_params(arg_params=partial)


def test_duplicate_parameter_names_are_refused():
    def layer():
        return mx.mod.Module(
            mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=FEATURES, name="fc"),
            label_names=None,
        )

    seq = mx.mod.SequentialModule().add(layer()).add(layer(), auto_wiring=True)
    seq.bind(data_shapes=[("data", (BATCH, FEATURES))])
    with pytest.raises(ValueError, match="duplicated parameter name 'fc_"):
        seq.init_params()


def test_fit_score_predict_on_a_chain(ctx):
    mx.random.seed(0)  # initializer and shuffling: the same run every time
    np.random.seed(0)
    rng = np.random.RandomState(7)
    centers = rng.randn(CLASSES, FEATURES) * 4
    y = rng.randint(0, CLASSES, size=250)
    x = (centers[y] + rng.randn(250, FEATURES)).astype(np.float32)
    train = mx.io.NDArrayIter(x[:200], y[:200].astype(np.float32), batch_size=20, shuffle=True)
    val = mx.io.NDArrayIter(x[200:], y[200:].astype(np.float32), batch_size=16)  # 50: padded
    seq = _chain(ctx)
    seq.fit(
        train,
        eval_data=val,
        num_epoch=10,
        initializer=mx.init.Xavier(),
        optimizer_params={"learning_rate": 0.2, "momentum": 0.9},
    )
    ((_, accuracy),) = seq.score(val, "acc")
    assert accuracy >= 0.95
    predictions = seq.predict(val)
    assert predictions.shape == (50, CLASSES)
    assert np.mean(predictions.asnumpy().argmax(1) == y[200:]) >= 0.95


def test_python_module_in_the_middle(ctx):
    from .test_python_module import Scale

    first = mx.mod.Module(_first_symbol(), label_names=None, context=ctx)
    second = mx.mod.Module(_second_symbol("data"), context=ctx)
    seq = mx.mod.SequentialModule().add(first).add(Scale(3.0), auto_wiring=True)
    seq.add(second, take_labels=True, auto_wiring=True)
    params = _params(seed=8)
    _ready(seq, params, inputs_need_grad=True)
    batch = _batch(ctx, seed=9)
    seq.forward_backward(batch)

    x = batch.data[0].asnumpy()
    h = 3.0 * np.tanh(x @ params["fc1_weight"].T + params["fc1_bias"])
    z = h @ params["fc2_weight"].T + params["fc2_bias"]
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(seq.get_outputs()[0].asnumpy(), p, rtol=1e-4, atol=1e-6)
    dz = p - np.eye(CLASSES)[batch.label[0].asnumpy().astype(int)]
    dpre = (
        3.0
        * (dz @ params["fc2_weight"])
        * (1 - np.tanh(x @ params["fc1_weight"].T + params["fc1_bias"]) ** 2)
    )
    np.testing.assert_allclose(_param_grads(first)["fc1_weight"], dpre.T @ x, rtol=1e-4, atol=1e-5)


def test_lifecycle_of_the_chain(ctx):
    seq = _chain(ctx)
    with pytest.raises(LifecycleError, match="SequentialModule.forward"):
        seq.forward(_batch(ctx))
    _ready(seq, _params())
    assert seq.binded and seq.params_initialized and not seq.optimizer_initialized
    with pytest.raises(LifecycleError, match="init_optimizer"):
        seq.update()
    seq.forward(_batch(ctx))
    with pytest.raises(LifecycleError, match="inputs_need_grad=True"):
        seq.get_input_grads()
    with logs_warning(r"^Already bound, ignoring bind\(\)"):  # MXNet logs it
        seq.bind(data_shapes=[("data", (BATCH, FEATURES))])
    seq.add(mx.mod.PythonLossModule(data_names=["data"]), auto_wiring=True)
    assert not seq.binded and not seq.params_initialized


def test_refusals():
    with pytest.raises(ValueError, match="unknown meta"):
        mx.mod.SequentialModule().add(mx.mod.PythonLossModule(), take_label=True)
    with pytest.raises(ValueError, match="empty"):
        mx.mod.SequentialModule().bind(data_shapes=[("data", (1, 2))])
    seq = mx.mod.SequentialModule().add(mx.mod.PythonLossModule())
    with pytest.raises(NotImplementedError, match="shared_module"):
        seq.bind(data_shapes=[("data", (1, 2))], shared_module=seq)
    with pytest.raises(ValueError, match="for_training"):
        seq.bind(data_shapes=[("data", (1, 2))], for_training=False, inputs_need_grad=True)
    assert mx.mod.SequentialModule.META_TAKE_LABELS == "take_labels"
    assert mx.mod.SequentialModule.META_AUTO_WIRING == "auto_wiring"


def test_force_rebind_keeps_parameters(ctx):
    params = _params(seed=10)
    seq = _ready(_chain(ctx), params)
    seq.bind(
        data_shapes=[("data", (3, FEATURES))],
        label_shapes=[("softmax_label", (3,))],
        force_rebind=True,
    )
    assert seq.binded and seq.params_initialized
    assert seq.output_shapes[0][1] == (3, CLASSES)
    np.testing.assert_array_equal(seq.get_params()[0]["fc1_weight"].asnumpy(), params["fc1_weight"])
    x = np.ones((3, FEATURES), dtype=np.float32)
    seq.forward(mx.io.DataBatch([mx.nd.array(x, ctx=ctx)], None), is_train=False)
    assert seq.get_outputs()[0].shape == (3, CLASSES)


def test_save_params_load_params_round_trip(ctx, tmp_path):
    params = _params(seed=11)
    seq = _ready(_chain(ctx), params)
    seq.save_params(str(tmp_path / "chain.params"))
    other = _ready(_chain(ctx), _params(seed=12))
    other.load_params(str(tmp_path / "chain.params"))
    for name, value in other.get_params()[0].items():
        np.testing.assert_array_equal(value.asnumpy(), params[name])
