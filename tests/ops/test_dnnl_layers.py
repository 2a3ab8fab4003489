"""Pooling and BatchNorm of channels-last activations (ops/pooling_dnnl.py, norm_dnnl.py,
norm_cpu.py's rows), and a small residual network trained on oneDNN's kernels.

oneDNN's convolutions hand their outputs over as channels-last views; the
layers after them take such views on oneDNN (or, without it, on NumPy rows).
Each is compared with the NumPy kernels on the same values in MXNet's layout,
whose results the golden cases recorded from MXNet 1.9.1 pin.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.ops import (
    OpContext,
    conv_dnnl,
    conv_ort,
    dnnl_lib,
    dnnl_plan,
    norm_cpu,
    norm_dnnl,
    pooling_dnnl,
)
from tests.ops.conv_kernels import CPU, in_layout, needs_onednn, recording, use_kernels
from tests.ops.harness import assert_close, opdef

POOLS = [
    {"pool_type": "max", "kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)},
    {"pool_type": "max", "kernel": (3, 3), "stride": (2, 2), "pooling_convention": "full"},
    {"pool_type": "avg", "kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)},
    {"pool_type": "avg", "kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "count_include_pad": 0},
    {"pool_type": "avg", "kernel": (2, 2), "stride": (1, 1), "pooling_convention": "full"},
    {"pool_type": "max", "kernel": (2,), "stride": (1,)},
    {"pool_type": "avg", "kernel": (2, 2, 2), "stride": (1, 2, 1), "pad": (1, 0, 1)},
]


def _pool(attrs, x, head, is_train=True):
    op = opdef("Pooling")
    params = op.parse(attrs)
    ctx = OpContext(is_train, CPU.backend, CPU.device_id)
    outs, saved = op.forward(ctx, params, [x], [])
    grads = op.backward(ctx, params, saved, [head], [True]) if is_train else [None]
    return outs[0], grads[0]


@needs_onednn
@pytest.mark.parametrize("attrs", POOLS, ids=str)
def test_pooling_of_channels_last_views(attrs, monkeypatch):
    rng = np.random.default_rng(5)
    shape = (2, 16, 9, 11, 5)[: 2 + len(attrs["kernel"])]
    x = rng.standard_normal(shape).astype(np.float32).round(1)  # ties among the maxima
    taken = []
    forward = pooling_dnnl.forward
    monkeypatch.setattr(pooling_dnnl, "forward", lambda *a: taken.append(1) or forward(*a))
    out, _ = _pool(attrs, x, None, is_train=False)
    head = rng.standard_normal(out.shape).astype(np.float32)
    expected = _pool(attrs, x, head)
    assert taken == []  # MXNet's layout: the NumPy kernels
    for head_layout in ("plain", "channels_last"):
        got = _pool(attrs, in_layout(x, "channels_last"), in_layout(head, head_layout))
        assert len(taken) == 1 + (head_layout == "channels_last")
        for name, a, e in zip(("output", "gradient"), got, expected, strict=True):
            assert dnnl_plan.is_channels_last(a), name
            assert_close(a, e, f"{name}, head {head_layout}")


def test_pooling_takes_only_what_it_counts_as_mxnet():
    x = in_layout(np.zeros((2, 16, 8, 8), np.float32), "channels_last")
    params = opdef("Pooling").parse
    window = _window(params({"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)}), x)
    assert not pooling_dnnl.takes(np, np.zeros((2, 16, 8, 8), np.float32), "max", window, True)
    assert not pooling_dnnl.takes(np, x, "lp", window, True)
    assert not pooling_dnnl.takes(np, x, "sum", window, True)
    assert not pooling_dnnl.takes(np, x.astype(np.float64), "max", window, True)
    # an average window past the symmetric pad ('full') would count other elements
    full = _window(params({"kernel": (3, 3), "stride": (2, 2), "pooling_convention": "full"}), x)
    assert pooling_dnnl.takes(np, x, "max", full, True) == (dnnl_lib.library() is not None)
    assert not pooling_dnnl.takes(np, x, "avg", full, True)


def _window(params, x):
    from rebind.ops.pooling import window_of

    return window_of(params, x.shape[2:])


def _batchnorm(attrs, x, head, aux, is_train=True):
    op = opdef("BatchNorm")
    params = op.parse({"eps": 1e-5, "output_mean_var": True, **attrs})
    ctx = OpContext(is_train, CPU.backend, CPU.device_id)
    rng = np.random.default_rng(2)
    gamma = rng.standard_normal(x.shape[1]).astype(np.float32)
    beta = rng.standard_normal(x.shape[1]).astype(np.float32)
    outs, saved = op.forward(ctx, params, [x, gamma, beta], aux)
    grads = op.backward(ctx, params, saved, [head, None, None], [True, True, True])
    return [*outs, *grads, *aux]


BATCHNORMS = [
    {},
    {"fix_gamma": True},
    {"use_global_stats": True},
    {"fix_gamma": True, "use_global_stats": True, "momentum": 0.5},
]


@pytest.mark.parametrize("attrs", BATCHNORMS, ids=str)
@pytest.mark.parametrize("engine", ["onednn", "numpy rows"])
def test_batchnorm_of_channels_last_views(attrs, engine, monkeypatch):
    if engine == "onednn" and dnnl_lib.library() is None:
        pytest.skip(f"oneDNN did not load: {dnnl_lib.missing_reason()}")
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((4, 32, 5, 6)) * 2 + 1).astype(np.float32)
    head = rng.standard_normal(x.shape).astype(np.float32)

    def aux():
        return [np.full(32, 0.5, np.float32), np.full(32, 2.0, np.float32)]

    expected = _batchnorm(attrs, x, head, aux())
    if engine == "numpy rows":
        monkeypatch.setattr(dnnl_lib, "_loaded", lambda: (None, "hidden by the test"))
    calls = []
    forward = norm_dnnl.forward
    monkeypatch.setattr(norm_dnnl, "forward", lambda *a: calls.append(1) or forward(*a))
    got = _batchnorm(attrs, in_layout(x, "channels_last"), in_layout(head, "channels_last"), aux())
    # oneDNN only with given statistics: its float32 sums of a batch's were not MXNet's
    assert calls == ([1] if engine == "onednn" and attrs.get("use_global_stats") else [])
    names = ("output", "mean", "invstd", "data grad", "gamma grad", "beta grad", "moving mean")
    for name, a, e in zip((*names, "moving var"), got, expected, strict=True):
        assert_close(a, e, name)
    assert dnnl_plan.is_channels_last(got[0]) and dnnl_plan.is_channels_last(got[3])


def test_rows_of_a_channels_last_view_are_not_copied():
    x = in_layout(np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5), "channels_last")
    rows = norm_cpu._rows(x)
    assert np.shares_memory(rows, x) and rows.shape == (2, 20, 3)
    assert not norm_cpu._channels_last(np.zeros((2, 3, 4, 5), np.float32))


def _residual_net():
    data = mx.sym.var("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=16, name="c1")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="b1")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.Pooling(net, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max")
    branch = mx.sym.Convolution(net, kernel=(3, 3), pad=(1, 1), num_filter=16, name="c2")
    branch = mx.sym.BatchNorm(branch, name="b2")
    net = mx.sym.Activation(net + branch, act_type="relu")
    net = mx.sym.Pooling(net, global_pool=True, kernel=(1, 1), pool_type="avg")
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=5, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _train(setting, monkeypatch):
    use_kernels(monkeypatch, setting)
    mx.random.seed(11)
    module = mx.mod.Module(_residual_net(), context=mx.cpu())
    rng = np.random.default_rng(4)
    data = mx.io.NDArrayIter(
        rng.standard_normal((32, 3, 12, 12)).astype(np.float32),
        rng.integers(0, 5, 32).astype(np.float32),
        batch_size=8,
    )
    module.fit(
        data,
        num_epoch=2,
        initializer=mx.init.Xavier(),
        optimizer_params={"learning_rate": 0.05, "momentum": 0.9},
    )
    args, auxs = module.get_params()
    data.reset()
    outputs = module.predict(data).asnumpy()
    conv_ort.kernels_setting.cache_clear()
    return outputs, {**args, **auxs}


@needs_onednn
def test_a_residual_network_trains_alike_on_onednn(monkeypatch):
    """Conv, BatchNorm, relu, pooling, a residual sum: two epochs, as on the NumPy kernels."""
    expected_out, expected = _train("numpy", monkeypatch)
    calls = []
    for module in (conv_dnnl, norm_dnnl, pooling_dnnl):
        calls += [recording(monkeypatch, module, ("forward", "backward"))]
    got_out, got = _train("onednn", monkeypatch)
    # the convolutions and the first pooling on oneDNN (the global one is NumPy's), the
    # BatchNorms of training on NumPy's rows and predict's on oneDNN
    assert [set(c) for c in calls] == [
        {"forward", "backward"},
        {"forward"},
        {"forward", "backward"},
    ]
    np.testing.assert_allclose(got_out, expected_out, rtol=1e-4, atol=1e-5)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name].asnumpy(), value.asnumpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("size", [3136, 100, 7])
def test_channel_sums_of_rows_hold_a_large_mean(size):
    """Sums over 64-row runs then float64: a mean of 100 standard deviations stays exact."""
    rng = np.random.default_rng(8)
    rows = (rng.standard_normal((16, size, 64)) + 100).astype(np.float32)
    expected = rows.astype(np.float64).sum(axis=(0, 1))
    got = norm_cpu._column_sums(rows)
    assert got.dtype == np.float64
    # one float32 run over the 3136 rows errs by 5e-7 of the sum
    np.testing.assert_allclose(got, expected, rtol=2e-7)
