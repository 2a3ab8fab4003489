"""BatchNormWithReLU (mx.contrib): BatchNorm followed by ReLU."""

import json

import numpy as np
import pytest

import rebind as mx
from tests.ops.harness import case_ids, infer, replay_golden


@pytest.mark.parametrize("case_id", case_ids("_contrib_BatchNormWithReLU"))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def test_shapes_match_batch_norm():
    shapes, outs, aux = infer("_contrib_BatchNormWithReLU", {}, [(2, 5, 3, 3), None, None])
    assert shapes[1:] == [(5,), (5,)] and aux == [(5,), (5,)] and outs == [(2, 5, 3, 3)]


def _bind(x, gamma, beta, **attrs):
    """An executor of BatchNormWithReLU over ``x``, gamma and beta set, in training mode."""
    net = mx.sym.contrib.BatchNormWithReLU(mx.sym.var("data"), name="bn", **attrs)
    exe = net.simple_bind(mx.cpu(), data=x.shape)
    exe.arg_dict["data"][:] = x
    exe.arg_dict["bn_gamma"][:] = gamma
    exe.arg_dict["bn_beta"][:] = beta
    exe.forward(is_train=True)
    return exe


def test_three_dimensional_data_over_the_last_axis():
    # MXNet's MKL-DNN kernel takes only 4-D data over axis 1 (documented difference):
    # by definition this is relu((x - mean) / sqrt(var + eps) * gamma + beta) over axis 2
    x = np.random.default_rng(1).normal(size=(3, 4, 2)).astype("float32")
    gamma, beta = np.array([1.5, 0.5], "float32"), np.array([0.1, -0.2], "float32")
    exe = _bind(x, gamma, beta, axis=-1, fix_gamma=False, eps=1e-5)
    mean, var = x.mean((0, 1)), x.var((0, 1))
    want = np.maximum((x - mean) / np.sqrt(var + 1e-5) * gamma + beta, 0)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_gradient_is_zero_where_relu_cuts():
    x = np.random.default_rng(2).normal(size=(6, 2, 1, 1)).astype("float32")
    exe = _bind(x, np.ones(2), np.full(2, -5.0), fix_gamma=False)  # every output cut to 0
    exe.backward([mx.nd.ones(x.shape)])
    assert not exe.outputs[0].asnumpy().any()
    assert not exe.grad_dict["data"].asnumpy().any()
    assert not exe.grad_dict["bn_gamma"].asnumpy().any()
    np.testing.assert_array_equal(exe.grad_dict["bn_beta"].asnumpy(), [0.0, 0.0])


def test_json_counts_the_hidden_workspace():
    # MXNet's node has 4 outputs (output, mean, var, workspace), 1 or 3 of them visible
    net = mx.sym.contrib.BatchNormWithReLU(mx.sym.var("data"), name="bn")
    assert net.list_outputs() == ["bn_output"]
    rows = json.loads(net.tojson())["node_row_ptr"]
    assert rows[-1] - rows[-2] == 4
