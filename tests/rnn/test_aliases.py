"""mx.rnn's names that MXNet 1.9.1 re-exports from other modules, and its module aliases."""

import numpy as np

import rebind as mx


def test_checkpoint_functions_are_mx_models(tmp_path):
    assert mx.rnn.save_checkpoint is mx.model.save_checkpoint
    assert mx.rnn.load_checkpoint is mx.model.load_checkpoint
    symbol = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    weight = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    prefix = str(tmp_path / "net")
    mx.rnn.save_checkpoint(prefix, 3, symbol, {"fc_weight": weight}, {})
    loaded, args, aux = mx.rnn.load_checkpoint(prefix, 3)
    assert loaded.list_arguments() == symbol.list_arguments() and aux == {}
    np.testing.assert_array_equal(args["fc_weight"].asnumpy(), weight.asnumpy())


def test_io_names_and_modules_match_mxnets_layout():
    assert mx.rnn.DataBatch is mx.io.DataBatch and mx.rnn.DataDesc is mx.io.DataDesc
    assert mx.rnn.DataIter is mx.io.DataIter
    assert mx.rnn.rnn.save_rnn_checkpoint is mx.rnn.save_rnn_checkpoint
    assert mx.rnn.rnn_cell.LSTMCell is mx.rnn.LSTMCell
    assert mx.rnn.io.BucketSentenceIter is mx.rnn.BucketSentenceIter
