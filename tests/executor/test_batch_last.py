"""Convolution stacks handed over batch last (core/executor/batch_last.py) give the plain results.

Each case binds a symbol with and without the graph rewrites, feeds both the
same values and compares every output and gradient. Where the convolutions'
working layout is batch last in both (output rows shorter than 16), the
results are equal bit for bit; where the rewrite moves a convolution with long
rows to batch last, its weight and bias gradients sum in another order.
"""

import numpy as np
import pytest

import rebind as mx
from rebind.ops import conv_ort, conv_utils
from tests.executor.test_graph_optimize import IN_PLACE_ONLY, _bind, _compare, _fill, _run
from tests.ops.conv_kernels import use_kernels


@pytest.fixture(autouse=True)
def numpy_kernels(monkeypatch):
    """The hand-over is the NumPy kernels' (oneDNN's, where installed, hand channels-last
    views over instead: tests/ops/test_dnnl_layers.py)."""
    use_kernels(monkeypatch, "numpy")
    yield
    conv_ort.kernels_setting.cache_clear()


def _marked(executor):
    found = executor._plan.optimizations
    return [name for kind, name, _ in found if kind == "batch_last_output"]


def _kinds(executor, kind):
    return [name for k, name, _ in executor._plan.optimizations if k == kind]


def _cnn(pool1=None, pool2=None, act="tanh", classes=3, flatten=True):
    """LeNet's shape, small: conv, act, pool, conv, act, pool, flatten, fc, softmax."""
    pool1 = pool1 or {"pool_type": "max", "kernel": (2, 2), "stride": (2, 2)}
    pool2 = pool2 or {"pool_type": "max", "kernel": (2, 2), "stride": (2, 2)}
    net = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=4, name="conv1")
    net = mx.sym.Activation(net, act_type=act, name="act1")
    net = mx.sym.Pooling(net, name="pool1", **pool1)
    net = mx.sym.Convolution(net, kernel=(3, 3), num_filter=5, name="conv2")
    net = mx.sym.Activation(net, act_type=act, name="act2")
    net = mx.sym.Pooling(net, name="pool2", **pool2)
    net = mx.sym.Flatten(net) if flatten else net  # FullyConnected flattens by itself
    net = mx.sym.FullyConnected(net, num_hidden=classes, name="fc")
    return mx.sym.SoftmaxOutput(net, mx.sym.Variable("softmax_label"), name="softmax")


def _twice(symbol, ctx, monkeypatch, grad_req="write", switch="1", **shapes):
    """Outputs and gradients of the plain and the rewritten executor, and the latter."""
    results = []
    for optimized in (False, True):
        executor = _bind(symbol, ctx, monkeypatch, optimized, grad_req, switch, **shapes)
        _fill(executor, integer_inputs={"softmax_label": 3})
        results.append((executor, _run(executor)))
    return results[0][1], results[1][1], results[1][0]


def _assert_equal(got, expected):
    (out, grads), (plain_out, plain_grads) = got, expected
    for a, b in zip(out, plain_out, strict=True):
        np.testing.assert_array_equal(a, b)
    assert sorted(grads) == sorted(plain_grads)
    for name in grads:
        np.testing.assert_array_equal(grads[name], plain_grads[name], err_msg=name)


@pytest.mark.parametrize("act", ["tanh", "relu", "sigmoid"])
@pytest.mark.parametrize("flatten", [True, False])
def test_a_lenet_stack_runs_batch_last_and_equals_the_plain_graph(act, flatten, ctx, monkeypatch):
    symbol = _cnn(act=act, flatten=flatten)
    plain, rewritten, executor = _twice(symbol, ctx, monkeypatch, data=(6, 2, 14, 14))
    _assert_equal(rewritten, plain)
    on_cpu = ctx.device_type == "cpu"
    assert _marked(executor) == (["conv1", "conv2"] if on_cpu else [])
    # users see MXNet's layout: outputs and gradients C-contiguous
    assert executor.outputs[0]._data.flags.c_contiguous
    for name, grad in executor.grad_dict.items():
        assert grad._data.flags.c_contiguous, name
    if on_cpu:  # inside, the convolution's output is a view with the batch innermost
        step = executor._plan.steps[0]
        args = [executor.arg_dict[n]._data for n in ("data", "conv1_weight", "conv1_bias")]
        (out,), _ = step.op.forward(step.train_ctx, step.params, args, [])
        assert out.shape == (6, 4, 12, 12)
        assert out.strides[0] == out.itemsize and not out.flags.c_contiguous


def test_the_activations_after_convolutions_run_in_place(ctx, monkeypatch):
    plain, rewritten, executor = _twice(
        _cnn(), ctx, monkeypatch, switch=IN_PLACE_ONLY, data=(2, 1, 14, 14)
    )
    _assert_equal(rewritten, plain)
    assert _kinds(executor, "inplace_activation") == ["act1", "act2"]
    assert _kinds(executor, "inplace_activation_gradient") == ["act1", "act2"]


def test_inference_and_grad_req_add_equal_the_plain_graph(ctx, monkeypatch):
    symbol = _cnn()
    plain, rewritten, _ = _twice(symbol, ctx, monkeypatch, grad_req="add", data=(3, 1, 14, 14))
    _assert_equal(rewritten, plain)
    outputs = []
    for optimized in (False, True):
        executor = _bind(symbol, ctx, monkeypatch, optimized, data=(3, 1, 14, 14))
        _fill(executor, integer_inputs={"softmax_label": 3})
        outputs.append(_run(executor, is_train=False)[0][0])
    np.testing.assert_array_equal(outputs[1], outputs[0])


@pytest.mark.parametrize(
    "pool",
    [
        {"pool_type": "max", "kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)},
        {"pool_type": "avg", "kernel": (3, 3), "stride": (1, 1), "pad": (1, 1)},
        {"pool_type": "sum", "kernel": (2, 2), "stride": (2, 2)},
        {"pool_type": "max", "kernel": (3, 3), "stride": (2, 2), "pooling_convention": "full"},
    ],
)
def test_padded_and_overlapping_pooling_between_convolutions(pool, ctx, monkeypatch):
    plain, rewritten, executor = _twice(_cnn(pool1=pool), ctx, monkeypatch, data=(4, 2, 13, 13))
    _assert_equal(rewritten, plain)
    assert len(_marked(executor)) == (2 if ctx.device_type == "cpu" else 0)


def test_global_pooling_of_a_view_sums_in_memory_order(ctx, monkeypatch):
    """Global average pooling reduces the view along its memory order: float rounding apart."""
    net = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=4, name="c1")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.Pooling(net, pool_type="avg", global_pool=True, kernel=(1, 1))
    net = mx.sym.Convolution(net, kernel=(1, 1), num_filter=3, name="c2")
    net = mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=3)
    symbol = mx.sym.SoftmaxOutput(net, mx.sym.Variable("softmax_label"), name="softmax")
    executor = _compare(
        symbol, ctx, monkeypatch, integer_inputs={"softmax_label": 3}, data=(4, 2, 9, 9)
    )
    assert _marked(executor) == (["c1", "c2"] if ctx.device_type == "cpu" else [])


def test_long_rows_move_to_batch_last_and_stay_within_rounding(ctx, monkeypatch):
    """An output row of 20 would work as (C, N, H, W); handed over, it works batch last."""
    assert not conv_utils.batch_last_for(
        conv_utils.Window((3, 3), (1,) * 2, (1,) * 2, (0,) * 2, (22, 22), (20, 20))
    )
    executor = _compare(
        _cnn(), ctx, monkeypatch, integer_inputs={"softmax_label": 3}, data=(3, 2, 22, 22)
    )
    assert len(_marked(executor)) == (2 if ctx.device_type == "cpu" else 0)


def test_the_data_gradient_of_an_argument_is_computed_and_c_contiguous(ctx, monkeypatch):
    symbol = _cnn()
    results = []
    for optimized in (False, True):
        monkeypatch.setenv("REBIND_GRAPH_OPT", "1" if optimized else "0")
        executor = symbol.simple_bind(ctx, data=(2, 1, 14, 14))  # every argument's gradient
        _fill(executor, integer_inputs={"softmax_label": 3})
        results.append(_run(executor))
        assert executor.grad_dict["data"]._data.flags.c_contiguous
    _assert_equal(results[1], results[0])
    assert np.any(results[1][1]["data"] != 0)


def _conv(data):
    return mx.sym.Convolution(data, kernel=(3, 3), num_filter=2, name="conv")


def _relu_twice(data):
    hidden = mx.sym.Activation(_conv(data), act_type="relu")
    return mx.sym.Group([mx.sym.MakeLoss(mx.sym.sum(hidden)), hidden])


@pytest.mark.parametrize(
    "build",
    [
        # the convolution's output is a head
        lambda d: (lambda c: mx.sym.Group([mx.sym.MakeLoss(mx.sym.sum(c)), c]))(_conv(d)),
        # its activation's output is a head
        _relu_twice,
        # read by an operator outside the list (an element-wise product)
        lambda d: mx.sym.MakeLoss(mx.sym.sum(_conv(d) * 2)),
        # read by BatchNorm
        lambda d: mx.sym.MakeLoss(mx.sym.sum(mx.sym.BatchNorm(_conv(d), name="bn"))),
    ],
)
def test_outputs_users_see_or_other_operators_read_keep_mxnet_order(build, ctx, monkeypatch):
    symbol = build(mx.sym.Variable("data"))
    executor = _compare(symbol, ctx, monkeypatch, data=(2, 1, 6, 6))
    assert _marked(executor) == []
    for out in executor.outputs:
        assert out._data.flags.c_contiguous


def test_switch_and_monitor_leave_the_plain_graph(ctx, monkeypatch):
    monkeypatch.setenv("REBIND_GRAPH_OPT", "0")
    executor = _cnn().simple_bind(ctx, data=(2, 1, 14, 14))
    assert _marked(executor) == []


# -- the layout helpers -----------------------------------------------------------------------


def test_to_work_takes_a_batch_last_view_back_without_a_copy():
    rng = np.random.default_rng(1)
    work = rng.standard_normal((3, 4, 5, 2)).astype(np.float32)  # (C, H, W, N)
    view = conv_utils.from_work(np, work, True, view=True)
    assert view.shape == (2, 3, 4, 5)
    np.testing.assert_array_equal(view, conv_utils.from_work(np, work, True))
    back = conv_utils.to_work(np, view, True)
    assert back.flags.c_contiguous and np.shares_memory(back, work)
    np.testing.assert_array_equal(back, work)
    # an ordinary (N, C, H, W) array is still copied into the working order
    plain = np.ascontiguousarray(view)
    moved = conv_utils.to_work(np, plain, True)
    assert not np.shares_memory(moved, plain)
    np.testing.assert_array_equal(moved, work)


def test_empty_in_layout_follows_the_memory_order_of_its_model():
    model = np.zeros((3, 4, 5, 2), np.float32).transpose(3, 0, 1, 2)  # batch innermost
    made = conv_utils.empty_in_layout(np, model, (2, 3, 6, 7), fill=1.5)
    assert made.shape == (2, 3, 6, 7) and made.strides[0] == made.itemsize
    assert np.all(made == 1.5)
    made = conv_utils.empty_in_layout(np, model, (2, 3, 6, 7), np.float64)
    assert made.dtype == np.float64 and made.strides[0] == made.itemsize
    c_order = conv_utils.empty_in_layout(np, np.zeros((2, 3)), (4, 5), fill=0)
    assert c_order.flags.c_contiguous and not c_order.any()


def test_pooling_on_a_batch_last_view_gives_the_same_values_in_that_layout(ctx):
    from rebind.ops import OpContext
    from tests.ops.harness import opdef

    if ctx.device_type != "cpu":
        pytest.skip("the batch-last views are made on the CPU only (NumPy)")
    rng = np.random.default_rng(4)
    work = rng.standard_normal((3, 6, 6, 2)).astype(np.float32)
    work[0, 0, :2, 0] = 1.0  # a tie: the gradient goes to the first maximum
    view = work.transpose(3, 0, 1, 2)
    plain = np.ascontiguousarray(view)
    op = opdef("Pooling")
    op_ctx = OpContext(True, ctx.backend)
    for params in (
        {"kernel": "(2, 2)", "stride": "(2, 2)", "pool_type": "max"},
        {"kernel": "(3, 3)", "pad": "(1, 1)", "pool_type": "avg"},
    ):
        parsed = op.parse(params)
        results = []
        for x in (plain, view):
            (out,), saved = op.forward(op_ctx, parsed, [x], [])
            head = np.ones_like(out)
            (dx,) = op.backward(op_ctx, parsed, saved, [head], [True])
            results.append((out, dx))
        np.testing.assert_array_equal(results[1][0], results[0][0])
        np.testing.assert_array_equal(results[1][1], results[0][1])
        assert results[1][1].strides[0] == results[1][1].itemsize  # batch innermost, as x
        assert results[0][1].flags.c_contiguous


def _stack(nd, **conv):
    """conv, relu, max pool, conv, tanh, FullyConnected over ``nd`` spatial axes."""
    kernel = (3,) * nd
    net = mx.sym.Convolution(
        mx.sym.Variable("data"), kernel=kernel, num_filter=4, name="conv1", **conv
    )
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2,) * nd, stride=(2,) * nd)
    net = mx.sym.Convolution(net, kernel=(1,) * nd, num_filter=4, name="conv2", **conv)
    net = mx.sym.Activation(net, act_type="tanh")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(net, mx.sym.Variable("softmax_label"), name="softmax")


@pytest.mark.parametrize(
    "nd, conv, size",
    [
        (1, {}, (15,)),
        (3, {}, (7, 7, 7)),
        (2, {"num_group": 2}, (10, 10)),
        (2, {"dilate": (2, 2)}, (12, 12)),
        (2, {"stride": (2, 2), "pad": (1, 1)}, (12, 12)),
    ],
)
def test_one_and_three_dimensional_grouped_dilated_and_strided_stacks(
    nd, conv, size, ctx, monkeypatch
):
    plain, rewritten, executor = _twice(_stack(nd, **conv), ctx, monkeypatch, data=(3, 2, *size))
    _assert_equal(rewritten, plain)
    assert _marked(executor) == (["conv1", "conv2"] if ctx.device_type == "cpu" else [])


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_other_float_types_equal_the_plain_graph(dtype, ctx, monkeypatch):
    symbol = _cnn()
    results = []
    for optimized in (False, True):
        monkeypatch.setenv("REBIND_GRAPH_OPT", "1" if optimized else "0")
        executor = symbol.simple_bind(ctx, type_dict={"data": dtype}, data=(3, 1, 14, 14))
        _fill(executor, integer_inputs={"softmax_label": 3})
        results.append(_run(executor))
    _assert_equal(results[1], results[0])
