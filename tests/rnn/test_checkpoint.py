"""save/load/do_rnn_checkpoint: weights unpacked on disk, packed in use."""

import warnings

import numpy as np
import pytest

import rebind as mx

STEPS, BATCH, FEATURES, HIDDEN, CLASSES = 3, 4, 5, 6, 3


def _network(cell, layout="TNC"):
    """A sequence classifier: the cell unrolled, its last step, FullyConnected, softmax."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outputs, _ = cell.unroll(STEPS, mx.sym.Variable("data"), layout=layout, merge_outputs=True)
    if layout == "NTC":
        outputs = mx.sym.swapaxes(outputs, dim1=0, dim2=1)
    last = mx.sym.SequenceLast(outputs, name="last")
    fc = mx.sym.FullyConnected(last, num_hidden=CLASSES, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def _fused():
    return mx.rnn.FusedRNNCell(
        HIDDEN, num_layers=2, mode="lstm", bidirectional=True, prefix="lstm_"
    )


def _params(symbol, rng):
    shapes = symbol.infer_shape(data=(STEPS, BATCH, FEATURES))[0]
    return {
        name: mx.nd.array(rng.uniform(-0.5, 0.5, shape))
        for name, shape in zip(symbol.list_arguments(), shapes, strict=True)
        if name not in ("data", "softmax_label")
    }


def _predict(symbol, arg_params, data, ctx):
    args = {name: value.as_in_context(ctx) for name, value in arg_params.items()}
    args["data"] = mx.nd.array(data, ctx=ctx)
    args["softmax_label"] = mx.nd.zeros((BATCH,), ctx=ctx)
    return symbol.bind(ctx, args, grad_req="null").forward()[0].asnumpy()


def test_round_trip_writes_unpacked_weights_and_reads_them_packed(tmp_path):
    rng = np.random.default_rng(0)
    cell = _fused()
    symbol = _network(cell)
    arg_params = _params(symbol, rng)
    prefix = str(tmp_path / "model")
    mx.rnn.save_rnn_checkpoint(cell, prefix, 3, symbol, arg_params, {})

    on_disk = mx.nd.load(f"{prefix}-0003.params")
    assert "arg:lstm_parameters" not in on_disk
    assert "arg:lstm_l0_i2h_i_weight" in on_disk and "arg:lstm_r1_h2h_o_bias" in on_disk
    assert "arg:fc_weight" in on_disk
    assert sorted(arg_params) == ["fc_bias", "fc_weight", "lstm_parameters"]  # not changed

    loaded_symbol, loaded, aux = mx.rnn.load_rnn_checkpoint([cell], prefix, 3)
    assert loaded_symbol.tojson() == symbol.tojson() and aux == {}
    assert sorted(loaded) == sorted(arg_params)
    for name, value in arg_params.items():
        np.testing.assert_array_equal(loaded[name].asnumpy(), value.asnumpy())


def test_a_fused_checkpoint_loads_into_the_unfused_network(tmp_path, ctx):
    rng = np.random.default_rng(1)
    fused = _fused()
    fused_net = _network(fused)
    arg_params = _params(fused_net, rng)
    prefix = str(tmp_path / "fused")
    mx.rnn.save_rnn_checkpoint(fused, prefix, 1, fused_net, arg_params, {})

    stack = fused.unfuse()
    unfused_net = _network(stack)
    _, unfused_params, _ = mx.rnn.load_rnn_checkpoint(stack, prefix, 1)
    assert sorted(unfused_params) == sorted(
        n for n in unfused_net.list_arguments() if n not in ("data", "softmax_label")
    )
    data = rng.standard_normal((STEPS, BATCH, FEATURES))
    np.testing.assert_allclose(
        _predict(unfused_net, unfused_params, data, ctx),
        _predict(fused_net, arg_params, data, ctx),
        rtol=1e-5,
        atol=1e-6,
    )


def test_do_rnn_checkpoint_saves_every_period(tmp_path):
    cell = mx.rnn.LSTMCell(HIDDEN, prefix="l_")
    symbol = _network(cell)
    arg_params = _params(symbol, np.random.default_rng(2))
    prefix = str(tmp_path / "cb")
    callback = mx.rnn.do_rnn_checkpoint(cell, prefix, period=2)
    for epoch in range(4):
        callback(epoch, symbol, arg_params, {})
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["cb-0002.params", "cb-0004.params", "cb-symbol.json"]
    assert "arg:l_i2h_f_weight" in mx.nd.load(f"{prefix}-0004.params")
    _, loaded, _ = mx.rnn.load_rnn_checkpoint(cell, prefix, 4)
    np.testing.assert_array_equal(
        loaded["l_h2h_weight"].asnumpy(), arg_params["l_h2h_weight"].asnumpy()
    )


def test_do_rnn_checkpoint_as_a_fit_callback(tmp_path, ctx):
    rng = np.random.default_rng(3)
    cell = mx.rnn.GRUCell(HIDDEN, prefix="g_")
    symbol = _network(cell, layout="NTC")  # NDArrayIter batches along axis 0
    data = rng.standard_normal((8, STEPS, FEATURES)).astype(np.float32)
    labels = rng.integers(0, CLASSES, 8).astype(np.float32)
    train = mx.io.NDArrayIter(data, labels, batch_size=BATCH)
    module = mx.mod.Module(symbol, context=ctx)
    prefix = str(tmp_path / "fit")
    module.fit(
        train,
        num_epoch=2,
        optimizer_params={"learning_rate": 0.1},
        epoch_end_callback=mx.rnn.do_rnn_checkpoint(cell, prefix),
    )
    _, arg_params, aux_params = mx.rnn.load_rnn_checkpoint(cell, prefix, 2)
    trained, _ = module.get_params()
    assert sorted(arg_params) == sorted(trained)
    for name, value in trained.items():
        np.testing.assert_array_equal(arg_params[name].asnumpy(), value.asnumpy())


def test_rnn_unroll_is_deprecated_but_works():
    cell = mx.rnn.RNNCell(3)
    with pytest.warns(UserWarning, match="deprecated"):
        outputs, states = mx.rnn.rnn_unroll(cell, 2, [mx.sym.Variable("a"), mx.sym.Variable("b")])
    assert len(outputs) == 2 and len(states) == 1
