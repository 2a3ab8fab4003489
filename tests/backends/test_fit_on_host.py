"""``Module.fit`` of an LSTM (and a GRU) language model through the code a GPU runs, on the host.

The benchmark's LSTM LM in small (``benchmarks/_lstm_lm.py``'s shape of
network: Embedding, two unrolled LSTMCell layers, or GRUCell layers,
FullyConnected and SoftmaxOutput over every position), fitted with
``Accuracy`` as on a GPU:
the layer steps (``fused_layer``, made for GPU contexts only, forced here),
every operator's GPU branch and Accuracy's counting kernels, all built for
the host (host_kernels.py). The fitted parameters and the metric must be
those of the plain CPU fit, to float rounding (the C library's ``exp`` and
``tanh`` stand in for NumPy's, and the layer sums its products in another
order).
"""

import numpy as np
import pytest

import rebind as mx
from rebind.backends import cupy_layer_kernels
from rebind.executor import fused_layer

from .host_kernels import compiler
from .test_gpu_dispatch_on_host import _through_host_kernels
from .test_row_kernels_on_host import _through_count_kernel

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler to build kernels")

VOCAB, EMBED, HIDDEN, STEPS, BATCH, BATCHES = 13, 6, 8, 5, 4, 3


def _lm(cell=mx.rnn.LSTMCell, vocab=VOCAB):
    data = mx.sym.Variable("data")
    label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
    embed = mx.sym.Embedding(data, input_dim=vocab, output_dim=EMBED, name="embed")
    stack = mx.rnn.SequentialRNNCell()
    for layer in range(2):
        stack.add(cell(HIDDEN, prefix=f"rnn_l{layer}_"))
    outputs, _ = stack.unroll(STEPS, embed, layout="NTC", merge_outputs=True)
    pred = mx.sym.FullyConnected(
        mx.sym.Reshape(outputs, shape=(-1, HIDDEN)), num_hidden=vocab, name="pred"
    )
    return mx.sym.SoftmaxOutput(pred, label, name="softmax")


def _fit(cell=mx.rnn.LSTMCell, vocab=VOCAB):
    rng = np.random.default_rng(11)
    words = rng.integers(1, vocab, (BATCH * BATCHES, STEPS + 1)).astype(np.float32)
    train = mx.io.NDArrayIter(words[:, :-1], words[:, 1:], batch_size=BATCH)
    mx.random.seed(4)
    mod = mx.mod.Module(_lm(cell, vocab), context=mx.cpu())
    metric = mx.metric.Accuracy()
    mod.fit(
        train,
        num_epoch=2,
        eval_metric=metric,
        initializer=mx.init.Xavier(),
        optimizer_params={"learning_rate": 0.5, "momentum": 0.9},
    )
    args, _ = mod.get_params()
    rewrites = [rewrite for rewrite, _, _ in mod._exec_group.execs[0]._plan.optimizations]
    return {k: v.asnumpy() for k, v in args.items()}, metric, rewrites


# 100 words: rows wider than a thread a row suits, the softmax and the count a warp a row;
# the layers' products over warps (the default) or a thread a unit
@pytest.mark.parametrize(
    ("kind", "vocab", "products"),
    [("lstm", VOCAB, "over_warps"), ("gru", VOCAB, "over_warps"), ("lstm", 100, "with_product")],
)
def test_an_rnn_lm_fits_through_the_gpu_code_as_on_the_cpu(
    host_cupy, monkeypatch, kind, vocab, products
):
    cell = {"lstm": mx.rnn.LSTMCell, "gru": mx.rnn.GRUCell}[kind]
    expected, cpu_metric, cpu_rewrites = _fit(cell, vocab)
    assert f"fused_{kind}_layer" not in cpu_rewrites
    launched, counted = [], []
    with monkeypatch.context() as patch:
        patch.setattr(fused_layer, "ANY_DEVICE", True)
        patch.setattr(cupy_layer_kernels, "PRODUCTS_OVER_WARPS", products == "over_warps")
        _through_host_kernels(patch, host_cupy, launched)
        _through_count_kernel(patch, host_cupy, counted)
        got, gpu_metric, gpu_rewrites = _fit(cell, vocab)
    assert gpu_rewrites.count(f"fused_{kind}_layer") == 2
    assert f"{kind}_layer_forward_{products}" in launched
    assert f"{kind}_layer_backward_{products}" in launched
    assert f"{kind}_cell_forward" not in launched
    # Accuracy's one-kernel count, once a batch
    assert [name for name, _ in counted] == ["add_correct_rows"] * (2 * BATCHES)
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-5, err_msg=name)
    assert gpu_metric.get_global() == cpu_metric.get_global()
    assert gpu_metric.num_inst == cpu_metric.num_inst == BATCH * STEPS * BATCHES
