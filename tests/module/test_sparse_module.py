"""Module with row_sparse parameters and CSR data: init, prepare, update, fit, get_params.

Expected values by definition: without weight decay or momentum a lazy SGD update
equals the dense one (rows a batch does not use get a zero gradient either way), so
the sparse module must end where the same network with dense arrays ends.
"""

import warnings

import numpy as np
import pytest

import rebind as mx

FEATURES, BATCH, EXAMPLES = 30, 8, 32


def network(sparse):
    x = mx.sym.Variable("data", stype="csr" if sparse else "default")
    weight = mx.sym.Variable(
        "weight", shape=(FEATURES, 1), stype="row_sparse" if sparse else "default"
    )
    bias = mx.sym.Variable("bias", shape=(1,))
    pred = mx.sym.broadcast_add(mx.sym.dot(x, weight), bias)
    return mx.sym.LinearRegressionOutput(pred, mx.sym.Variable("label"), name="out")


def data(seed=0):
    rs = np.random.RandomState(seed)
    x = rs.uniform(size=(EXAMPLES, FEATURES)).astype("float32")
    x[rs.uniform(size=x.shape) < 0.8] = 0
    x[:, -5:] = 0  # rows of the weight no example uses
    y = x @ rs.normal(size=(FEATURES, 1)).astype("float32")
    return x, y


def iterator(x, y, sparse):
    data_in = mx.nd.array(x).tostype("csr") if sparse else mx.nd.array(x)
    return mx.io.NDArrayIter(data_in, {"label": y}, BATCH, last_batch_handle="discard")


def start_params():
    rs = np.random.RandomState(1)
    weight = rs.uniform(-0.1, 0.1, (FEATURES, 1)).astype("float32")
    return {"weight": mx.nd.array(weight), "bias": mx.nd.array([0.5])}


def batch_rows(batch):
    return {"weight": batch.data[0].indices}


def test_init_params_keeps_the_row_sparse_storage():
    mod = mx.mod.Module(network(True), data_names=["data"], label_names=["label"])
    mod.bind(data_shapes=[("data", (BATCH, FEATURES))], label_shapes=[("label", (BATCH, 1))])
    mod.init_params(mx.init.Uniform(0.1))
    weight = mod.get_params()[0]["weight"]
    assert weight.stype == "row_sparse"
    values = weight.asnumpy()
    assert (np.abs(values) <= 0.1).all() and (values != 0).all()


@pytest.mark.parametrize("store", ["local", "device"])
def test_fit_with_row_sparse_pulls_ends_where_dense_training_ends(store):
    x, y = data()
    kwargs = {"optimizer": "sgd", "optimizer_params": {"learning_rate": 0.05}, "num_epoch": 3}
    dense = mx.mod.Module(network(False), data_names=["data"], label_names=["label"])
    dense.fit(iterator(x, y, False), arg_params=start_params(), **kwargs)
    sparse = mx.mod.Module(network(True), data_names=["data"], label_names=["label"])
    sparse.fit(
        iterator(x, y, True),
        arg_params=start_params(),
        kvstore=mx.kv.create(store),
        sparse_row_id_fn=batch_rows,
        **kwargs,
    )
    got, expected = sparse.get_params()[0], dense.get_params()[0]
    assert got["weight"].stype == "row_sparse"
    np.testing.assert_allclose(got["weight"].asnumpy(), expected["weight"].asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(got["bias"].asnumpy(), expected["bias"].asnumpy(), rtol=1e-5)
    # the unused rows kept their first values
    np.testing.assert_array_equal(
        got["weight"].asnumpy()[-5:], start_params()["weight"].asnumpy()[-5:]
    )


def test_update_on_the_store_pushes_sparse_gradients_without_pulling(caplog):
    """As MXNet's _update_params_on_kvstore: push only; no "non-default weights" warning."""
    x, y = data()
    store = mx.kv.create("local")
    sparse = mx.mod.Module(network(True), data_names=["data"], label_names=["label"])
    with caplog.at_level("WARNING"):
        sparse.fit(
            iterator(x, y, True),
            arg_params=start_params(),
            kvstore=store,
            sparse_row_id_fn=batch_rows,
            optimizer="sgd",
            num_epoch=1,
        )
    assert "non-default weights" not in caplog.text


def test_prepare_pulls_the_rows_a_batch_needs():
    x, y = data()
    mod = mx.mod.Module(network(True), data_names=["data"], label_names=["label"])
    train = iterator(x, y, True)
    mod.bind(data_shapes=train.provide_data, label_shapes=train.provide_label)
    mod.init_params(arg_params=start_params())
    mod.init_optimizer(kvstore=mx.kv.create("local"), optimizer_params={"learning_rate": 1.0})
    batch = train.next()
    mod.forward_backward(batch)
    mod.update()  # the store's weight changes; the device's stays as it was
    device_weight = mod._exec_group.param_arrays[0][0]
    np.testing.assert_array_equal(device_weight.asnumpy(), start_params()["weight"].asnumpy())
    mod.prepare(batch, sparse_row_id_fn=batch_rows)
    rows = np.unique(batch.data[0].indices.asnumpy())
    pulled = device_weight.asnumpy()
    updated = mod.get_params()[0]["weight"].asnumpy()
    np.testing.assert_array_equal(pulled[rows], updated[rows])
    assert not np.array_equal(updated[rows], start_params()["weight"].asnumpy()[rows])
    others = np.setdiff1d(np.arange(FEATURES), rows)
    assert not pulled[others].any()  # row_sparse_pull keeps only the rows asked for


def test_prepare_warns_without_a_store_keeping_the_parameters():
    x, y = data()
    mod = mx.mod.Module(network(True), data_names=["data"], label_names=["label"])
    train = iterator(x, y, True)
    mod.bind(data_shapes=train.provide_data, label_shapes=train.provide_label)
    mod.init_params()
    mod.init_optimizer()  # one device, kvstore 'local' by name: no store, as in MXNet
    with pytest.warns(UserWarning, match="not updated in the KVStore"):
        mod.prepare(train.next(), sparse_row_id_fn=batch_rows)
    mod.init_optimizer(kvstore=mx.kv.create("local"), force_init=True)
    with pytest.warns(UserWarning, match="bias.stype is not 'row_sparse'"):
        mod.prepare(train.next(), sparse_row_id_fn=lambda b: {"bias": mx.nd.array([0])})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mod.prepare(train.next())  # no sparse_row_id_fn: nothing to do, no warning


def test_predict_pulls_rows_with_sparse_row_id_fn():
    x, y = data()
    mod = mx.mod.Module(network(True), data_names=["data"], label_names=["label"])
    train = iterator(x, y, True)
    mod.bind(data_shapes=train.provide_data, label_shapes=train.provide_label)
    mod.init_params(arg_params=start_params())
    mod.init_optimizer(kvstore=mx.kv.create("local"), optimizer_params={"learning_rate": 1.0})
    for batch in train:  # updates on the store; the devices keep their first rows
        mod.forward_backward(batch)
        mod.update()
    params = mod.get_params()[0]
    expected = x @ params["weight"].asnumpy() + params["bias"].asnumpy()
    stale = mod.predict(iterator(x, y, True)).asnumpy()
    assert not np.allclose(stale, expected, rtol=1e-4)
    got = mod.predict(iterator(x, y, True), sparse_row_id_fn=batch_rows).asnumpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_two_contexts_slice_csr_batches_and_pull_rows_to_each():
    x, y = data()
    kwargs = {"optimizer": "sgd", "optimizer_params": {"learning_rate": 0.05}, "num_epoch": 3}
    contexts = [mx.cpu(0), mx.cpu(1)]
    dense = mx.mod.Module(network(False), ["data"], ["label"], context=contexts)
    dense.fit(iterator(x, y, False), arg_params=start_params(), kvstore="device", **kwargs)
    sparse = mx.mod.Module(network(True), ["data"], ["label"], context=contexts)
    sparse.fit(
        iterator(x, y, True),
        arg_params=start_params(),
        kvstore="device",
        sparse_row_id_fn=batch_rows,
        **kwargs,
    )
    got, expected = sparse.get_params()[0], dense.get_params()[0]
    np.testing.assert_allclose(got["weight"].asnumpy(), expected["weight"].asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(got["bias"].asnumpy(), expected["bias"].asnumpy(), rtol=1e-5)
