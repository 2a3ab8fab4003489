"""Graph rewrites of the executor plan (core/executor/optimize.py) give the plain graph's results.

Every case binds the same symbol twice, with ``REBIND_GRAPH_OPT=0`` and
without, feeds both the same values, and compares outputs and gradients
(float32: the batched products sum in another order, so rtol 1e-5 with a
small absolute floor relative to each array's magnitude).
"""

import numpy as np
import pytest

import rebind as mx
from rebind.executor.optimize import ENV_SWITCH

RTOL = 1e-5
SEED = 20240607


# the in-place activation rewrites alone: on a GPU the fused FullyConnected and
# Convolution + activation steps take those patterns first (test_fused_dense.py,
# test_fused_conv.py test them)
IN_PLACE_ONLY = "-dense_activation,-conv_activation"


def _bind(symbol, ctx, monkeypatch, optimized, grad_req="write", switch="1", **shapes):
    monkeypatch.setenv(ENV_SWITCH, switch if optimized else "0")
    return symbol.simple_bind(ctx, grad_req=grad_req, **shapes)


def _fill(executor, seed=SEED, integer_inputs=None):
    rng = np.random.default_rng(seed)
    integer_inputs = integer_inputs or {}
    for name, array in executor.arg_dict.items():
        if name in integer_inputs:
            array[:] = rng.integers(0, integer_inputs[name], array.shape)
        else:
            array[:] = rng.uniform(-0.5, 0.5, array.shape)


def _batched(executor):
    """``(name, steps merged)`` of the plan's batched projections."""
    found = executor._plan.optimizations
    return [(name, n) for kind, name, n in found if kind == "batched_projection"]


def _fused_softmaxes(executor):
    found = executor._plan.optimizations
    return [name for kind, name, _ in found if kind == "projected_softmax"]


def _run(executor, is_train=True):
    executor.forward(is_train=is_train)
    if is_train:
        executor.backward()
    outputs = [o.asnumpy() for o in executor.outputs]
    grads = {n: g.asnumpy() for n, g in executor.grad_dict.items()} if is_train else {}
    return outputs, grads


def _assert_close(got, expected, what):
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=RTOL * scale, err_msg=what)


def _compare(symbol, ctx, monkeypatch, integer_inputs=None, grad_req="write", switch="1", **shapes):
    """Bind with and without rewrites, run both; returns the optimized executor."""
    results = []
    for optimized in (False, True):
        executor = _bind(symbol, ctx, monkeypatch, optimized, grad_req, switch, **shapes)
        _fill(executor, integer_inputs=integer_inputs)
        results.append((executor, _run(executor)))
    (_, (plain_out, plain_grads)), (optimized, (out, grads)) = results
    for index, (a, b) in enumerate(zip(out, plain_out, strict=True)):
        _assert_close(a, b, f"output {index}")
    assert sorted(grads) == sorted(plain_grads)
    for name in grads:
        _assert_close(grads[name], plain_grads[name], f"gradient of {name}")
    return optimized


def _compare_lm(symbol, ctx, monkeypatch, batch, length, vocab=20):
    """``_compare`` for a language model over tokens: (batch, length) data and labels."""
    integers = {"data": vocab, "softmax_label": vocab}
    shapes = {"data": (batch, length), "softmax_label": (batch, length)}
    return _compare(symbol, ctx, monkeypatch, integer_inputs=integers, **shapes)


# -- the unrolled LSTM language model -----------------------------------------------------


def _lstm_lm(length, layout, merge_outputs=True, vocab=20, hidden=12):
    """Embedding, two unrolled LSTMCells, FullyConnected and SoftmaxOutput (MXNet's example)."""
    data = mx.sym.Variable("data")
    embed = mx.sym.Embedding(data, input_dim=vocab, output_dim=8, name="embed")
    if layout == "TNC":
        embed = mx.sym.swapaxes(embed, dim1=0, dim2=1)
    stack = mx.rnn.SequentialRNNCell()
    for layer in range(2):
        stack.add(mx.rnn.LSTMCell(num_hidden=hidden, prefix=f"lstm_l{layer}_"))
    outputs, _ = stack.unroll(length, inputs=embed, layout=layout, merge_outputs=merge_outputs)
    if not merge_outputs:
        axis = layout.find("T")
        outputs = mx.sym.Concat(*[mx.sym.expand_dims(o, axis=axis) for o in outputs], dim=axis)
    if layout == "TNC":
        outputs = mx.sym.swapaxes(outputs, dim1=0, dim2=1)
    pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, hidden)), num_hidden=vocab)
    label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
    return mx.sym.SoftmaxOutput(pred, label, name="softmax")


@pytest.mark.parametrize("layout", ["NTC", "TNC"])
@pytest.mark.parametrize("merge_outputs", [True, False])
def test_unrolled_lstm_lm_equals_the_plain_graph(ctx, monkeypatch, layout, merge_outputs):
    length, batch = 6, 4
    symbol = _lstm_lm(length, layout, merge_outputs)
    optimized = _compare_lm(symbol, ctx, monkeypatch, batch, length)
    # both layers' input projections become one product each, over all time steps
    assert _batched(optimized) == [
        ("lstm_l0_t0_i2h..lstm_l0_t5_i2h", length),
        ("lstm_l1_t0_i2h..lstm_l1_t5_i2h", length),
    ]
    projections = [s.name for s in optimized._plan.steps if s.op.name == "FullyConnected"]
    assert not any(name.endswith("_i2h") for name in projections)
    # layer 0 reads the embedding directly: the split over time is gone
    time_splits = [
        step
        for step in optimized._plan.steps
        if step.node.op.name == "SliceChannel" and len(step.outputs) == length
    ]
    assert time_splits == []


def test_golden_lstm_symbol_from_mxnet_triggers_and_matches(ctx, monkeypatch, golden):
    symbol = mx.sym.load(str(golden / "symbols" / "lstm_lm_T5-symbol.json"))
    optimized = _compare_lm(symbol, ctx, monkeypatch, 3, 5)
    assert [count for _, count in _batched(optimized)] == [5, 5]
    assert len(_fused_softmaxes(optimized)) == 1


def test_inference_and_grad_req_add_match(ctx, monkeypatch):
    symbol = _lstm_lm(4, "NTC")
    shapes = {"data": (2, 4), "softmax_label": (2, 4)}
    integers = {"data": 20, "softmax_label": 20}
    runs = []
    for optimized in (False, True):
        executor = _bind(symbol, ctx, monkeypatch, optimized, grad_req="add", **shapes)
        _fill(executor, integer_inputs=integers)
        for grad in executor.grad_dict.values():
            grad[:] = 1.0
        inference, _ = _run(executor, is_train=False)
        _, grads = _run(executor)
        _, grads = _run(executor)  # accumulated twice on top of the ones
        runs.append((inference, grads))
    (plain_inference, plain_grads), (inference, grads) = runs
    _assert_close(inference[0], plain_inference[0], "inference output")
    for name in grads:
        _assert_close(grads[name], plain_grads[name], f"accumulated gradient of {name}")


# -- the pattern's edges -------------------------------------------------------------------


def test_split_input_gets_its_data_gradient(ctx, monkeypatch):
    """Float data split over time into a shared projection: the data gradient is exact too."""
    data = mx.sym.Variable("data")
    weight, bias = mx.sym.Variable("w"), mx.sym.Variable("b")
    steps = mx.sym.SliceChannel(data, axis=1, num_outputs=3, squeeze_axis=1)
    projected = [mx.sym.FullyConnected(steps[t], weight, bias, num_hidden=5) for t in range(3)]
    symbol = mx.sym.Group([mx.sym.tanh(p) for p in projected])
    optimized = _compare(symbol, ctx, monkeypatch, data=(4, 3, 6))
    assert [count for _, count in _batched(optimized)] == [3]
    assert "data" in optimized.grad_dict
    assert not any(step.node.op.name == "SliceChannel" for step in optimized._plan.steps)


def test_split_used_elsewhere_is_kept_and_inputs_are_stacked(ctx, monkeypatch):
    data = mx.sym.Variable("data")
    weight = mx.sym.Variable("w")
    steps = mx.sym.SliceChannel(data, axis=0, num_outputs=3, squeeze_axis=1)
    projected = [
        mx.sym.FullyConnected(steps[t], weight, num_hidden=4, no_bias=True) for t in range(3)
    ]
    symbol = mx.sym.Group([*projected, steps[1] * 2])  # a split output also used elsewhere
    optimized = _compare(symbol, ctx, monkeypatch, data=(3, 2, 5))
    assert len(_batched(optimized)) == 1
    assert any(step.node.op.name == "SliceChannel" for step in optimized._plan.steps)


@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_recurrent_projection_sums_its_weight_gradient_once(ctx, monkeypatch, grad_req):
    """h = tanh(FC(h)) with one weight: each step needs the previous one's output, so the
    products are not batched; the weight and bias gradients are summed once over all steps."""
    h = mx.sym.Variable("data")
    weight, bias = mx.sym.Variable("w"), mx.sym.Variable("b")
    for _ in range(4):
        h = mx.sym.tanh(mx.sym.FullyConnected(h, weight, bias, num_hidden=6))
    optimized = _compare(h, ctx, monkeypatch, grad_req=grad_req, data=(3, 6))
    assert optimized._plan.optimizations == [
        ("weight_gradient_terms", "fullyconnected0..fullyconnected3", 4)
    ]


def test_a_recurrent_weight_also_read_elsewhere_sums_every_gradient(ctx, monkeypatch):
    # the weight's terms meet a plain gradient (its square summed) in the same running sum
    h = mx.sym.Variable("data")
    weight = mx.sym.Variable("w")
    for _ in range(3):
        h = mx.sym.tanh(mx.sym.FullyConnected(h, weight, num_hidden=5, no_bias=True))
    symbol = mx.sym.Group([h, mx.sym.sum(weight * weight)])
    optimized = _compare(symbol, ctx, monkeypatch, data=(4, 5))
    assert [name for name, *_ in optimized._plan.optimizations] == ["weight_gradient_terms"]


def test_networks_without_the_pattern_are_unchanged(ctx, monkeypatch):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    symbol = mx.sym.SoftmaxOutput(net, mx.sym.Variable("softmax_label"), name="softmax")
    symbol = mx.sym.Group([symbol, mx.sym.BlockGrad(net)])  # the logits are read elsewhere
    optimized = _compare(
        symbol, ctx, monkeypatch, {"softmax_label": 3}, switch=IN_PLACE_ONLY, data=(5, 7)
    )
    plain = _bind(symbol, ctx, monkeypatch, False, data=(5, 7))
    # the in-place activation applies (its input is read by nothing else), and so
    # does its in-place gradient (fc2 alone reads its output); on the CPU fc1's
    # output, read through it by fc2 only, may be column-major
    expected = ["inplace_activation", "inplace_activation_gradient"] + (
        ["column_major_product"] if ctx.device_type == "cpu" else []
    )
    assert [kind for kind, _, _ in optimized._plan.optimizations] == expected
    assert [s.name for s in optimized._plan.steps] == [s.name for s in plain._plan.steps]


@pytest.mark.parametrize("act_type", ["relu", "sigmoid", "tanh"])
def test_activation_after_fully_connected_runs_in_place(act_type, ctx, monkeypatch):
    """Exact: outputs and gradients equal the plain graph's."""
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=6, name="fc1")
    net = mx.sym.Activation(net, act_type=act_type)
    net = mx.sym.Activation(mx.sym.FullyConnected(net, num_hidden=5, name="fc2"), act_type=act_type)
    symbol = mx.sym.SoftmaxOutput(
        mx.sym.FullyConnected(net, num_hidden=3, name="fc3"),
        mx.sym.Variable("softmax_label"),
        name="softmax",
    )
    optimized = _compare(
        symbol, ctx, monkeypatch, {"softmax_label": 3}, switch=IN_PLACE_ONLY, data=(4, 7)
    )
    kinds = [kind for kind, _, _ in optimized._plan.optimizations]
    assert kinds.count("inplace_activation") == 2


def test_activation_whose_input_is_read_elsewhere_is_not_in_place(ctx, monkeypatch):
    data = mx.sym.Variable("data")
    logits = mx.sym.FullyConnected(data, num_hidden=6, name="fc1")
    net = mx.sym.Activation(logits, act_type="relu") + logits  # fc1's output has two readers
    symbol = mx.sym.MakeLoss(mx.sym.sum(net))
    optimized = _compare(symbol, ctx, monkeypatch, data=(4, 7))
    assert "inplace_activation" not in [kind for kind, _, _ in optimized._plan.optimizations]
    # softrelu's backward needs its input: never in place
    soft = mx.sym.MakeLoss(
        mx.sym.sum(
            mx.sym.Activation(
                mx.sym.FullyConnected(data, num_hidden=6, name="fc2"), act_type="softrelu"
            )
        )
    )
    optimized = _compare(soft, ctx, monkeypatch, data=(4, 7))
    assert optimized._plan.optimizations == []


# -- column-major hidden layers ------------------------------------------------------------


def _column_major(executor):
    found = executor._plan.optimizations
    return [name for kind, name, _ in found if kind == "column_major_product"]


def _mlp(hidden=(9, 8), act_type="relu"):
    net = mx.sym.Variable("data")
    for index, width in enumerate(hidden, start=1):
        net = mx.sym.FullyConnected(net, num_hidden=width, name=f"fc{index}")
        net = mx.sym.Activation(net, act_type=act_type, name=f"act{index}")
    net = mx.sym.FullyConnected(net, num_hidden=4, name="out")
    return mx.sym.SoftmaxOutput(net, mx.sym.Variable("softmax_label"), name="softmax")


@pytest.mark.parametrize("act_type", ["relu", "sigmoid", "tanh"])
def test_hidden_products_are_column_major_and_match_the_plain_graph(act_type, ctx, monkeypatch):
    """CPU only; outputs and every gradient (the data's too) stay row-major where they surface."""
    symbol = _mlp(act_type=act_type)
    shapes = {"data": (6, 7)}
    results = []
    for optimized in (False, True):
        executor = _bind(symbol, ctx, monkeypatch, optimized, **shapes)
        _fill(executor, integer_inputs={"softmax_label": 4})
        results.append((executor, _run(executor)))
    (_, (plain_out, plain_grads)), (optimized, (out, grads)) = results
    _assert_close(out[0], plain_out[0], "output")
    for name in plain_grads:
        _assert_close(grads[name], plain_grads[name], f"gradient of {name}")
    expected = ["fc1", "fc2"] if ctx.device_type == "cpu" else []
    assert _column_major(optimized) == expected
    assert optimized.outputs[0].asnumpy().flags.c_contiguous
    for name, grad in optimized.grad_dict.items():
        assert grad._data.flags.c_contiguous, name
    if expected:  # the layout really changes inside: fc1's output is column-major
        step = optimized._plan.steps[0]
        assert step.name == "fc1"
        args = [optimized.arg_dict[name]._data for name in ("data", "fc1_weight", "fc1_bias")]
        (hidden,), _ = step.op.forward(step.train_ctx, step.params, args, [])
        assert hidden.flags.f_contiguous and not hidden.flags.c_contiguous


def test_data_gradient_of_a_column_major_input_is_column_major_and_exact(ctx, monkeypatch):
    """FullyConnected's backward gives the data gradient the layout of the data it read."""
    from rebind.ops import OpContext
    from tests.ops.harness import opdef

    rng = np.random.default_rng(5)
    data = rng.standard_normal((5, 7)).astype(np.float32)
    weight = rng.standard_normal((3, 7)).astype(np.float32)
    head = rng.standard_normal((5, 3)).astype(np.float32)
    op, backend = opdef("FullyConnected"), ctx.backend
    params, op_ctx = op.parse({"num_hidden": "3", "no_bias": "True"}), OpContext(True, backend)
    grads = {}
    for layout in ("C", "F"):
        x = backend.asarray(np.asarray(data, order=layout), np.float32, ctx.device_id)
        x = backend.xp.asfortranarray(x) if layout == "F" else x
        w = backend.asarray(weight, np.float32, ctx.device_id)
        _, saved = op.forward(op_ctx, params, [x, w], [])
        g = backend.asarray(head, np.float32, ctx.device_id)
        dx, dw = op.backward(op_ctx, params, saved, [g], [True, True])
        assert dx.flags.f_contiguous == (layout == "F")
        grads[layout] = (backend.to_host(dx), backend.to_host(dw))
    np.testing.assert_allclose(grads["F"][0], head @ weight, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads["F"][0], grads["C"][0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(grads["F"][1], grads["C"][1], rtol=1e-6, atol=1e-6)


def test_products_whose_output_surfaces_or_feeds_other_ops_stay_row_major(ctx, monkeypatch):
    data = mx.sym.Variable("data")
    # fc1's activation is a head: users see it
    hidden = mx.sym.Activation(
        mx.sym.FullyConnected(data, num_hidden=6, name="fc1"), act_type="relu"
    )
    head = mx.sym.SoftmaxOutput(
        mx.sym.FullyConnected(hidden, num_hidden=3, name="fc2"),
        mx.sym.Variable("softmax_label"),
        name="softmax",
    )
    symbol = mx.sym.Group([head, hidden])
    optimized = _compare(symbol, ctx, monkeypatch, integer_inputs={"softmax_label": 3}, data=(4, 5))
    assert _column_major(optimized) == []
    assert optimized.outputs[1].asnumpy().flags.c_contiguous
    # fc1's output is read by an element-wise sum as well as by fc2
    logits = mx.sym.FullyConnected(data, num_hidden=6, name="fc1")
    mixed = mx.sym.FullyConnected(logits, num_hidden=6, name="fc2") + logits
    optimized = _compare(mx.sym.MakeLoss(mx.sym.sum(mixed)), ctx, monkeypatch, data=(4, 5))
    assert _column_major(optimized) == []
    # one row: a matrix-vector product, nothing to gain
    optimized = _compare(_mlp(), ctx, monkeypatch, integer_inputs={"softmax_label": 4}, data=(1, 7))
    assert _column_major(optimized) == []


def test_random_steps_keep_their_order(ctx, monkeypatch):
    """Dropout after both layers at every step: batching layer 1 would reorder the draws."""
    length = 3
    data = mx.sym.Variable("data")
    cells = [mx.rnn.LSTMCell(num_hidden=4, prefix=f"l{layer}_") for layer in range(2)]
    states = [cell.begin_state() for cell in cells]
    outputs = []
    for step in mx.sym.SliceChannel(data, axis=1, num_outputs=length, squeeze_axis=1):
        for layer, cell in enumerate(cells):
            step, states[layer] = cell(step, states[layer])
            step = mx.sym.Dropout(step, p=0.5)
        outputs.append(step)
    symbol = mx.sym.MakeLoss(mx.sym.sum(mx.sym.Concat(*outputs, dim=1)))
    results = []
    for optimized in (False, True):
        executor = _bind(symbol, ctx, monkeypatch, optimized, data=(2, length, 3))
        _fill(executor)
        mx.random.seed(7)
        results.append((executor, _run(executor)))
    (_, (plain_out, plain_grads)), (optimized, (out, grads)) = results
    assert [name for name, _ in _batched(optimized)] == ["l0_t0_i2h..l0_t2_i2h"]
    _assert_close(out[0], plain_out[0], "output")
    for name in grads:
        _assert_close(grads[name], plain_grads[name], f"gradient of {name}")


# -- the switch and the monitor --------------------------------------------------------------


def test_switch_turns_the_rewrites_off(ctx, monkeypatch):
    symbol = _lstm_lm(3, "NTC")
    executor = _bind(symbol, ctx, monkeypatch, False, data=(2, 3), softmax_label=(2, 3))
    assert executor._plan.optimizations == []
    assert sum(step.name.endswith("_i2h") for step in executor._plan.steps) == 6


def test_monitor_sees_every_node_of_the_plain_graph(ctx, monkeypatch):
    symbol = _lstm_lm(3, "NTC")
    seen = {}
    for optimized in (False, True):
        executor = _bind(symbol, ctx, monkeypatch, optimized, data=(2, 3), softmax_label=(2, 3))
        _fill(executor, integer_inputs={"data": 20, "softmax_label": 20})
        names = []
        executor.set_monitor_callback(lambda name, array, names=names: names.append(name))
        _run(executor)
        seen[optimized] = names
    assert seen[True] == seen[False]
    assert "lstm_l1_t2_i2h_output" in seen[True]


# -- FullyConnected into SoftmaxOutput -------------------------------------------------------


def _classifier(**softmax_params):
    data = mx.sym.Variable("data")
    # no product before ``pred``: a column-major hidden layer would change the rounding
    # of the data gradient, and these cases compare bit for bit
    hidden = mx.sym.Activation(data, act_type="tanh")
    logits = mx.sym.FullyConnected(hidden, num_hidden=5, name="pred")
    return mx.sym.SoftmaxOutput(logits, mx.sym.Variable("softmax_label"), **softmax_params)


def test_projected_softmax_is_exact_and_leaves_the_output_intact(ctx, monkeypatch):
    symbol = _classifier(name="softmax")
    runs = []
    for optimized in (False, True):
        executor = _bind(symbol, ctx, monkeypatch, optimized, data=(7, 4))
        _fill(executor, integer_inputs={"softmax_label": 5})
        runs.append((executor, _run(executor)))
    (_, (plain_out, plain_grads)), (optimized, (out, grads)) = runs
    assert _fused_softmaxes(optimized) == ["pred+softmax"]
    # the same kernels on the same values: equal bit for bit; backward left the output as it was
    np.testing.assert_array_equal(out[0], plain_out[0])
    np.testing.assert_array_equal(optimized.outputs[0].asnumpy(), plain_out[0])
    for name, grad in plain_grads.items():
        np.testing.assert_array_equal(grads[name], grad)


def test_labels_out_of_range_and_float16_match(ctx, monkeypatch):
    symbol = _classifier(name="softmax")
    for dtype in (np.float32, np.float16):
        runs = []
        for optimized in (False, True):
            executor = _bind(
                symbol, ctx, monkeypatch, optimized, data=(4, 3), type_dict={"data": dtype}
            )
            _fill(executor)
            executor.arg_dict["softmax_label"][:] = np.array([0, 7, -1, 4])
            runs.append(_run(executor))
        (plain_out, plain_grads), (out, grads) = runs
        np.testing.assert_array_equal(out[0], plain_out[0])
        for name in grads:
            np.testing.assert_array_equal(grads[name], plain_grads[name])


@pytest.mark.parametrize(
    "params",
    [
        {"use_ignore": True, "ignore_label": 0},
        {"normalization": "batch"},
        {"grad_scale": 2.0},
        {"smooth_alpha": 0.1},
    ],
)
def test_softmax_variants_with_other_gradients_are_not_fused(ctx, monkeypatch, params):
    symbol = _classifier(name="softmax", **params)
    optimized = _compare(symbol, ctx, monkeypatch, integer_inputs={"softmax_label": 5}, data=(6, 4))
    assert _fused_softmaxes(optimized) == []


def test_fused_softmax_output_with_labels_out_of_range(ctx, monkeypatch):
    """A label outside [0, classes) has no one-hot entry, fused or not; the output is kept."""
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    symbol = mx.sym.SoftmaxOutput(net, mx.sym.Variable("softmax_label"), name="softmax")
    runs = []
    for optimized in (False, True):
        executor = _bind(symbol, ctx, monkeypatch, optimized, data=(5, 3))
        _fill(executor)
        executor.arg_dict["softmax_label"][:] = np.array([1, -1, 4, 3, 7], np.float32)
        runs.append((executor, _run(executor)))
    (_, (plain_out, plain_grads)), (fused, (out, grads)) = runs
    assert _fused_softmaxes(fused) == ["fc+softmax"]
    np.testing.assert_array_equal(out[0], plain_out[0])
    for name in ("fc_weight", "fc_bias", "data"):
        _assert_close(grads[name], plain_grads[name], f"gradient of {name}")
    # the rows with labels -1, 4 and 7 back-propagate the softmax itself
    prob = plain_out[0]
    onehot = np.zeros_like(prob)
    onehot[[0, 3], [1, 3]] = 1
    expected_bias = (prob - onehot).sum(axis=0)
    _assert_close(grads["fc_bias"], expected_bias, "bias gradient")
    # backward gave the output back its exact values
    np.testing.assert_array_equal(fused.outputs[0].asnumpy(), out[0])


# -- expand_dims into Concat ----------------------------------------------------------------


def _stacked(executor):
    found = executor._plan.optimizations
    return [(name, n) for kind, name, n in found if kind == "stacked_concat"]


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_concat_of_new_axes_is_one_stack_bit_for_bit(ctx, monkeypatch, axis):
    data = mx.sym.Variable("data")
    parts = mx.sym.SliceChannel(data, num_outputs=3, axis=1, squeeze_axis=True)
    joined = mx.sym.Concat(
        *[mx.sym.expand_dims(mx.sym.tanh(parts[t]) * (t + 1), axis=axis) for t in range(3)],
        dim=axis,
    )
    symbol = mx.sym.MakeLoss(mx.sym.sum(joined * joined))
    runs = []
    for optimized in (False, True):
        executor = _bind(mx.sym.Group([symbol, mx.sym.BlockGrad(joined)]), ctx, monkeypatch,
                         optimized, data=(4, 3, 5))  # fmt: skip
        _fill(executor)
        runs.append((executor, _run(executor)))
    (plain, (plain_out, plain_grads)), (optimized, (out, grads)) = runs
    assert _stacked(optimized) == [(_stacked_name(optimized), 4)] and _stacked(plain) == []
    assert not any(s.node.op.name == "expand_dims" for s in optimized._plan.steps)
    for got, expected in zip(out, plain_out, strict=True):
        np.testing.assert_array_equal(got, expected)
    for name in grads:
        np.testing.assert_array_equal(grads[name], plain_grads[name], err_msg=name)


def _stacked_name(executor):
    return next(s.name for s in executor._plan.steps if s.op.name == "stack")


def test_a_new_axis_read_elsewhere_or_another_axis_keeps_the_concat(ctx, monkeypatch):
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    shared = mx.sym.expand_dims(x, axis=1)
    read_elsewhere = mx.sym.Group([mx.sym.Concat(shared, mx.sym.expand_dims(y, axis=1), dim=1),
                                   mx.sym.sum(shared)])  # fmt: skip
    other_axis = mx.sym.Concat(mx.sym.expand_dims(x, axis=1), mx.sym.expand_dims(y, axis=1), dim=2)
    mixed = mx.sym.Concat(mx.sym.expand_dims(x, axis=1), mx.sym.reshape(y, shape=(2, 1, 3)), dim=1)
    for symbol in (read_elsewhere, other_axis, mixed):
        executor = _bind(symbol, ctx, monkeypatch, True, x=(2, 3), y=(2, 3))
        assert _stacked(executor) == []


def test_an_unrolled_cells_merged_outputs_are_stacked(ctx, monkeypatch):
    symbol = _lstm_lm(4, "NTC", merge_outputs=True)
    optimized = _compare_lm(symbol, ctx, monkeypatch, 2, 4)
    assert [n for _, n in _stacked(optimized)] == [5]  # four expand_dims and the Concat


def _kinds(executor):
    return {kind for kind, _, _ in executor._plan.optimizations}


def test_rewrites_are_switched_off_by_name(monkeypatch):
    """``REBIND_GRAPH_OPT=-name,-name``: those rewrites only; the values are the same."""
    symbol, shapes = _mlp(), {"data": (6, 10), "softmax_label": (6,)}
    every = _kinds(_bind(symbol, mx.cpu(), monkeypatch, True, **shapes))
    assert {"projected_softmax", "inplace_activation"} <= every
    monkeypatch.setenv(ENV_SWITCH, "-projected_softmax, -inplace_activation")
    fewer = symbol.simple_bind(mx.cpu(), **shapes)
    # those two are not made; the others still are where they apply (which depends on
    # what the two did: a column-major product may come or go with them)
    assert not _kinds(fewer) & {"projected_softmax", "inplace_activation"}
    assert "inplace_activation_gradient" in every & _kinds(fewer)
    plain = _bind(symbol, mx.cpu(), monkeypatch, False, **shapes)
    for executor in (fewer, plain):
        _fill(executor, integer_inputs={"softmax_label": 3})
    (out_f, grads_f), (out_p, grads_p) = _run(fewer), _run(plain)
    for got, expected in zip(out_f, out_p, strict=True):
        _assert_close(got, expected, "output")
    for name in grads_p:
        _assert_close(grads_f[name], grads_p[name], name)


def test_an_unknown_rewrite_name_is_refused_with_the_names(monkeypatch):
    from rebind.executor.optimize import REWRITES

    monkeypatch.setenv(ENV_SWITCH, "-dense_activations")
    with pytest.raises(ValueError, match="no rewrite is named dense_activations") as caught:
        _mlp().simple_bind(mx.cpu(), data=(2, 10), softmax_label=(2,))
    assert all(name in str(caught.value) for name in REWRITES)
