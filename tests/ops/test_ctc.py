"""CTCLoss and its aliases."""

import itertools

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden


@pytest.mark.parametrize("case_id", case_ids("CTCLoss"))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _dev(ctx, array):
    return ctx.backend.asarray(array, array.dtype, ctx.device_id)


def _host(ctx, array):
    return np.asarray(ctx.backend.to_host(array))


def _forward_backward(ctx, attrs, inputs, head=None):
    op = opdef("CTCLoss")
    params = op.parse(attrs)
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    outs, saved = op.forward(op_ctx, params, [_dev(ctx, a) for a in inputs], [])
    head = np.ones(outs[0].shape, inputs[0].dtype) if head is None else head
    need = [True] + [False] * (len(inputs) - 1)
    grads = op.backward(op_ctx, params, saved, [_dev(ctx, head)], need)
    return _host(ctx, outs[0]), _host(ctx, grads[0])


def _brute_force_loss(data, labels, blank):
    """-log of the summed probability of every path collapsing to each label (tiny T only)."""
    steps, batch, alphabet = data.shape
    probs = np.exp(data - data.max(axis=2, keepdims=True))
    probs /= probs.sum(axis=2, keepdims=True)
    losses = []
    for b in range(batch):
        total = 0.0
        for path in itertools.product(range(alphabet), repeat=steps):
            collapsed = [k for i, k in enumerate(path) if i == 0 or k != path[i - 1]]
            if [k for k in collapsed if k != blank] == list(labels[b]):
                total += np.prod([probs[t, b, k] for t, k in enumerate(path)])
        losses.append(-np.log(total))
    return np.array(losses)


@pytest.mark.parametrize(
    "blank_label, padded, labels",
    [
        ("first", [[1, 2, 0], [2, 2, 1], [0, 0, 0]], [[1, 2], [2, 2, 1], []]),
        ("last", [[0, 1, -1], [1, 1, 0], [0, -1, -1]], [[0, 1], [1, 1, 0], [0]]),
    ],
)
def test_ctc_loss_matches_path_enumeration(blank_label, padded, labels, ctx):
    data = np.random.default_rng(1).standard_normal((5, 3, 3))
    label = np.array(padded, np.float64)
    (loss,), _ = opdef("CTCLoss").forward(
        OpContext(True, ctx.backend, ctx.device_id),
        opdef("CTCLoss").parse({"blank_label": blank_label}),
        [_dev(ctx, data), _dev(ctx, label)],
        [],
    )
    blank = 0 if blank_label == "first" else 2
    expected = _brute_force_loss(data, labels, blank)
    np.testing.assert_allclose(_host(ctx, loss), expected, rtol=1e-10)


@pytest.mark.parametrize(
    "attrs, extra",
    [
        ({}, []),
        ({"blank_label": "last"}, []),
        ({"use_data_lengths": "True"}, [np.array([6.0, 4.0])]),
        (
            {"use_data_lengths": "True", "use_label_lengths": "True"},
            [np.array([5.0, 6.0]), np.array([1, 2])],
        ),
    ],
)
def test_ctc_loss_numeric_gradient(attrs, extra, ctx):
    data = np.random.default_rng(2).standard_normal((6, 2, 4))
    # (a label holding the blank value, possible with label_lengths, makes warp-ctc's
    # forward and backward passes disagree: MXNet's gradient is then not the derivative)
    label = (
        np.array([[1, 2], [3, 1]])
        if attrs.get("blank_label") != "last"
        else np.array([[1, 2], [0, -1]])
    )
    check_numeric_gradient("CTCLoss", attrs, [data, label, *extra], ctx, grad_args=[0])


def test_ctc_gradient_is_zero_past_data_length(ctx):
    data = np.random.default_rng(3).standard_normal((6, 2, 4)).astype(np.float32)
    label, lengths = np.array([[1, 2], [3, 3]], np.float32), np.array([3, 6], np.float32)
    _, grad = _forward_backward(ctx, {"use_data_lengths": "True"}, [data, label, lengths])
    np.testing.assert_array_equal(grad[3:, 0], 0)
    assert np.abs(grad[:3, 0]).sum() > 0 and np.abs(grad[:, 1]).sum() > 0
    # the gradient w.r.t. the activations sums to 0 over the alphabet at every used step
    np.testing.assert_allclose(grad.sum(axis=2), 0, atol=1e-5)


def test_ctc_loss_scales_gradient_by_head(ctx):
    data = np.random.default_rng(4).standard_normal((4, 2, 3))
    label = np.array([[1, 0], [2, 1]], np.float64)
    _, plain = _forward_backward(ctx, {}, [data, label])
    _, scaled = _forward_backward(ctx, {}, [data, label], head=np.array([2.0, -0.5]))
    np.testing.assert_allclose(scaled, plain * np.array([2.0, -0.5])[None, :, None])


def test_ctc_label_too_long_for_data_gives_zero_loss(ctx):
    data = np.random.default_rng(5).standard_normal((3, 2, 4)).astype(np.float32)
    # [1, 1, 2] needs 4 frames (a blank between the repeated 1s); [1, 2] fits in 3
    label = np.array([[1, 1, 2], [1, 2, 0]], np.float32)
    loss, grad = _forward_backward(ctx, {}, [data, label])
    assert loss[0] == 0 and np.isfinite(loss[1]) and loss[1] > 0
    np.testing.assert_array_equal(grad[:, 0], 0)


def test_ctc_names_aliases_and_outputs():
    op = opdef("CTCLoss")
    for alias in ("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"):
        assert opdef(alias) is op
    assert op.arguments(op.parse({})) == ("data", "label")
    both = op.parse({"use_data_lengths": "True", "use_label_lengths": "True"})
    assert op.arguments(both) == ("data", "label", "data_lengths", "label_lengths")
    assert op.arguments(op.parse({"use_label_lengths": "1"})) == ("data", "label", "label_lengths")
    assert op.outputs(both) == ("output0",) and op.num_hidden(both) == 1


def test_ctc_shape_and_type_inference():
    _, outs, _ = infer("CTCLoss", {}, [(10, 4, 6), (4, 3)])
    assert outs == [(4,)]
    attrs = {"use_data_lengths": "True", "use_label_lengths": "True"}
    ins, outs, _ = infer("CTCLoss", attrs, [(10, 4, 6), (4, 3), None, None])
    assert ins[2:] == [(4,), (4,)] and outs == [(4,)]
    op = opdef("CTCLoss")
    _, out_types, _ = op.infer_types(op.parse({}), ["float32", "int32"])
    assert out_types == ["float32"]


@pytest.mark.parametrize(
    "attrs, shapes, argument",
    [
        ({}, [(10, 4), (4, 3)], "data"),
        ({}, [(10, 4, 6), (5, 3)], "label"),
        ({}, [(10, 4, 6), (4, 11)], "label"),
        ({}, [(10, 4, 6), (4,)], "label"),
        ({"use_data_lengths": "True"}, [(10, 4, 6), (4, 3), (3,)], "data_lengths"),
        ({"use_label_lengths": "True"}, [(10, 4, 6), (4, 3), (4, 1)], "label_lengths"),
    ],
)
def test_ctc_bad_shapes_name_the_argument(attrs, shapes, argument):
    with pytest.raises(ShapeError, match=f"argument '{argument}'"):
        infer("CTCLoss", attrs, shapes)


def _log_softmax(data):
    shifted = data - data.max(axis=2, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=2, keepdims=True))


@pytest.mark.parametrize(
    "attrs, label, extra",
    [
        ({}, [[0, 0]] * 3, []),
        ({"blank_label": "last"}, [[-1, -1]] * 3, []),
        ({"use_label_lengths": "True"}, [[1, 2]] * 3, [np.array([0.0, 0.0, 0.0])]),
    ],
)
def test_ctc_every_label_empty_costs_the_blank_path(attrs, label, extra, ctx):
    # MXNet 1.9.1 returns its output buffers unset here (warp-ctc gets no label buffer
    # and refuses); by definition the only path is all blanks: -sum_t log p_t(blank)
    data = np.random.default_rng(6).standard_normal((4, 3, 5))
    blank = 4 if attrs.get("blank_label") == "last" else 0
    loss, grad = _forward_backward(ctx, attrs, [data, np.array(label, np.float64), *extra])
    log_probs = _log_softmax(data)
    np.testing.assert_allclose(loss, -log_probs[:, :, blank].sum(axis=0), rtol=1e-10)
    expected = np.exp(log_probs)
    expected[:, :, blank] -= 1  # d/dx of -log softmax(x)[blank]
    np.testing.assert_allclose(grad, expected, rtol=1e-9, atol=1e-12)


def test_ctc_data_length_zero_costs_nothing(ctx):
    # an empty label on empty data has probability 1 (MXNet: inf), a label probability 0
    # (loss 0 as for any label too long for its data)
    data = np.random.default_rng(7).standard_normal((3, 3, 4)).astype(np.float32)
    label, lengths = np.array([[0, 0], [1, 0], [1, 0]], np.float32), np.array([0, 0, 3.0])
    loss, grad = _forward_backward(ctx, {"use_data_lengths": "True"}, [data, label, lengths])
    np.testing.assert_array_equal(loss[:2], 0)
    np.testing.assert_array_equal(grad[:, :2], 0)
    assert loss[2] > 0 and np.abs(grad[:, 2]).sum() > 0


def test_ctc_gradient_of_a_certain_frame(ctx):
    # every frame certain of the blank (float32 probability exactly 1): MXNet's warp-ctc
    # takes its log-occupancy 0.0 for "unset" and gives p = 1 on the blank, not p - 1 = 0
    data = np.zeros((3, 2, 4), np.float32)
    data[:, :, 0] = 50
    label = np.array([[0, 0], [1, 0]], np.float32)
    loss, grad = _forward_backward(ctx, {}, [data, label])
    assert loss[0] == 0 and abs(loss[1] - (50 - np.log(3))) < 1e-4
    np.testing.assert_allclose(grad[:, 0], 0, atol=1e-6)
    # its one frame of label 1 is any of the three (3 paths of e^-50): occupancy 1/3, blank 2/3
    np.testing.assert_allclose(grad[:, 1, :2], [[1 / 3, -1 / 3]] * 3, atol=1e-5)


@pytest.mark.parametrize(
    "attrs, label, extra, found",
    [
        ({}, [[5, 2], [1, 0]], [], "label value 5"),
        ({}, [[1, -1], [1, 0]], [], "label value -1"),
        ({"blank_label": "last"}, [[1, -2], [1, -1]], [], "label value -2"),
        ({"use_label_lengths": "True"}, [[1, 7], [1, 7]], [np.array([1.0, 2.0])], "value 7"),
        ({"use_data_lengths": "True"}, [[1, 2], [1, 0]], [np.array([5.0, 2.0])], "holds 5"),
        ({"use_data_lengths": "True"}, [[1, 2], [1, 0]], [np.array([4.0, -1.0])], "holds -1"),
        ({"use_label_lengths": "True"}, [[1, 2], [1, 0]], [np.array([3.0, 1.0])], "holds 3"),
        ({"use_label_lengths": "True"}, [[1, 2], [1, 0]], [np.array([2.0, -1.0])], "holds -1"),
    ],
)
def test_ctc_values_outside_their_range_raise(attrs, label, extra, found, ctx):
    # warp-ctc indexes past its buffers there (garbage losses, or a crash in free())
    data = np.random.default_rng(8).standard_normal((4, 2, 5)).astype(np.float32)
    with pytest.raises(ValueError, match=found):
        _forward_backward(ctx, attrs, [data, np.array(label, np.float32), *extra])


def test_ctc_label_past_its_length_is_not_checked(ctx):
    data = np.random.default_rng(9).standard_normal((4, 2, 5))
    label, lengths = np.array([[1, 9], [2, 3]], np.float64), np.array([1.0, 2.0])
    loss, _ = _forward_backward(ctx, {"use_label_lengths": "True"}, [data, label, lengths])
    expected = _brute_force_loss(data, [[1], [2, 3]], 0)
    np.testing.assert_allclose(loss, expected, rtol=1e-10)
