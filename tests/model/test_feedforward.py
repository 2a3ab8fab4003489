"""mx.model.FeedForward (MXNet's deprecated estimator) on rebind's Module."""

import numpy as np
import pytest

import rebind as mx

pytestmark = pytest.mark.filterwarnings("ignore:mxnet.model.FeedForward has been deprecated")


def _mlp():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=2, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _blobs(n=200, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.randint(0, 2, n)
    x = rng.normal(0, 1, (n, 4)).astype(np.float32) + 3 * y[:, None]
    return x, y.astype(np.float32)


def test_deprecated_as_in_mxnet():
    with pytest.warns(DeprecationWarning, match="Please use mxnet.mod.Module"):
        mx.model.FeedForward(_mlp())


def test_fit_predict_score_on_numpy_arrays():
    x, y = _blobs()
    np.random.seed(1)
    model = mx.model.FeedForward(
        _mlp(), num_epoch=5, numpy_batch_size=32, learning_rate=0.1, momentum=0.9
    )
    model.fit(x, y, eval_data=(x[:50], y[:50]))
    probs = model.predict(x)
    assert probs.shape == (200, 2)  # padding of the last batch of 32 removed
    np.testing.assert_allclose(probs.sum(axis=1), 1, rtol=1e-5)
    accuracy = (probs.argmax(axis=1) == y).mean()
    assert accuracy > 0.95
    score = model.score(mx.io.NDArrayIter(x, y, 32))
    assert score == pytest.approx(accuracy, abs=0.02)
    outputs, data, label = model.predict(x[:40], return_data=True)
    np.testing.assert_allclose(data, x[:40], rtol=1e-6)  # the data went through float32
    assert outputs.shape == (40, 2) and label.shape == (40,)


def test_one_epoch_equals_module_fit_from_the_same_start():
    x, y = _blobs(64)
    start = mx.mod.Module(_mlp())
    start.bind([("data", (16, 4))], [("softmax_label", (16,))])
    start.init_params(initializer=mx.init.Xavier())
    arg_params, aux_params = start.get_params()
    arg_params = {k: v.copy() for k, v in arg_params.items()}

    np.random.seed(3)
    model = mx.model.FeedForward(
        _mlp(), num_epoch=1, numpy_batch_size=16, arg_params=arg_params, learning_rate=0.5
    )
    model.fit(x, y)

    np.random.seed(3)
    module = mx.mod.Module(_mlp())
    train = mx.io.NDArrayIter(x, y, 16, shuffle=True, last_batch_handle="roll_over")
    module.fit(train, num_epoch=1, arg_params=arg_params, optimizer_params={"learning_rate": 0.5})
    for name, value in module.get_params()[0].items():
        np.testing.assert_allclose(model.arg_params[name].asnumpy(), value.asnumpy(), rtol=1e-6)


def test_save_load_create_and_begin_epoch(tmp_path):
    x, y = _blobs(96)
    model = mx.model.FeedForward.create(
        _mlp(), x, y, num_epoch=2, numpy_batch_size=32, learning_rate=0.1
    )
    prefix = str(tmp_path / "ff")
    model.save(prefix)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ff-0002.params", "ff-symbol.json"]
    loaded = mx.model.FeedForward.load(prefix, 2)
    assert loaded.begin_epoch == 2
    np.testing.assert_allclose(loaded.predict(x), model.predict(x), rtol=1e-6)


def test_epoch_size_limits_batches_per_epoch():
    x, y = _blobs(128)
    seen = []
    model = mx.model.FeedForward(_mlp(), num_epoch=2, epoch_size=3, numpy_batch_size=16)
    model.fit(x, y, batch_end_callback=lambda p: seen.append((p.epoch, p.nbatch)))
    assert seen == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]


def test_bad_inputs_are_refused_as_mxnet_refuses_them():
    model = mx.model.FeedForward(_mlp(), num_epoch=1)
    with pytest.raises(ValueError, match="y must be specified"):
        model.fit(np.zeros((4, 4)))
    with pytest.raises(ValueError, match="not equal"):
        model.fit(np.zeros((4, 4)), np.zeros(3))
    with pytest.raises(TypeError, match="DataIter, NDArray or numpy.ndarray"):
        model.fit([[1, 2]], [1])


def test_executor_manager_refuses_with_the_reason():
    with pytest.raises(NotImplementedError, match="DataParallelExecutorGroup"):
        mx.model.DataParallelExecutorManager()
