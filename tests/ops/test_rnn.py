"""The fused RNN operator: golden cases, finite differences, inference, dropout."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from rebind.ops.rnn import num_parameters
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

MODES = ["rnn_relu", "rnn_tanh", "lstm", "gru"]


@pytest.mark.parametrize("case_id", case_ids("RNN"))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _attrs(mode, layers=1, bidirectional=False, **extra):
    attrs = {
        "state_size": "2",
        "num_layers": str(layers),
        "mode": mode,
        "bidirectional": str(bidirectional),
        "state_outputs": "True",
    }
    attrs.update({k: str(v) for k, v in extra.items()})
    return attrs


def _inputs(attrs, steps=3, batch=2, width=3, seed=0, scale=0.6):
    """data, parameters, state (and state_cell for LSTM) for ``attrs``."""
    p = opdef("RNN").parse(attrs)
    rng = np.random.default_rng(seed)
    state = (p.num_layers * p.directions, batch, p.state_size)
    arrays = [
        rng.standard_normal((steps, batch, width)),
        scale * rng.standard_normal(num_parameters(p, width)),
        rng.standard_normal(state),
    ]
    if p.mode == "lstm":
        arrays.append(rng.standard_normal(state))
    return arrays


def _forward(attrs, inputs, ctx, is_train=True):
    op = opdef("RNN")
    outs, _ = op.forward(
        OpContext(is_train, ctx.backend, ctx.device_id),
        op.parse(attrs),
        [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs],
        [],
    )
    return [np.asarray(ctx.backend.to_host(o)) for o in outs]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("layers, bidirectional", [(1, False), (2, True)])
def test_numeric_gradient(mode, layers, bidirectional, ctx):
    attrs = _attrs(mode, layers, bidirectional)
    check_numeric_gradient("RNN", attrs, _inputs(attrs), ctx)


def test_numeric_gradient_without_state_outputs(ctx):
    attrs = _attrs("lstm", 2)
    attrs["state_outputs"] = "False"
    check_numeric_gradient("RNN", attrs, _inputs(attrs, seed=3), ctx)


def test_lstm_state_clipping_bounds_cell_and_its_gradient(ctx):
    attrs = _attrs("lstm", 2, True, lstm_state_clip_min=-0.4, lstm_state_clip_max=0.3)
    inputs = _inputs(attrs, seed=5, scale=1.5)
    cell_out = _forward(attrs, inputs, ctx)[2]
    assert cell_out.min() >= -0.4 and cell_out.max() <= 0.3
    assert np.isclose(cell_out, -0.4).any() or np.isclose(cell_out, 0.3).any()
    check_numeric_gradient("RNN", attrs, inputs, ctx)


def test_lstm_state_clip_nan_replaces_nan_by_min(ctx):
    attrs = _attrs("lstm", lstm_state_clip_min=-0.5, lstm_state_clip_max=0.5)
    inputs = _inputs(attrs, steps=1)
    inputs[3][0, 0, 0] = np.nan
    assert np.isnan(_forward(attrs, inputs, ctx)[2][0, 0, 0])
    attrs["lstm_state_clip_nan"] = "True"
    assert _forward(attrs, inputs, ctx)[2][0, 0, 0] == -0.5


# -- dropout between layers --------------------------------------------------------


def _fixed_values(low, high, shape, dtype):
    return np.random.default_rng(11).uniform(low, high, size=shape).astype(dtype)


@pytest.fixture
def fixed_uniform(ctx, monkeypatch):
    """Makes the backend's uniform draws a fixed function of the shape."""

    def uniform(self, low, high, shape, dtype, device_id):
        return self.asarray(_fixed_values(low, high, shape, dtype), dtype, device_id)

    # backends are slotted attrs classes: patch the class, restored after the test
    monkeypatch.setattr(type(ctx.backend), "uniform", uniform)


def test_dropout_masks_and_scales_the_input_of_upper_layers(ctx, fixed_uniform):
    attrs = _attrs("gru", 2, p=0.4)
    data, flat, state = _inputs(attrs, steps=4, batch=3)
    # gru, H=2, C=3: weights of layer 0 (30) and 1 (24), then their biases (12 each)
    w0, w1, b0, b1 = flat[:30], flat[30:54], flat[54:66], flat[66:]
    low = _forward(_attrs("gru"), [data, np.concatenate([w0, b0]), state[:1]], ctx)[0]
    mask = (_fixed_values(0, 1, low.shape, "float64") >= 0.4) / 0.6
    high = _forward(_attrs("gru"), [low * mask, np.concatenate([w1, b1]), state[1:]], ctx)
    fused = _forward(attrs, [data, flat, state], ctx)
    np.testing.assert_allclose(fused[0], high[0], rtol=1e-12)
    assert 0 < (mask == 0).mean() < 1


def test_dropout_gradient_with_a_fixed_mask(ctx, fixed_uniform):
    attrs = _attrs("lstm", 3, p=0.5)
    check_numeric_gradient("RNN", attrs, _inputs(attrs, seed=2), ctx)


def test_dropout_is_off_in_inference(ctx):
    attrs = _attrs("rnn_tanh", 2, True, p=0.7)
    inputs = _inputs(attrs)
    plain = _forward(_attrs("rnn_tanh", 2, True), inputs, ctx, is_train=True)
    for got, want in zip(_forward(attrs, inputs, ctx, is_train=False), plain, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def _backward(attrs, inputs, ctx, need, dtype=np.float64):
    op, backend = opdef("RNN"), ctx.backend
    p, op_ctx = op.parse(attrs), OpContext(True, ctx.backend, ctx.device_id)
    outs, saved = op.forward(
        op_ctx, p, [backend.asarray(a, dtype, ctx.device_id) for a in inputs], []
    )
    heads = [backend.asarray(np.full(o.shape, 0.5), dtype, ctx.device_id) for o in outs]
    grads = op.backward(op_ctx, p, saved, heads, need)
    return [None if g is None else np.asarray(backend.to_host(g)) for g in grads]


@pytest.mark.parametrize("need", [[True, False, False, False], [False, True, False, True]])
def test_only_requested_gradients(need, ctx):
    attrs = _attrs("lstm", 2, True)
    inputs = _inputs(attrs)
    full = _backward(attrs, inputs, ctx, [True] * 4)
    for wanted, got, want in zip(need, _backward(attrs, inputs, ctx, need), full, strict=True):
        if wanted:
            np.testing.assert_allclose(got, want, rtol=1e-12)
        else:
            assert got is None


def test_float16_runs_in_float32(ctx):
    attrs = _attrs("lstm", 2)
    inputs = [a.astype(np.float32) for a in _inputs(attrs)]
    want = _forward(attrs, inputs, ctx)
    got = _forward(attrs, [a.astype(np.float16) for a in inputs], ctx)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == np.float16
        np.testing.assert_allclose(g, w, rtol=1e-2, atol=2e-3)
    want = _backward(attrs, inputs, ctx, [True] * 4, np.float32)
    for g, w in zip(_backward(attrs, inputs, ctx, [True] * 4, np.float16), want, strict=True):
        assert g.dtype == np.float16
        np.testing.assert_allclose(g, w, rtol=2e-2, atol=5e-3)


# -- names, inference and parameters -------------------------------------------------


@pytest.mark.parametrize(
    "attrs, arguments, outputs",
    [
        (
            _attrs("lstm"),
            ["data", "parameters", "state", "state_cell"],
            ["output", "state_output", "statecell_output"],
        ),
        (_attrs("gru", state_outputs=False), ["data", "parameters", "state"], ["output"]),
        (
            _attrs("rnn_tanh", use_sequence_length=True),
            ["data", "parameters", "state", "sequence_length"],
            ["output", "state_output"],
        ),
    ],
)
def test_argument_and_output_names(attrs, arguments, outputs):
    op = opdef("RNN")
    p = op.parse(attrs)
    assert list(op.arguments(p)) == arguments and list(op.outputs(p)) == outputs


@pytest.mark.parametrize(
    "mode, layers, bidirectional, size",
    [
        ("lstm", 1, False, 312),
        ("lstm", 2, True, 1584),
        ("gru", 2, False, 486),
        ("rnn_relu", 2, True, 396),
    ],
)
def test_infer_parameters_and_states_from_data(mode, layers, bidirectional, size):
    attrs = _attrs(mode, layers, bidirectional, state_size=6)
    n_in = 4 if mode == "lstm" else 3
    ins, outs, _ = infer("RNN", attrs, [(4, 2, 5)] + [None] * (n_in - 1))
    directions = 2 if bidirectional else 1
    state = (layers * directions, 2, 6)
    assert ins == [(4, 2, 5), (size,)] + [state] * (n_in - 2)
    assert outs == [(4, 2, 6 * directions)] + [state] * (len(outs) - 1)


def test_infer_leaves_parameters_unknown_without_input_size():
    ins, outs, _ = infer("RNN", _attrs("gru"), [(4, 2, 0), None, None])
    assert ins[1] is None and ins[2] == (1, 2, 2) and outs[0] == (4, 2, 2)


def test_infer_learns_batch_size_from_state():
    ins, outs, _ = infer("RNN", _attrs("rnn_tanh"), [(4, 0, 3), None, (1, 5, 2)])
    assert ins[0] == (4, 5, 3) and outs == [(4, 5, 2), (1, 5, 2)]


def test_wrong_parameters_length_names_node_argument_and_shapes():
    with pytest.raises(ShapeError) as info:
        infer("RNN", _attrs("rnn_tanh"), [(4, 2, 3), (20,), None])
    message = str(info.value)
    assert "node0" in message and "'parameters'" in message
    assert "(20,)" in message and "(14,)" in message


@pytest.mark.parametrize("shapes", [[(4, 2), None, None], [(4, 2, 3), None, (2, 2, 2)]])
def test_bad_data_or_state_shape(shapes):
    with pytest.raises(ShapeError):
        infer("RNN", _attrs("gru"), shapes)


@pytest.mark.parametrize(
    "extra, fragment",
    [
        ({"mode": "lstmx"}, "mode='lstmx' is invalid"),
        ({"p": "1.0"}, r"p must be in \[0, 1\)"),
        ({"state_size": "0"}, "state_size must be positive"),
        ({"lstm_state_clip_min": "-1"}, "must be given together"),
        (
            {"mode": "gru", "lstm_state_clip_min": "-1", "lstm_state_clip_max": "1"},
            "only supported for LSTM",
        ),
        ({"lstm_state_clip_min": "1", "lstm_state_clip_max": "-1"}, "less than"),
    ],
)
def test_bad_params(extra, fragment):
    attrs = _attrs("lstm")
    attrs.update(extra)
    with pytest.raises(ParamError, match=fragment):
        opdef("RNN").parse(attrs)


def test_projection_is_not_implemented():
    with pytest.raises(NotImplementedError, match="projection_size"):
        opdef("RNN").parse(_attrs("lstm", projection_size=1))


def test_sequence_length_is_not_implemented(ctx):
    attrs = _attrs("gru", use_sequence_length=True)
    ins, _, _ = infer("RNN", attrs, [(4, 2, 3), None, None, None])
    assert ins[3] == (2,)
    with pytest.raises(NotImplementedError, match="use_sequence_length"):
        _forward(attrs, _inputs(attrs) + [np.full(2, 3.0)], ctx)


def test_sequence_length_keeps_its_dtype():
    op = opdef("RNN")
    p = op.parse(_attrs("rnn_relu", use_sequence_length=True))
    ins, outs, _ = op.infer_types(p, ["float64", None, None, "int32"])
    assert ins == ["float64", "float64", "float64", "int32"]
    assert outs == ["float64", "float64"]


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_steps_over_warps_give_the_thread_steps_values(monkeypatch, bidirectional, mode):
    """A GPU's LSTM and GRU steps with each unit's products split over a warp (70 units: a
    lane takes two or three terms) give what the one-thread-a-unit steps give."""
    import rebind as mx
    from rebind.backends import cupy_layer_kernels

    reason = mx.registry.lookup("backends", "cupy").unavailable_reason()
    if reason is not None:
        pytest.skip(f"cupy backend unavailable: {reason}")
    ctx = mx.gpu(0)
    attrs = _attrs(mode, 1, bidirectional, state_size=70)
    inputs = _inputs(attrs, steps=4, batch=3, width=5)
    runs = []
    for over_warps in (False, True):
        monkeypatch.setattr(cupy_layer_kernels, "PRODUCTS_OVER_WARPS", over_warps)
        runs.append(_forward(attrs, inputs, ctx) + _backward(attrs, inputs, ctx, [True] * 4))
    for threads, warps in zip(*runs, strict=True):
        np.testing.assert_allclose(warps, threads, rtol=1e-10, atol=1e-12)
