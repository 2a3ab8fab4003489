"""Convolution + BatchNorm (+ relu) as one step (core/executor/fused_conv_bn.py).

Each network is bound twice, with the rewrite and with
``REBIND_GRAPH_OPT=-conv_batchnorm``, and fed the same values: inference
outputs agree up to float32 rounding (the BatchNorm folded into the weights
rounds otherwise), training outputs, gradients and moving statistics bit for
bit (the replaced steps run as they are).
"""

import numpy as np
import pytest

import rebind as mx
from rebind.executor.optimize import ENV_SWITCH
from rebind.ops import conv_dnnl, conv_ort, dnnl_lib
from tests.ops.conv_kernels import use_kernels

OFF = "-conv_batchnorm"
SEED = 20261129


def _conv_bn(data, name, *, depthwise=False, no_bias=False, fix_gamma=False, relu=True, **bn):
    channels = 6
    conv = mx.sym.Convolution(
        data,
        kernel=(3, 3),
        pad=(1, 1),
        num_filter=channels,
        num_group=channels if depthwise else 1,
        no_bias=no_bias,
        name=f"{name}_conv",
    )
    out = mx.sym.BatchNorm(conv, fix_gamma=fix_gamma, eps=1e-5, name=f"{name}_bn", **bn)
    return mx.sym.Activation(out, act_type="relu", name=f"{name}_relu") if relu else out


def _stack(no_bias=False, fix_gamma=False):
    """A full convolution, then a depthwise one, each with BatchNorm and relu; max pooling."""
    net = _conv_bn(mx.sym.Variable("data"), "full", no_bias=no_bias, fix_gamma=fix_gamma)
    net = _conv_bn(net, "dw", depthwise=True, no_bias=not no_bias, fix_gamma=not fix_gamma)
    return mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")


SHAPE = (4, 6, 8, 8)


def _bind(symbol, monkeypatch, fused, shape=SHAPE, grad_req="null"):
    """Bound without gradients (a module's ``for_training=False``): the rewrite's plans."""
    monkeypatch.setenv(ENV_SWITCH, "1" if fused else OFF)
    return symbol.simple_bind(mx.cpu(), data=shape, grad_req=grad_req)


def _fill(executor):
    rng = np.random.default_rng(SEED)
    for _, array in sorted(executor.arg_dict.items()):
        array[:] = rng.standard_normal(array.shape)
    for name, array in sorted(executor.aux_dict.items()):
        low = 0.5 if name.endswith("var") else -0.5
        array[:] = rng.uniform(low, 1.5, array.shape)
    return rng


def _kinds(executor):
    return [kind for kind, _, _ in executor._plan.optimizations]


def _inference(executor):
    _fill(executor)
    return [o.asnumpy() for o in executor.forward(is_train=False)]


def _training(executor):
    rng = _fill(executor)
    outputs = [o.asnumpy() for o in executor.forward(is_train=True)]
    executor.backward([mx.nd.array(rng.standard_normal(o.shape)) for o in outputs])
    grads = {n: g.asnumpy() for n, g in executor.grad_dict.items() if g is not None}
    aux = {n: a.asnumpy() for n, a in executor.aux_dict.items()}
    return outputs, grads, aux


def _assert_close(got, expected):
    """Within 1e-5 of the expected output's magnitude (folding rounds otherwise)."""
    for g, e in zip(got, expected, strict=True):
        scale = float(np.abs(e).max())
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5 * scale)


def _assert_equal(got, expected):
    outputs, grads, aux = got
    for g, e in zip(outputs, expected[0], strict=True):
        np.testing.assert_array_equal(g, e)
    for mine, theirs in ((grads, expected[1]), (aux, expected[2])):
        assert sorted(mine) == sorted(theirs)
        for name in theirs:
            np.testing.assert_array_equal(mine[name], theirs[name], err_msg=name)


needs_onednn = pytest.mark.skipif(
    dnnl_lib.library() is None, reason=f"oneDNN did not load: {dnnl_lib.missing_reason()}"
)


@pytest.mark.parametrize("no_bias", [False, True], ids=["bias", "no-bias"])
@pytest.mark.parametrize("fix_gamma", [False, True], ids=["gamma", "fix-gamma"])
def test_inference_is_the_plain_plans_up_to_rounding(monkeypatch, no_bias, fix_gamma):
    symbol = _stack(no_bias, fix_gamma)
    fused, plain = _bind(symbol, monkeypatch, True), _bind(symbol, monkeypatch, False)
    assert _kinds(fused).count("conv_batchnorm") == 2
    assert "conv_batchnorm" not in _kinds(plain)
    names = [name for kind, name, _ in fused._plan.optimizations if kind == "conv_batchnorm"]
    assert names == ["full_conv+full_bn+full_relu", "dw_conv+dw_bn+dw_relu"]
    _assert_close(_inference(fused), _inference(plain))


@needs_onednn
def test_inference_runs_one_onednn_convolution_with_the_relu(monkeypatch):
    calls = []
    original = conv_dnnl.inference_forward

    def counted(data, weight, bias, window, groups, relu=False, scale=None):
        calls.append((relu, scale is not None))
        return original(data, weight, bias, window, groups, relu, scale)

    monkeypatch.setattr(conv_dnnl, "inference_forward", counted)
    executor = _bind(_stack(), monkeypatch, True)
    _inference(executor)
    assert calls == [(True, True), (True, True)]


@pytest.mark.parametrize("groups", [2, 3], ids=["two-groups", "three-groups"])
def test_grouped_convolutions_scale_each_filter(monkeypatch, groups):
    """Grouped weights (groups, filters per group, ...): each filter gets its channel's scale."""
    data = mx.sym.Variable("data")
    conv = mx.sym.Convolution(data, kernel=(1, 1), num_filter=12, num_group=groups, name="c")
    symbol = mx.sym.BatchNorm(conv, fix_gamma=False, name="bn")
    fused, plain = _bind(symbol, monkeypatch, True), _bind(symbol, monkeypatch, False)
    assert fused._plan.optimizations == [("conv_batchnorm", "c+bn", 2)]
    _assert_close(_inference(fused), _inference(plain))


@pytest.mark.parametrize("use_global_stats", [False, True], ids=["batch-stats", "global-stats"])
@pytest.mark.parametrize("no_bias", [False, True], ids=["bias", "no-bias"])
@pytest.mark.parametrize("fix_gamma", [False, True], ids=["gamma", "fix-gamma"])
def test_a_training_pass_is_the_plain_plans_bit_for_bit(
    monkeypatch, no_bias, fix_gamma, use_global_stats
):
    """forward(is_train=True) of an executor bound without gradients: batch statistics, the
    moving statistics updated in backward."""
    net = _conv_bn(
        mx.sym.Variable("data"),
        "a",
        no_bias=no_bias,
        fix_gamma=fix_gamma,
        use_global_stats=use_global_stats,
    )
    symbol = mx.sym.Pooling(_conv_bn(net, "b", depthwise=True), kernel=(2, 2), pool_type="max")
    fused, plain = _bind(symbol, monkeypatch, True), _bind(symbol, monkeypatch, False)
    assert _kinds(fused).count("conv_batchnorm") == 2
    _assert_equal(_training(fused), _training(plain))


@pytest.fixture
def numpy_kernels(monkeypatch):
    """``REBIND_CONV_KERNELS=numpy`` for the test (the setting is otherwise read once)."""
    use_kernels(monkeypatch, "numpy")
    yield
    conv_ort.kernels_setting.cache_clear()


def test_without_onednn_kernels_inference_runs_the_replaced_steps(monkeypatch, numpy_kernels):
    symbol = _stack()
    fused, plain = _bind(symbol, monkeypatch, True), _bind(symbol, monkeypatch, False)
    assert _kinds(fused).count("conv_batchnorm") == 2
    for got, expected in zip(_inference(fused), _inference(plain), strict=True):
        np.testing.assert_array_equal(got, expected)


def test_a_batchnorm_without_relu_is_folded_alone(monkeypatch):
    """ResNet's shortcut: Convolution + BatchNorm, then a sum; a 1-D convolution."""
    data = mx.sym.Variable("data")
    conv = mx.sym.Convolution(data, kernel=(3,), pad=(1,), num_filter=6, name="c")
    symbol = mx.sym.BatchNorm(conv, name="bn") + data
    shape = (3, 6, 10)
    fused, plain = _bind(symbol, monkeypatch, True, shape), _bind(symbol, monkeypatch, False, shape)
    assert fused._plan.optimizations == [("conv_batchnorm", "c+bn", 2)]
    _assert_close(_inference(fused), _inference(plain))
    _assert_equal(_training(fused), _training(plain))


def test_a_batchnorm_output_read_twice_keeps_its_relu_apart(monkeypatch):
    normed = _conv_bn(mx.sym.Variable("data"), "x", relu=False)
    symbol = mx.sym.Activation(normed, act_type="relu", name="relu") + normed
    fused, plain = _bind(symbol, monkeypatch, True), _bind(symbol, monkeypatch, False)
    assert [(k, n) for k, n, _ in fused._plan.optimizations if k == "conv_batchnorm"] == [
        ("conv_batchnorm", "x_conv+x_bn")
    ]
    _assert_close(_inference(fused), _inference(plain))
    _assert_equal(_training(fused), _training(plain))


def test_a_convolution_read_twice_or_a_head_is_not_fused(monkeypatch):
    data = mx.sym.Variable("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=6, name="c")
    relu = mx.sym.Activation(mx.sym.BatchNorm(conv, name="bn"), act_type="relu")
    read_twice = relu + conv
    a_head = mx.sym.Group([relu, conv])
    for symbol in (read_twice, a_head):
        executor = _bind(symbol, monkeypatch, True)
        assert "conv_batchnorm" not in _kinds(executor)


@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_plans_bound_with_gradients_keep_their_training_rewrites(monkeypatch, grad_req):
    executor = _bind(_stack(), monkeypatch, True, grad_req=grad_req)
    assert "conv_batchnorm" not in _kinds(executor)
    # one argument with a gradient is enough (fine-tuning the last layers)
    reqs = {name: "null" for name in _stack().list_arguments()}
    reqs["dw_bn_beta"] = grad_req
    assert "conv_batchnorm" not in _kinds(_bind(_stack(), monkeypatch, True, grad_req=reqs))


def test_the_switch_names_the_rewrite(monkeypatch):
    from rebind.executor.optimize import REWRITES

    assert "conv_batchnorm" in REWRITES
    assert "conv_batchnorm" in _kinds(_bind(_stack(), monkeypatch, True))
    monkeypatch.setenv(ENV_SWITCH, "0")
    plan = _stack().simple_bind(mx.cpu(), data=SHAPE, grad_req="null")._plan
    assert plan.optimizations == []
