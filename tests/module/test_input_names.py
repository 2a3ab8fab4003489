"""Input names: a label the batch does not provide, a mistyped label name, shapes as pairs.

Expected behaviour recorded from MXNet 1.9.1 (tests/recording is not needed for
these few facts; each is noted where it is used):
- ``Module.bind``/``fit`` with labels named otherwise than the symbol's input
  raised ``KeyError: 'sofmax_label'`` (from executor_group._collect_arrays),
  after warning "Data provided by label_shapes don't match names specified by
  label_names ([DataDesc[sofmax_label,(4,),<class 'numpy.float32'>,NCHW]] vs.
  ['softmax_label'])". rebind used to warn and train against zeros.
- ``Module(net, label_names=['softmax_lable'])`` warned at construction and
  failed at ``init_params`` with "Unknown initialization pattern for
  softmax_label" (a ValueError).
- Binding without labels (prediction, ``for_training=False``) is allowed.
"""

import warnings

import numpy as np
import pytest

import rebind as mx
from rebind.errors import InputNameError, LifecycleError

from .core_nets import mlp, separable


def _iter(label_name="softmax_label", n=200, batch=20, seed=0):
    x, y = separable(n, seed=seed)
    return mx.io.NDArrayIter({"data": x}, {label_name: y}, batch_size=batch)


def _accuracy(mod, data):
    return dict(mod.score(data, "acc"))["accuracy"]


def test_fit_with_a_misnamed_label_raises_naming_both_lists(ctx):
    mod = mx.mod.Module(mlp(), context=ctx)
    with pytest.warns(UserWarning, match="don't match names"):
        with pytest.raises(InputNameError) as raised:
            mod.fit(_iter("sofmax_label"), num_epoch=1)
    message = str(raised.value)
    assert "['softmax_label'] get no data" in message  # what the symbol needs, unfed
    assert "reads ['data', 'softmax_label']" in message  # what the module needs
    assert "provides ['data', 'sofmax_label']" in message  # what the iterator gives
    assert "'sofmax_label' looks like 'softmax_label'" in message
    assert isinstance(raised.value, KeyError)  # what MXNet raised
    assert isinstance(raised.value, ValueError)
    assert not mod.binded


def test_with_the_right_label_name_the_same_fit_learns(ctx):
    mx.random.seed(0)
    mod = mx.mod.Module(mlp(), context=ctx)
    data = _iter()
    mod.fit(data, num_epoch=10, optimizer_params={"learning_rate": 0.5})
    assert _accuracy(mod, data) > 0.9  # on zeros for labels it stayed near chance


def test_the_mismatch_warning_prints_data_descs_as_mxnet():
    mod = mx.mod.Module(mlp(classes=3))
    with pytest.warns(UserWarning) as warned:
        with pytest.raises(InputNameError):
            mod.bind([("data", (4, 6))], [("sofmax_label", (4,))])
    assert str(warned[0].message) == (  # recorded from MXNet 1.9.1
        "Data provided by label_shapes don't match names specified by label_names "
        "([DataDesc[sofmax_label,(4,),<class 'numpy.float32'>,NCHW]] vs. ['softmax_label'])"
    )


def test_bind_for_prediction_with_misnamed_labels_raises_too():
    mod = mx.mod.Module(mlp())
    with pytest.warns(UserWarning), pytest.raises(KeyError, match="softmax_label"):
        mod.bind([("data", (4, 6))], [("sofmax_label", (4,))], for_training=False)


def test_fit_on_an_iterator_without_labels_raises():
    x, _ = separable(40)
    data = mx.io.NDArrayIter(x, None, batch_size=10)
    mod = mx.mod.Module(mlp())
    with pytest.warns(UserWarning), pytest.raises(InputNameError, match="provides \\['data'\\]"):
        mod.fit(data, num_epoch=1)


def test_binding_without_labels_stays_allowed_for_prediction_and_scoring(ctx):
    x, y = separable(40)
    mod = mx.mod.Module(mlp(), context=ctx)
    with pytest.warns(UserWarning, match="label_names"):  # as MXNet
        mod.bind([("data", (10, 6))], None, for_training=False)
    mod.init_params()
    assert mod.predict(mx.io.NDArrayIter(x, None, batch_size=10)).shape == (40, 3)
    scored = mod.score(mx.io.NDArrayIter(x, y, batch_size=10), "acc")
    assert 0.0 <= dict(scored)["accuracy"] <= 1.0


def test_a_label_the_symbol_does_not_read_warns_and_is_left_to_the_metric():
    # MXNet raised KeyError here; rebind keeps the label for the metric (documented)
    net = mx.sym.MakeLoss(mx.sym.sum(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2)))
    mod = mx.mod.Module(net, label_names=None)
    with pytest.warns(UserWarning, match="don't match names"):
        mod.bind([("data", (4, 6))], [("softmax_label", (4,))])
    assert mod.binded and "softmax_label" not in mod._exec_group.execs[0].arg_dict


def test_bucketing_module_refuses_a_misnamed_label():
    def sym_gen(key):
        return mlp(), ("data",), ("softmax_label",)

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=6)
    with pytest.warns(UserWarning), pytest.raises(InputNameError, match="sofmax_label"):
        mod.bind([("data", (4, 6))], [("sofmax_label", (4,))])


def test_mutable_module_refuses_a_misnamed_label():
    mod = mx.mod.MutableModule(mlp(), ("data",), ("softmax_label",))
    with pytest.warns(UserWarning), pytest.raises(InputNameError, match="sofmax_label"):
        mod.bind([("data", (4, 6))], [("sofmax_label", (4,))])


def test_sequential_module_refuses_a_misnamed_label():
    first = mx.mod.Module(
        mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc"),
        label_names=None,
    )
    second = mx.mod.Module(mx.sym.SoftmaxOutput(mx.sym.Variable("data"), name="softmax"))
    seq = mx.mod.SequentialModule().add(first).add(second, take_labels=True, auto_wiring=True)
    with pytest.warns(UserWarning), pytest.raises(InputNameError, match="sofmax_label"):
        seq.bind([("data", (4, 6))], [("sofmax_label", (4,))])


def test_reshape_to_misnamed_labels_raises(ctx):
    mod = mx.mod.Module(mlp(), context=ctx)
    mod.bind([("data", (4, 6))], [("softmax_label", (4,))])
    with pytest.warns(UserWarning), pytest.raises(InputNameError, match="Module.reshape"):
        mod.reshape([("data", (8, 6))], [("sofmax_label", (8,))])


# -- a mistyped label_names ---------------------------------------------------------------


@pytest.mark.parametrize("provided", ["softmax_label", "softmax_lable"])
def test_fit_with_a_mistyped_label_name_names_the_right_one(provided):
    with pytest.warns(UserWarning, match="Did you mean"):  # MXNet's warning, kept
        mod = mx.mod.Module(mlp(), label_names=["softmax_lable"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the names-match warning, as MXNet's
        with pytest.raises(InputNameError) as raised:
            mod.fit(_iter(provided), num_epoch=1)
    message = str(raised.value)
    assert isinstance(raised.value, ValueError)  # MXNet's init_params raised ValueError
    assert message.startswith("Module.init_params: the symbol's input 'softmax_label' is neither")
    assert "label 'softmax_lable' is not an input of the symbol" in message
    assert "Did you mean label_names=['softmax_label']?" in message
    assert "initialization pattern" not in message
    assert not mod.params_initialized


def test_a_label_name_far_from_the_input_still_points_at_the_label_input():
    with pytest.warns(UserWarning):
        mod = mx.mod.Module(mlp(), label_names=["y"])
    mod.bind([("data", (4, 6))], [("y", (4,))])  # as MXNet: the input is a parameter now
    with pytest.raises(InputNameError, match="label_names=\\['softmax_label'\\]"):
        mod.init_params()


def test_prediction_with_values_for_every_parameter_keeps_working_as_mxnet():
    # MXNet's prediction recipe: the default label_names do not name the symbol's label,
    # which becomes a parameter that set_params(allow_missing=True) leaves alone
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    net = mx.sym.SoftmaxOutput(net, name="prob")
    with pytest.warns(UserWarning, match="Did you mean"):
        mod = mx.mod.Module(net)
    with pytest.warns(UserWarning, match="label_names"):
        mod.bind([("data", (2, 6))], for_training=False)
    weight = np.arange(18, dtype=np.float32).reshape(3, 6) / 10
    args = {"fc_weight": mx.nd.array(weight), "fc_bias": mx.nd.array([0.1, -0.2, 0.3])}
    mod.set_params(args, {}, allow_missing=True)
    out = mod.predict(mx.io.NDArrayIter(np.ones((2, 6), np.float32), None, batch_size=2))
    recorded = [0.000601, 0.016293, 0.983106]  # MXNet 1.9.1, rounded to 6 places
    np.testing.assert_allclose(out.asnumpy(), [recorded, recorded], atol=1e-6)
    with pytest.raises(InputNameError, match="label_names=\\['prob_label'\\]"):
        mod.init_params(force_init=True)  # MXNet: "Unknown initialization pattern"


def test_an_input_with_an_initializer_is_a_parameter_not_a_mistyped_label():
    # 'scal' is close to 'scale', but 'scale' has init=: the user meant a parameter
    scale = mx.sym.Variable("scale", shape=(1,), init=mx.init.One())
    net = mx.sym.broadcast_mul(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2), scale)
    net = mx.sym.LinearRegressionOutput(net, name="lro")
    with pytest.warns(UserWarning, match="'scal' is not found"):
        mod = mx.mod.Module(net, label_names=["lro_label", "scal"])
    mod.bind([("data", (4, 6))], [("lro_label", (4, 2)), ("scal", (4,))])
    mod.init_params()
    assert "scale" in mod._param_names
    assert mod.get_params()[0]["scale"].asnumpy().tolist() == [1.0]


# -- (name, shape) pairs wherever DataDescs are taken ------------------------------------------


def test_executor_group_takes_name_shape_pairs():
    from rebind.module.executor_group import DataParallelExecutorGroup

    net = mlp(classes=3)
    params = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
    group = DataParallelExecutorGroup(
        net,
        [mx.cpu(0), mx.cpu(1)],
        [1, 1],
        [("data", (4, 6))],
        [("softmax_label", (4,))],
        params,
        True,
        False,
    )
    # recorded from MXNet 1.9.1: DataDescs kept, batch 4 split 2 + 2, only the inputs
    # (no parameter, no gradient) in the shared data arrays
    assert type(group.data_shapes[0]).__name__ == "DataDesc"
    assert group.batch_size == 4 and group.slices == [slice(0, 2), slice(2, 4)]
    assert sorted(group.shared_data_arrays[0]) == ["data", "softmax_label"]
    group.reshape([("data", (8, 6))], [("softmax_label", (8,))])
    assert group.batch_size == 8 and group.execs[1].arg_dict["data"].shape == (4, 6)


# -- backward against labels no batch fed (rebind; MXNet used stale or zero labels) -----------


def _batch(n=4, labels=True, seed=0):
    x, y = separable(n, seed=seed)
    return mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)] if labels else None)


def test_backward_of_a_module_bound_without_labels_is_refused(ctx):
    mod = mx.mod.Module(mlp(), context=ctx)
    with pytest.warns(UserWarning, match="label_names"):
        mod.bind([("data", (4, 6))])  # for_training=True by default, as MXNet
    mod.init_params()
    mod.forward(_batch(), is_train=True)  # a forward alone stays allowed (MXNet)
    assert mod.get_outputs()[0].shape == (4, 3)
    with pytest.raises(LifecycleError, match="bound without label_shapes"):
        mod.backward()


def test_fit_after_a_bind_without_labels_is_refused_not_trained_on_zeros():
    x, y = separable(40)
    mod = mx.mod.Module(mlp())
    with pytest.warns(UserWarning):
        mod.bind([("data", (10, 6))])
    with pytest.raises(LifecycleError, match="force_rebind=True"):
        mod.fit(mx.io.NDArrayIter(x, y, batch_size=10), num_epoch=1)


@pytest.mark.parametrize("contexts", [1, 2], ids=["one context", "two contexts"])
def test_backward_after_a_batch_without_labels_is_refused(contexts):
    mod = mx.mod.Module(mlp(), context=[mx.cpu(i) for i in range(contexts)])
    mod.bind([("data", (4, 6))], [("softmax_label", (4,))])
    mod.init_params()
    mod.forward(_batch(labels=True), is_train=True)
    mod.backward()  # labels fed: fine
    mod.forward(_batch(labels=False, seed=1), is_train=True)
    with pytest.raises(ValueError, match="batch had none"):
        mod.backward()
    mod.forward(_batch(labels=True, seed=1), is_train=True)
    mod.backward()


def test_backward_of_a_module_without_labels_needs_none(ctx):
    # MXNet's test_module_reshape: label_names=None, backward with out_grads
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    mod = mx.mod.Module(net, label_names=None, context=ctx)
    mod.bind([("data", (4, 6))])
    mod.init_params()
    mod.forward(_batch(labels=False), is_train=True)
    mod.backward([mx.nd.ones((4, 3), ctx=ctx)])
    grads = mod._exec_group.grad_arrays[mod._exec_group.param_names.index("fc_bias")]
    np.testing.assert_array_equal(grads[0].asnumpy(), [4.0, 4.0, 4.0])
