"""The operators' GPU branches, run on the host: the same results as their CPU branches.

Each operator with a CuPy kernel picks it when ``fusable`` says its arrays are
CuPy's. Here ``fusable`` says so for NumPy arrays and every kernel is built by
``HostCupy`` (host_kernels.py), so whole networks run forward and backward
through the code the GPU runs: which kernel, with which arguments, what is
saved for backward, what is written in place. The results must be the CPU
branches' (bit for bit where the kernels hold no transcendental function, to
float rounding where the C library's tanh or exp stands in for NumPy's).
"""

import numpy as np
import pytest

import rebind as mx
from rebind.backends import (
    cupy_conv_kernels,
    cupy_gru_layer_kernels,
    cupy_gru_warp_kernels,
    cupy_kernels,
    cupy_layer_kernels,
    cupy_layer_warp_kernels,
    cupy_nn_kernels,
    cupy_rnn_kernels,
    cupy_row_kernels,
    cupy_window_kernels,
)
from rebind.executor import (
    fused_conv,
    fused_dense,
    fused_gru_layer,
    fused_layer,
    fused_lstm,
    fused_ops,
)
from rebind.ops import (
    activation_extra,
    conv,
    conv_dnnl,
    conv_utils,
    loss,
    nn,
    norm,
    norm_cpu,
    norm_dnnl,
    pooling,
    pooling_cpu,
    pooling_dnnl,
    rnn_cells,
)

from .host_kernels import compiler

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler to build kernels")

OP_MODULES = (
    activation_extra, conv, conv_dnnl, conv_utils, loss, nn, norm, norm_cpu, norm_dnnl,
    pooling, pooling_cpu, pooling_dnnl,
    rnn_cells, fused_lstm, fused_layer, fused_gru_layer, fused_ops, fused_dense, fused_conv,
)  # fmt: skip
KERNEL_MODULES = (
    cupy_conv_kernels, cupy_gru_layer_kernels, cupy_gru_warp_kernels, cupy_layer_kernels,
    cupy_layer_warp_kernels, cupy_nn_kernels, cupy_rnn_kernels, cupy_row_kernels,
    cupy_window_kernels,
)  # fmt: skip


def _fusable_on_host(*arrays, contiguous=False, **options):
    """``fusable`` for NumPy arrays standing for CuPy's: yes, C-contiguous where asked."""
    return not contiguous or all(a.flags.c_contiguous for a in arrays if a is not None)


def _through_host_kernels(patch, host_cupy, launched):
    """Make every operator take its GPU branch, with kernels built for the host."""
    patch.setattr(cupy_kernels, "_KERNELS", {})
    for module in OP_MODULES:
        patch.setattr(module, "fusable", _fusable_on_host)
    for module in KERNEL_MODULES:
        for name in module.__all__:
            function = getattr(module, name)
            if not callable(function) or name in (
                "window_geometry",
                "with_product",
                "MAX_WIDTH",
                "MAX_COLUMN_ROWS",
            ):
                continue

            def launch(_xp, *args, _function=function, _name=name):
                launched.append(_name)
                return _function(host_cupy, *args)

            patch.setattr(module, name, launch)


def _cnn():
    data = mx.sym.var("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn")
    net = mx.sym.Activation(net, act_type="relu", name="relu")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    net = mx.sym.Dropout(net, p=0.3, mode="always", name="drop")
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=6, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh")
    net = mx.sym.FullyConnected(net, num_hidden=5, name="fc2")
    net = mx.sym.Activation(net, act_type="sigmoid", name="sigmoid")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _lstm_lm():
    data = mx.sym.var("data")
    cell = mx.rnn.LSTMCell(num_hidden=6, prefix="l0_")
    outputs, _ = cell.unroll(3, inputs=data, merge_outputs=True, layout="NTC")
    net = mx.sym.FullyConnected(mx.sym.reshape(outputs, shape=(-1, 6)), num_hidden=4)
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _rnn_op():
    data = mx.sym.var("data")
    rnn = mx.sym.RNN(data, mode="gru", state_size=5, num_layers=1, state_outputs=False, name="rnn")
    net = mx.sym.FullyConnected(mx.sym.reshape(rnn, shape=(-1, 5)), num_hidden=3)
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _rnn_lstm(mode="lstm", bidirectional=False):
    data = mx.sym.var("data")
    rnn = mx.sym.RNN(
        data,
        mode=mode,
        state_size=5,
        num_layers=2,
        bidirectional=bidirectional,
        state_outputs=False,
        name="rnn",
    )
    width = 10 if bidirectional else 5
    net = mx.sym.FullyConnected(mx.sym.reshape(rnn, shape=(-1, width)), num_hidden=3)
    return mx.sym.SoftmaxOutput(net, name="softmax")


NETWORKS = {
    "cnn": (_cnn, {"data": (4, 2, 10, 10), "softmax_label": (4,)}, 5),
    "lstm cells": (_lstm_lm, {"data": (2, 3, 4), "softmax_label": (6,)}, 4),
    "rnn op": (_rnn_op, {"data": (3, 2, 4), "softmax_label": (6,)}, 3),
    "rnn op lstm": (_rnn_lstm, {"data": (4, 2, 3), "softmax_label": (8,)}, 3),
    "rnn op bidirectional lstm": (
        lambda: _rnn_lstm(bidirectional=True),
        {"data": (4, 2, 3), "softmax_label": (8,)},
        3,
    ),
    "rnn op bidirectional gru": (
        lambda: _rnn_lstm(mode="gru", bidirectional=True),
        {"data": (4, 2, 3), "softmax_label": (8,)},
        3,
    ),
}

# every kind of kernel each network has, forward and backward
KERNELS = {
    "cnn": {
        "col2im",
        "max_pool_forward",
        "max_pool_backward",
        "activation_forward",
        "activation_backward",
        "dropout_forward",
        "batchnorm_normalize",
        "batchnorm_input_grad",
        "subtract_label_ones",
        "softmax_rows",
    },
    "lstm cells": {"lstm_cell_forward", "lstm_cell_backward", "softmax_rows"},
    # the GRU's recurrent products inside its step kernels too (a narrow layer's)
    "rnn op": {"rnn_gru_forward_with_product", "rnn_gru_backward_with_product", "softmax_rows"},
    # the recurrent products inside the step kernels (a narrow layer's)
    "rnn op lstm": {
        "rnn_lstm_forward_with_product",
        "rnn_lstm_backward_with_product",
        "softmax_rows",
    },
    # each direction on contiguous copies of its views
    "rnn op bidirectional lstm": {
        "rnn_lstm_forward_with_product",
        "rnn_lstm_backward_with_product",
        "softmax_rows",
    },
    "rnn op bidirectional gru": {
        "rnn_gru_forward_with_product",
        "rnn_gru_backward_with_product",
        "softmax_rows",
    },
}


def _run(make, shapes, classes):
    mx.random.seed(7)  # Dropout's draws: the same in both runs
    symbol = make()
    executor = symbol.simple_bind(mx.cpu(), **shapes)
    rng = np.random.default_rng(3)
    for name, array in executor.arg_dict.items():
        if name == "softmax_label":
            array[:] = rng.integers(0, classes, array.shape)
        else:
            array[:] = rng.standard_normal(array.shape) * 0.5
    results = []
    for _ in range(2):
        results += [o.asnumpy() for o in executor.forward(is_train=True)]
        executor.backward()
        results += [g.asnumpy() for g in executor.grad_arrays if g is not None]
        for name, grad in executor.grad_dict.items():
            if name not in ("data", "softmax_label"):
                executor.arg_dict[name][:] -= grad * 0.1
    results += [a.asnumpy() for a in executor.aux_arrays]
    return results


@pytest.mark.parametrize("name", list(NETWORKS))
def test_gpu_branches_compute_what_the_cpu_branches_do(host_cupy, monkeypatch, name):
    from rebind.backends import cupy_layer_kernels as layer_kernels

    make, shapes, classes = NETWORKS[name]
    expected = _run(make, shapes, classes)
    launched = []
    with monkeypatch.context() as patch:
        _through_host_kernels(patch, host_cupy, launched)
        # the RNN operator's thread kernels (over warps, the default: the test after next)
        patch.setattr(layer_kernels, "PRODUCTS_OVER_WARPS", False)
        got = _run(make, shapes, classes)
    assert KERNELS[name] <= set(launched), KERNELS[name] - set(launched)
    for value, reference in zip(got, expected, strict=True):
        np.testing.assert_allclose(value, reference, rtol=1e-5, atol=1e-6)


WIDE_RNN_OPERATORS = [
    ("rnn op lstm", "lstm"),
    ("rnn op", "gru"),
    ("rnn op bidirectional gru", "gru"),
]


@pytest.mark.parametrize(("name", "kind"), WIDE_RNN_OPERATORS)
def test_a_wide_rnn_operator_takes_cublas_products_beside_its_step_kernels(
    host_cupy, monkeypatch, name, kind
):
    from rebind.backends import cupy_layer_kernels as layer_kernels

    make, shapes, classes = NETWORKS[name]
    expected = _run(make, shapes, classes)
    launched = []
    with monkeypatch.context() as patch:
        _through_host_kernels(patch, host_cupy, launched)
        patch.setattr(layer_kernels, "MAX_HIDDEN_WITH_PRODUCT", 0)
        got = _run(make, shapes, classes)
    assert {f"{kind}_step_forward", f"{kind}_step_backward"} <= set(launched)
    assert not {f"rnn_{kind}_forward_{way}" for way in ("with_product", "over_warps")} & set(
        launched
    )
    for value, reference in zip(got, expected, strict=True):
        np.testing.assert_allclose(value, reference, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("rnn op lstm", "lstm"),
        ("rnn op bidirectional lstm", "lstm"),
        ("rnn op", "gru"),
        ("rnn op bidirectional gru", "gru"),
    ],
)
def test_the_rnn_operator_over_warps_computes_what_the_cpu_does(host_cupy, monkeypatch, name, kind):
    from rebind.backends import cupy_layer_kernels as layer_kernels

    make, shapes, classes = NETWORKS[name]
    expected = _run(make, shapes, classes)
    launched = []
    with monkeypatch.context() as patch:
        _through_host_kernels(patch, host_cupy, launched)
        patch.setattr(layer_kernels, "PRODUCTS_OVER_WARPS", True)
        got = _run(make, shapes, classes)
    assert {f"rnn_{kind}_forward_over_warps", f"rnn_{kind}_backward_over_warps"} <= set(launched)
    assert f"rnn_{kind}_forward_with_product" not in launched
    for value, reference in zip(got, expected, strict=True):
        np.testing.assert_allclose(value, reference, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("classes", [100, 1000])
def test_a_wide_softmax_output_takes_the_warp_kernel_with_its_bias(tmp_path, monkeypatch, classes):
    # FullyConnected + SoftmaxOutput of more classes than a thread a row suits: one warp a
    # row, the bias added inside, the CPU's values
    from .host_kernels import HostCupy

    def make():
        net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=classes, name="fc")
        return mx.sym.SoftmaxOutput(net, name="softmax")

    shapes = {"data": (6, 5), "softmax_label": (6,)}
    expected = _run(make, shapes, classes)
    fresh, launched = HostCupy(tmp_path), []
    with monkeypatch.context() as patch:
        _through_host_kernels(patch, fresh, launched)
        got = _run(make, shapes, classes)
    assert {name for _, _, _, name in fresh.calls} >= {"rebind_softmax_wide_bias_rows"}
    for value, reference in zip(got, expected, strict=True):
        np.testing.assert_allclose(value, reference, rtol=1e-5, atol=1e-6)
