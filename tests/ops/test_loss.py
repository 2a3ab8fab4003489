"""Loss layers: SoftmaxOutput, regression outputs, MakeLoss, make_loss."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from tests.ops.harness import (
    _arrays,
    assert_close,
    case_ids,
    check_numeric_gradient,
    golden_cases,
    infer,
    opdef,
    replay_golden,
)

LOSS_OPS = (
    "SoftmaxOutput",
    "LinearRegressionOutput",
    "LogisticRegressionOutput",
    "MAERegressionOutput",
    "MakeLoss",
    "make_loss",
)
FLATTENED_4D = "softmaxoutput_4d_no_multi_output"


@pytest.mark.parametrize("case_id", case_ids(*LOSS_OPS))
def test_golden(case_id, ctx):
    # FLATTENED_4D: its out_infer.0 came from MXNet's MKLDNN inference kernel, which
    # normalises over the last axis, unlike MXNet's own training pass and its native
    # (non-MKLDNN, GPU) inference kernels. We follow the documented flattened softmax
    # in both modes; test_softmax_4d_inference_is_flattened checks it.
    replay_golden(case_id, ctx, skip=("infer",) if case_id == FLATTENED_4D else ())


def _run(ctx, op_name, attrs, inputs, is_train=True, heads=None):
    op = opdef(op_name)
    params = op.parse(attrs)
    op_ctx = OpContext(is_train, ctx.backend, ctx.device_id)
    args = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, saved = op.forward(op_ctx, params, args, [])
    if heads is None:
        return [ctx.backend.to_host(o) for o in outs], None
    heads = [ctx.backend.asarray(h, h.dtype, ctx.device_id) for h in heads]
    grads = op.backward(op_ctx, params, saved, heads, [True] * len(inputs))
    host = [None if g is None else np.asarray(ctx.backend.to_host(g)) for g in grads]
    return [np.asarray(ctx.backend.to_host(o)) for o in outs], host


@pytest.mark.parametrize("is_train", [False, True])
def test_softmax_output_one_row_equals_its_row_of_a_batch(is_train, ctx):
    """One row takes whole-array reductions; the values must be those of the batched rows."""
    rng = np.random.default_rng(4)
    data = (rng.standard_normal((4, 9)) * 5).astype(np.float32)
    label = np.array([1, 8, 0, 3], np.float32)
    batched, _ = _run(ctx, "SoftmaxOutput", {}, [data, label], is_train)
    for row in range(4):
        single, _ = _run(
            ctx, "SoftmaxOutput", {}, [data[row : row + 1], label[row : row + 1]], is_train
        )
        np.testing.assert_allclose(single[0], batched[0][row : row + 1], rtol=1e-6, atol=1e-7)
        expected = np.exp(data[row] - data[row].max())
        np.testing.assert_allclose(single[0][0], expected / expected.sum(), rtol=1e-5)


@pytest.mark.parametrize("classes", [65, 1000, 10000])
def test_softmax_output_of_many_classes_equals_the_float64_softmax(classes, ctx):
    """On a GPU rows of more than 64 classes take a warp each: values, a NaN row, the
    gradient."""
    rng = np.random.default_rng(classes)
    data = (rng.standard_normal((37, classes)) * 4).astype(np.float32)
    data[5, classes // 2] = np.nan
    label = rng.integers(0, classes, 37).astype(np.float32)
    heads = [np.ones_like(data)]
    (prob,), (grad, _) = _run(ctx, "SoftmaxOutput", {}, [data, label], heads=heads)
    wide = data.astype(np.float64)
    expected = np.exp(wide - wide.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(prob, expected, rtol=2e-5, atol=1e-7)
    assert np.isnan(prob[5]).all()
    expected[np.arange(37), label.astype(np.int64)] -= 1
    np.testing.assert_allclose(grad, expected, rtol=2e-5, atol=1e-6)


def test_softmax_4d_inference_is_flattened(ctx):
    """The recorded MKLDNN inference value is not matched, on purpose (see test_golden)."""
    data = _arrays(golden_cases()[FLATTENED_4D])
    outs, _ = _run(ctx, "SoftmaxOutput", {}, [data["arg.data"], data["arg.label"]], False)
    assert_close(outs[0], data["out.0"], "inference equals MXNet's flattened training output")
    assert not np.allclose(outs[0], data["out_infer.0"], atol=1e-3)


# -- numeric gradients --------------------------------------------------------


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _cross_entropy(label, axis, scale=1.0, ignore=None, alpha=0.0):
    """The loss whose gradient SoftmaxOutput returns, for integer labels along ``axis``."""

    def loss(outputs, heads):
        out = outputs[0]
        classes = np.expand_dims(label.astype(int), axis)
        k = out.shape[axis]
        onehot = np.arange(k).reshape([-1 if i == axis else 1 for i in range(out.ndim)])
        onehot = onehot == classes
        target = np.where(onehot, 1 - alpha, alpha / (k - 1))
        if ignore is not None:
            target = target * (classes != ignore)
        return -scale * float(np.sum(target * np.log(out)))

    return loss


@pytest.mark.parametrize(
    "attrs, shape, label, scale, ignore",
    [
        ({}, (3, 4), [0, 3, 1], 1.0, None),
        ({"grad_scale": "0.5", "normalization": "batch"}, (3, 4), [2, 1, 1], 0.5 / 3, None),
        (
            {"use_ignore": "True", "ignore_label": "1", "normalization": "valid"},
            (4, 3),
            [0, 1, 2, 2],
            1 / 3,
            1,
        ),
        ({"use_ignore": "True", "ignore_label": "2"}, (3, 4), [2, 0, 3], 1.0, 2),
    ],
)
def test_softmax_output_numeric_gradient(attrs, shape, label, scale, ignore, ctx):
    rng = np.random.default_rng(3)
    label = np.array(label, dtype=np.float64)
    check_numeric_gradient(
        "SoftmaxOutput",
        attrs,
        [rng.standard_normal(shape), label],
        ctx,
        grad_args=[0],
        loss=_cross_entropy(label, 1, scale, ignore),
    )


def test_softmax_output_smooth_alpha_numeric_gradient(ctx):
    rng = np.random.default_rng(4)
    label = np.array([1.0, 3.0])
    check_numeric_gradient(
        "SoftmaxOutput",
        {"smooth_alpha": "0.2"},
        [rng.standard_normal((2, 4)), label],
        ctx,
        grad_args=[0],
        loss=_cross_entropy(label, 1, alpha=0.2),
    )


def test_softmax_output_multi_output_numeric_gradient(ctx):
    rng = np.random.default_rng(5)
    label = np.array([[0.0, 2, 1], [1, 1, 0]])
    # without 'valid' normalization MXNet also divides by the positions per sample (3)
    check_numeric_gradient(
        "SoftmaxOutput",
        {"multi_output": "True"},
        [rng.standard_normal((2, 3, 3)), label],
        ctx,
        grad_args=[0],
        loss=_cross_entropy(label, 1, scale=1 / 3),
    )


def test_softmax_output_preserve_shape_numeric_gradient(ctx):
    rng = np.random.default_rng(6)
    label = np.array([[0.0, 2], [1, 1]])
    check_numeric_gradient(
        "SoftmaxOutput",
        {"preserve_shape": "True"},
        [rng.standard_normal((2, 2, 3)), label],
        ctx,
        grad_args=[0],
        loss=_cross_entropy(label, 2),
    )


def test_softmax_output_probability_label_numeric_gradient(ctx):
    rng = np.random.default_rng(7)
    label = _softmax(rng.standard_normal((3, 4)), 1)  # rows sum to 1

    def loss(outputs, heads):
        return -2.0 * float(np.sum(label * np.log(outputs[0])))

    check_numeric_gradient(
        "SoftmaxOutput",
        {"grad_scale": "2"},
        [rng.standard_normal((3, 4)), label],
        ctx,
        grad_args=[0],
        loss=loss,
    )


def test_softmax_output_ignores_head_gradient(ctx):
    rng = np.random.default_rng(8)
    inputs = [rng.standard_normal((3, 5)).astype(np.float32), np.array([0, 4, 2], np.float32)]
    _, with_random = _run(
        ctx, "SoftmaxOutput", {}, inputs, heads=[rng.standard_normal((3, 5)).astype(np.float32)]
    )
    _, with_ones = _run(ctx, "SoftmaxOutput", {}, inputs, heads=[np.ones((3, 5), np.float32)])
    np.testing.assert_array_equal(with_random[0], with_ones[0])
    assert with_random[1] is None  # the label gets no gradient


def test_softmax_output_out_grad_multiplies_by_output(ctx):
    """MXNet 1.9.1 feeds the output, not the head gradient, to out_grad (golden data)."""
    rng = np.random.default_rng(9)
    data = rng.standard_normal((2, 4)).astype(np.float32)
    label = np.array([1, 2], np.float32)
    outs, grads = _run(
        ctx,
        "SoftmaxOutput",
        {"out_grad": "True"},
        [data, label],
        heads=[rng.standard_normal((2, 4)).astype(np.float32)],
    )
    onehot = np.eye(4, dtype=np.float32)[[1, 2]]
    assert_close(grads[0], (outs[0] - onehot) * outs[0], "out_grad gradient")


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_softmax_output_keeps_dtype(dtype, ctx):
    data = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], dtype=dtype)
    outs, grads = _run(
        ctx, "SoftmaxOutput", {}, [data, np.array([2, 0], dtype)], heads=[np.ones((2, 3), dtype)]
    )
    assert outs[0].dtype == dtype and grads[0].dtype == dtype
    assert_close(outs[0], _softmax(data.astype(np.float64), 1).astype(dtype), "softmax")


@pytest.mark.parametrize(
    "op_name, shape, label_shape, scale",
    [
        ("LinearRegressionOutput", (3, 4), (3, 4), 1.0),
        ("LinearRegressionOutput", (3, 1), (3,), 2.0),
        ("LogisticRegressionOutput", (2, 3), (2, 3), 1.0),
        ("MAERegressionOutput", (2, 2, 2), (2, 4), 0.5),
    ],
)
def test_regression_numeric_gradient(op_name, shape, label_shape, scale, ctx):
    rng = np.random.default_rng(10)
    data = rng.standard_normal(shape)
    if op_name == "LogisticRegressionOutput":
        label = rng.uniform(0, 1, label_shape)
    else:
        label = rng.standard_normal(label_shape)
    per_sample = np.prod(label_shape[1:], dtype=int)
    target = label.reshape(shape)

    def loss(outputs, heads):
        out, factor = outputs[0], scale / per_sample
        if op_name == "LinearRegressionOutput":
            return factor * float(np.sum((out - target) ** 2)) / 2
        if op_name == "MAERegressionOutput":
            return factor * float(np.sum(np.abs(out - target)))
        return -factor * float(np.sum(target * np.log(out) + (1 - target) * np.log(1 - out)))

    check_numeric_gradient(
        op_name, {"grad_scale": str(scale)}, [data, label], ctx, grad_args=[0], loss=loss
    )
    _, grads = _run(
        ctx, op_name, {"grad_scale": str(scale)}, [data, label], heads=[rng.standard_normal(shape)]
    )
    np.testing.assert_array_equal(grads[1], np.zeros(label_shape))  # MXNet: zero label grad


def test_mae_gradient_is_minus_one_at_ties(ctx):
    data = np.array([[1.0, 2.0, 3.0]])
    _, grads = _run(
        ctx, "MAERegressionOutput", {}, [data, np.array([[1.0, 1.0, 4.0]])], heads=[np.ones((1, 3))]
    )
    np.testing.assert_allclose(grads[0], [[-1 / 3, 1 / 3, -1 / 3]])


@pytest.mark.parametrize(
    "attrs, shape, divisor",
    [
        ({}, (2, 3), 1),
        ({"normalization": "batch", "grad_scale": "3"}, (2, 3), 2 / 3),
        ({"normalization": "batch"}, (2, 3, 2), 6),  # rows of the (6, 2) view
        ({"normalization": "valid", "valid_thresh": "0.1"}, (3, 3), None),
    ],
)
def test_makeloss_numeric_gradient(attrs, shape, divisor, ctx):
    rng = np.random.default_rng(11)
    data = rng.standard_normal(shape)
    data[np.abs(data - 0.1) < 1e-3] = 0.5  # keep away from the threshold's jump
    if divisor is None:
        divisor = max(int(np.sum(data > 0.1)), 1)

    def loss(outputs, heads):
        return float(np.sum(outputs[0])) / divisor

    check_numeric_gradient("MakeLoss", attrs, [data], ctx, loss=loss)


def test_lowercase_make_loss_gradient_is_ones(ctx):
    rng = np.random.default_rng(12)
    data = rng.standard_normal((2, 3))
    outs, grads = _run(ctx, "make_loss", {}, [data], heads=[rng.standard_normal((2, 3))])
    np.testing.assert_array_equal(outs[0], data)
    np.testing.assert_array_equal(grads[0], np.ones((2, 3)))
    assert opdef("make_loss").outputs(opdef("make_loss").parse({})) == ("loss",)
    with pytest.warns(UserWarning, match="make_loss takes no parameters; 'grad_scale' has no"):
        opdef("make_loss").parse({"grad_scale": "2"})


# -- shape inference and parameters -------------------------------------------


@pytest.mark.parametrize(
    "attrs, data, label",
    [
        ({}, (4, 10), (4,)),
        ({}, (2, 3, 5), (2, 3)),
        ({"preserve_shape": "True"}, (2, 3, 5), (2, 3)),
        ({"multi_output": "True"}, (2, 5, 3), (2, 3)),
        ({"multi_output": "True"}, (2, 5, 3, 4), (2, 12)),  # MXNet's choice: (N, prod(rest))
    ],
)
def test_softmax_output_infers_label(attrs, data, label):
    ins, outs, _ = infer("SoftmaxOutput", attrs, [data, None])
    assert ins == [data, label] and outs == [data]


@pytest.mark.parametrize("label", [(2, 12), (2, 3, 4), (2, 1, 3, 4), (2, 5, 3, 4)])
def test_softmax_output_multi_output_accepts_label_layouts(label):
    ins, _, _ = infer("SoftmaxOutput", {"multi_output": "True"}, [(2, 5, 3, 4), label])
    assert ins[1] == label


def test_softmax_output_accepts_probability_label():
    ins, _, _ = infer("SoftmaxOutput", {}, [(4, 10), (4, 10)])
    assert ins[1] == (4, 10)


@pytest.mark.parametrize(
    "attrs, label",
    [({}, (4, 1)), ({}, (5,)), ({"multi_output": "True"}, (4, 7))],
)
def test_softmax_output_bad_label_names_node_argument_and_shapes(attrs, label):
    with pytest.raises(ShapeError) as info:
        infer("SoftmaxOutput", attrs, [(4, 10), label])
    message = str(info.value)
    assert "node0" in message and "'label'" in message and str(label) in message


def test_softmax_alias():
    assert opdef("Softmax") is opdef("SoftmaxOutput")


@pytest.mark.parametrize(
    "data, label",
    [((5, 1), (5,)), ((5, 3), (5, 3)), ((5, 2, 2), (5, 2, 2))],
)
def test_regression_infers_label(data, label):
    for op_name in LOSS_OPS[1:4]:
        ins, outs, _ = infer(op_name, {}, [data, None])
        assert ins == [data, label] and outs == [data]


def test_regression_accepts_same_size_label_and_rejects_others():
    ins, _, _ = infer("LinearRegressionOutput", {}, [(5, 4), (5, 2, 2)])
    assert ins[1] == (5, 2, 2)
    with pytest.raises(ShapeError, match="'label' has shape \\(5, 3\\)"):
        infer("LinearRegressionOutput", {}, [(5, 4), (5, 3)])
    with pytest.raises(ShapeError, match="'label'"):
        infer("MAERegressionOutput", {}, [(5, 4), (4, 5)])


@pytest.mark.parametrize(
    "op_name, attrs, fragment",
    [
        ("SoftmaxOutput", {"normalization": "mean"}, "normalization='mean' is invalid"),
        ("SoftmaxOutput", {"smooth_alpha": "1.5"}, "smooth_alpha must be in"),
        ("SoftmaxOutput", {"multi_ouput": "True"}, "unknown parameter 'multi_ouput'"),
        ("LinearRegressionOutput", {"grad_scale": "x"}, "grad_scale='x' is invalid"),
        ("MakeLoss", {"normalization": "all"}, "normalization='all' is invalid"),
    ],
)
def test_bad_params(op_name, attrs, fragment):
    with pytest.raises(ParamError, match=fragment):
        opdef(op_name).parse(attrs)


def test_loss_ops_are_flagged():
    assert all(opdef(name).is_loss for name in LOSS_OPS)
