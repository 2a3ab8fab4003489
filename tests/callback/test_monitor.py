"""mx.monitor.Monitor on an executor: statistics against NumPy, pattern, sort, interval."""

import logging

import numpy as np
import pytest

import rebind as mx

SHAPES = {
    "data": (4, 5),
    "fc1_weight": (3, 5),
    "fc1_bias": (3,),
    "fc2_weight": (2, 3),
    "fc2_bias": (2,),
}


def bound_network(ctx):
    """fc1 -> relu1 -> fc2, bound with seeded random arguments; returns (executor, host args)."""
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=2, name="fc2")
    exe = net.simple_bind(ctx, data=SHAPES["data"])
    rng = np.random.default_rng(7)
    host = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in SHAPES.items()}
    for name, value in host.items():
        exe.arg_dict[name][:] = value
    return exe, host


def expected_arrays(host):
    """Every array the monitor sees, computed with NumPy."""
    fc1 = host["data"] @ host["fc1_weight"].T + host["fc1_bias"]
    relu = np.maximum(fc1, 0)
    fc2 = relu @ host["fc2_weight"].T + host["fc2_bias"]
    return {**host, "fc1_output": fc1, "relu1_output": relu, "fc2_output": fc2}


def rms(array):
    return np.linalg.norm(array) / np.sqrt(array.size)


def run_step(mon, exe):
    mon.tic()
    exe.forward(is_train=False)
    return mon.toc()


def test_default_statistic_is_the_norm_over_sqrt_size(ctx):
    exe, host = bound_network(ctx)
    mon = mx.monitor.Monitor(1)
    mon.install(exe)
    results = run_step(mon, exe)
    expected = expected_arrays(host)
    assert [name for _, name, _ in results] == [
        "fc1_output",
        "relu1_output",
        "fc2_output",
        *SHAPES,
    ]
    for step, name, text in results:
        assert step == 1
        assert text.endswith("\t")
        np.testing.assert_allclose(float(text), rms(expected[name]), rtol=1e-5)


def test_pattern_filters_and_sort_orders_by_name(ctx):
    exe, _ = bound_network(ctx)
    mon = mx.monitor.Monitor(1, pattern="fc2|relu", sort=True)
    mon.install(exe)
    names = [name for _, name, _ in run_step(mon, exe)]
    assert names == ["fc2_bias", "fc2_output", "fc2_weight", "relu1_output"]
    # re.match is anchored at the start: 'output' matches nothing
    mon = mx.monitor.Monitor(1, pattern="output")
    mon.install(exe)
    assert run_step(mon, exe) == []


def test_interval_activates_every_nth_step(ctx):
    exe, _ = bound_network(ctx)
    mon = mx.monitor.Monitor(2, pattern="fc2_output")
    mon.install(exe)
    steps = [[step for step, _, _ in run_step(mon, exe)] for _ in range(5)]
    assert steps == [[1], [], [3], [], [5]]
    assert mon.toc() == []  # a toc without tic after the last one collects nothing


def test_monitor_all_sees_op_inputs_and_a_custom_statistic_list(ctx):
    exe, host = bound_network(ctx)

    def stats(array):
        return [mx.nd.max(array), mx.nd.min(array).reshape((1, 1))]

    mon = mx.monitor.Monitor(1, stat_func=stats, pattern="relu1_input0", monitor_all=True)
    mon.install(exe)
    [(step, name, text)] = run_step(mon, exe)
    fc1 = expected_arrays(host)["fc1_output"]
    high, low = text.split("\t")[:2]
    assert name == "relu1_input0"  # MXNet: Activation has no input names
    np.testing.assert_allclose(float(high), fc1.max(), rtol=1e-6)
    assert low == str(np.array([[fc1.min()]], dtype=np.float32))


def test_toc_print_logs_one_line_per_statistic(ctx, caplog):
    caplog.set_level(logging.INFO)
    exe, host = bound_network(ctx)
    mon = mx.monitor.Monitor(1, pattern="fc1_bias")
    mon.install(exe)
    mon.tic()
    exe.forward()
    mon.toc_print()
    value = np.float32(rms(host["fc1_bias"]))
    [line] = caplog.messages
    assert line.startswith(f"Batch: {1:7d} {'fc1_bias':30s} ")
    np.testing.assert_allclose(float(line.split()[-1]), value, rtol=1e-5)


def test_stat_func_must_return_ndarrays(ctx):
    exe, _ = bound_network(ctx)
    mon = mx.monitor.Monitor(1, stat_func=lambda array: 1.0, pattern="fc1_bias")
    mon.install(exe)
    with pytest.raises(TypeError, match="stat_func must return an NDArray"):
        run_step(mon, exe)


# what MXNet 1.9.1's Monitor reports for one forward_backward of this network (its
# test_module.py::test_monitor; names recorded from MXNet 1.9.1)
MXNET_MONITOR_NAMES = [
    "act_0_backward_output", "act_0_output", "act_1_backward_output", "act_1_output", "data",
    "fc_0_backward_output0", "fc_0_backward_output1", "fc_0_backward_output2", "fc_0_bias",
    "fc_0_output", "fc_0_weight", "fc_1_backward_output0", "fc_1_backward_output1",
    "fc_1_backward_output2", "fc_1_bias", "fc_1_output", "fc_1_weight",
    "softmax_backward_output0", "softmax_backward_output1", "softmax_label", "softmax_output",
]  # fmt: skip


def test_module_monitor_sees_backward_outputs_as_mxnet_names_them(ctx):
    x = mx.sym.Variable("data")
    x = mx.sym.FullyConnected(x, name="fc_0", num_hidden=2)
    x = mx.sym.Activation(x, name="act_0", act_type="sigmoid")
    x = mx.sym.FullyConnected(x, name="fc_1", num_hidden=2)
    x = mx.sym.Activation(x, name="act_1", act_type="sigmoid")
    x = mx.sym.LinearRegressionOutput(x, name="softmax", grad_scale=2)
    data = mx.io.NDArrayIter(np.array([[0.05, 0.10]]), np.array([[0.01, 0.99]]), batch_size=1)
    mon = mx.mon.Monitor(1, stat_func=lambda a: a.abs().sum() / a.size, pattern=".*", sort=True)
    mod = mx.mod.Module(x, context=ctx)
    mod.bind(data.provide_data, label_shapes=data.provide_label, for_training=True)
    mod.install_monitor(mon)
    mod.init_params(initializer=mx.init.Uniform(0.5))
    mon.tic()
    mod.forward_backward(next(iter(data)))
    stats = {name: float(value) for _, name, value in mon.toc()}
    assert sorted(stats) == MXNET_MONITOR_NAMES
    grads = mod._exec_group.execs[0].grad_dict
    for index, name in enumerate(["fc_1_weight", "fc_1_bias"], start=1):
        expected = np.abs(grads[name].asnumpy()).mean()
        assert stats[f"fc_1_backward_output{index}"] == pytest.approx(expected, rel=1e-5)
    # nobody asked for the gradient of the data or of the label: shown as zeros
    assert stats["fc_0_backward_output0"] == 0 and stats["softmax_backward_output1"] == 0
