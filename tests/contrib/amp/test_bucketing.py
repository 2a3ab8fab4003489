"""convert_bucketing_module: every bound bucket's symbol is converted, params carried over."""

import numpy as np
import pytest

import rebind as mx
from rebind.contrib import amp


def _sym_gen(seq_len):
    data = mx.sym.Variable("data")
    hidden = mx.sym.FullyConnected(data, num_hidden=6, name="fc1")
    hidden = mx.sym.Activation(hidden, act_type="tanh", name="act")
    scores = mx.sym.FullyConnected(hidden, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(scores, name="softmax"), ("data",), ("softmax_label",)


def _batch(seq_len):
    data = np.linspace(-1, 1, 2 * seq_len).reshape(2, seq_len).astype(np.float32)
    return mx.io.DataBatch(
        [mx.nd.array(data)],
        [mx.nd.array([0, 2])],
        bucket_key=seq_len,
        provide_data=[mx.io.DataDesc("data", (2, seq_len))],
        provide_label=[mx.io.DataDesc("softmax_label", (2,))],
    )


def test_converted_buckets_run_in_float16_and_agree_with_float32(ctx):
    mod = mx.mod.BucketingModule(_sym_gen, default_bucket_key=4, context=ctx)
    mod.bind(data_shapes=[("data", (2, 4))], label_shapes=[("softmax_label", (2,))])
    mod.init_params(mx.init.Xavier())
    mod.forward(_batch(4), is_train=False)
    expected = mod.get_outputs()[0].asnumpy()
    converted = amp.convert_bucketing_module(mod)
    assert "amp_cast" in converted._buckets[4].symbol.tojson(remove_amp_cast=False)
    converted.bind(data_shapes=[("data", (2, 4))], label_shapes=[("softmax_label", (2,))])
    converted.forward(_batch(4), is_train=False)
    out = converted.get_outputs()[0]
    assert np.dtype(out.dtype) == np.float32
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=2e-2, atol=2e-3)


def test_unbound_module_is_refused():
    mod = mx.mod.BucketingModule(_sym_gen, default_bucket_key=4)
    with pytest.raises(ValueError, match="bind"):
        amp.convert_bucketing_module(mod)
    with pytest.raises(TypeError, match="BucketingModule"):
        amp.convert_bucketing_module(object())
