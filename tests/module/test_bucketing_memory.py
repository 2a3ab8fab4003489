"""Bucketing memory: executors built once, buffers borrowed, nothing kept by idle buckets.

An unrolled LSTM language model (MXNet's lstm_bucketing example, small) is
trained over buckets of three lengths with a BucketingModule.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.executor.optimize import ENV_SWITCH

VOCAB, HIDDEN, BATCH = 15, 6, 3
BUCKETS = (3, 5, 8)


def sym_gen(seq_len):
    data = mx.sym.Variable("data")
    embed = mx.sym.Embedding(data, input_dim=VOCAB, output_dim=4, name="embed")
    stack = mx.rnn.SequentialRNNCell()
    for layer in range(2):
        stack.add(mx.rnn.LSTMCell(num_hidden=HIDDEN, prefix=f"lstm_l{layer}_"))
    outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
    pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, HIDDEN)), num_hidden=VOCAB)
    label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
    return mx.sym.SoftmaxOutput(pred, label, name="softmax"), ("data",), ("softmax_label",)


def batch_of(length, seed):
    rng = np.random.default_rng(seed)
    data = rng.integers(1, VOCAB, (BATCH, length)).astype(np.float32)
    label = np.zeros_like(data)
    label[:, :-1] = data[:, 1:]
    return mx.io.DataBatch(
        [mx.nd.array(data)],
        [mx.nd.array(label)],
        bucket_key=length,
        provide_data=[mx.io.DataDesc("data", data.shape)],
        provide_label=[mx.io.DataDesc("softmax_label", label.shape)],
    )


def trained_module(ctx, batches):
    module = mx.mod.BucketingModule(sym_gen, default_bucket_key=max(BUCKETS), context=ctx)
    module.bind(
        data_shapes=[("data", (BATCH, max(BUCKETS)))],
        label_shapes=[("softmax_label", (BATCH, max(BUCKETS)))],
    )
    mx.random.seed(3)
    module.init_params(initializer=mx.init.Uniform(0.3))
    module.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    for batch in batches:
        module.forward(batch, is_train=True)
        module.backward()
        module.update()
    return module


def executor_of(module, key):
    return module._buckets[key]._exec_group.execs[0]


@pytest.fixture
def batches():
    return [batch_of(length, seed) for seed, length in enumerate((8, 3, 5, 3, 8, 5))]


def test_each_bucket_binds_once_and_borrows_the_default_buffers(ctx, batches):
    module = trained_module(ctx, batches[:3])
    first = {key: executor_of(module, key) for key in BUCKETS}
    for batch in batches[3:]:
        module.forward(batch, is_train=True)
        module.backward()
        module.update()
    assert {key: executor_of(module, key) for key in BUCKETS} == first  # cached, not rebuilt
    default = first[max(BUCKETS)]
    xp = ctx.backend.xp
    for key in BUCKETS[:-1]:
        small = first[key]
        for name, array in default.arg_dict.items():
            if name not in ("data", "softmax_label"):
                assert small.arg_dict[name] is array
                assert small.grad_dict[name] is default.grad_dict[name]
        for name in ("data", "softmax_label"):  # carved from the default bucket's arrays
            assert xp.shares_memory(small.arg_dict[name]._data, default.arg_dict[name]._data)


def test_idle_buckets_keep_no_intermediates(ctx, batches):
    module = trained_module(ctx, batches[:3])  # last trained: bucket 5
    busy, idle = executor_of(module, 5), [executor_of(module, k) for k in (3, 8)]
    assert busy._saved is not None
    for executor in idle:
        assert executor._saved is None
        for output in executor.outputs:  # right shape, no memory of their own
            assert output.shape[0] == BATCH * executor_key(executor)
            assert all(stride == 0 for stride in output._data.strides)
    module.forward(batches[1], is_train=True)  # bucket 3 now; bucket 5 lets go
    assert busy._saved is None
    with pytest.raises(RuntimeError, match="sharing memory"):
        busy.backward()


def executor_key(executor):
    return executor.arg_dict["data"].shape[1]


def test_training_over_buckets_is_the_same_with_and_without_graph_rewrites(
    ctx, batches, monkeypatch
):
    results = []
    for switch in ("0", "1"):
        monkeypatch.setenv(ENV_SWITCH, switch)
        module = trained_module(ctx, batches)
        module.forward(batches[0], is_train=False)
        arg_params, _ = module.get_params()
        results.append((module.get_outputs()[0].asnumpy(), arg_params))
    (plain_out, plain_params), (out, params) = results
    np.testing.assert_allclose(out, plain_out, rtol=1e-5, atol=1e-6)
    for name, value in params.items():
        np.testing.assert_allclose(
            value.asnumpy(), plain_params[name].asnumpy(), rtol=1e-5, atol=1e-6, err_msg=name
        )
