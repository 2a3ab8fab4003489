"""softmax, log_softmax, softmin, softmax_cross_entropy: golden, gradients, shapes."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

FAMILY = ("softmax", "log_softmax", "softmin")


@pytest.mark.parametrize("case_id", case_ids(*FAMILY, "softmax_cross_entropy"))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def run(op_name, attrs, inputs, ctx, head=None):
    """Forward on host arrays; with ``head``, also backward: (output, data gradient)."""
    op = opdef(op_name)
    params = op.parse(attrs)
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    outs, saved = op.forward(
        op_ctx, params, [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs], []
    )
    out = np.asarray(ctx.backend.to_host(outs[0]))
    if head is None:
        return out, None
    need = [True] + [False] * (len(inputs) - 1)
    grads = op.backward(
        op_ctx, params, saved, [ctx.backend.asarray(head, head.dtype, ctx.device_id)], need
    )
    return out, np.asarray(ctx.backend.to_host(grads[0]))


def reference(op_name, x, axis=-1, temperature=1.0):
    z = (-x if op_name == "softmin" else x) / temperature
    z = z - z.max(axis=axis, keepdims=True)
    log = z - np.log(np.exp(z).sum(axis=axis, keepdims=True))
    return log if op_name == "log_softmax" else np.exp(log)


VARIANTS = [{}, {"axis": "0"}, {"axis": "1", "temperature": "2.5"}, {"temperature": "0.5"}]


@pytest.mark.parametrize("op_name", FAMILY)
@pytest.mark.parametrize("attrs", VARIANTS)
def test_numeric_gradient(op_name, attrs, ctx):
    data = np.random.default_rng(8).standard_normal((2, 3, 4))
    check_numeric_gradient(op_name, attrs, [data], ctx)


@pytest.mark.parametrize("op_name", FAMILY)
@pytest.mark.parametrize("axis", [0, 1])
def test_use_length_numeric_gradient(op_name, axis, ctx):
    data = np.random.default_rng(9).standard_normal((3, 4))
    length = np.array([4, 1, 2] if axis == 1 else [3, 1, 2, 3], dtype=np.int32)
    attrs = {"axis": str(axis), "use_length": "True", "temperature": "1.5"}
    check_numeric_gradient(op_name, attrs, [data, length], ctx)


@pytest.mark.parametrize("op_name", FAMILY)
def test_values_match_the_definition(op_name, ctx):
    data = np.random.default_rng(10).standard_normal((3, 5))
    out, _ = run(op_name, {"axis": "0", "temperature": "3"}, [data], ctx)
    np.testing.assert_allclose(out, reference(op_name, data, 0, 3.0), rtol=1e-12)


@pytest.mark.parametrize("op_name", FAMILY)
def test_large_logits_are_stable(op_name, ctx):
    data = np.array([[1000.0, 1001.0, -1000.0]], dtype=np.float32)
    out, _ = run(op_name, {}, [data], ctx)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, reference(op_name, data.astype(np.float64)), atol=1e-6)


@pytest.mark.parametrize("op_name", FAMILY)
def test_use_length_masks_positions_and_survives_length_zero(op_name, ctx):
    data = np.random.default_rng(11).standard_normal((3, 4)).astype(np.float32)
    length = np.array([2, 0, 4], dtype=np.int32)
    head = np.ones((3, 4), dtype=np.float32)
    out, grad = run(op_name, {"use_length": "True"}, [data, length], ctx, head)
    np.testing.assert_array_equal(out[0, 2:], 0)
    np.testing.assert_array_equal(out[1], 0)
    np.testing.assert_allclose(out[0, :2], reference(op_name, data[0, :2]), rtol=1e-5)
    np.testing.assert_allclose(out[2], reference(op_name, data[2]), rtol=1e-5)
    np.testing.assert_array_equal(grad[0, 2:], 0)
    np.testing.assert_array_equal(grad[1], 0)


def test_float16_and_dtype_param(ctx):
    data = np.random.default_rng(12).standard_normal((2, 6)).astype(np.float16)
    out, grad = run("softmax", {}, [data], ctx, np.ones((2, 6), np.float16))
    assert out.dtype == np.float16 and grad.dtype == np.float16
    np.testing.assert_allclose(out, reference("softmax", data.astype(np.float64)), atol=1e-3)
    out, grad = run("log_softmax", {"dtype": "float64"}, [data], ctx, np.ones((2, 6)))
    assert out.dtype == np.float64 and grad.dtype == np.float16
    op = opdef("softmax")
    assert op.infer_types(op.parse({"dtype": "float64"}), ["float16"])[1] == ["float64"]
    assert op.infer_types(op.parse({}), [None], ["float32"])[0] == ["float32"]


def test_cross_entropy_values_and_gradient(ctx):
    rng = np.random.default_rng(13)
    data = rng.standard_normal((4, 5))
    label = np.array([0, 4, 2, 2], dtype=np.float64)
    out, _ = run("softmax_cross_entropy", {}, [data, label], ctx)
    expected = -reference("log_softmax", data)[np.arange(4), label.astype(int)].sum()
    np.testing.assert_allclose(out, [expected], rtol=1e-12)
    check_numeric_gradient("softmax_cross_entropy", {}, [data, label], ctx, grad_args=[0])


def test_shape_inference():
    assert infer("softmax", {}, [(2, 3)]) == ([(2, 3)], [(2, 3)], [])
    assert infer("log_softmax", {}, [None], out_shapes=[(4, 5)])[0] == [(4, 5)]
    ins, outs, _ = infer("softmax", {"axis": "1", "use_length": "True"}, [(2, 3, 4), None])
    assert ins == [(2, 3, 4), (2, 4)] and outs == [(2, 3, 4)]
    assert infer("softmin", {"use_length": "True"}, [(5,), None])[0][1] == (1,)
    ins, outs, _ = infer("softmax_cross_entropy", {}, [(6, 3), None])
    assert ins == [(6, 3), (6,)] and outs == [(1,)]


@pytest.mark.parametrize(
    "op_name, attrs, shapes, argument",
    [
        ("softmax", {"use_length": "True"}, [(2, 3), (3,)], "'length'"),
        ("softmax", {"axis": "2"}, [(2, 3), None], "'data'"),
        ("softmax_cross_entropy", {}, [(2, 3, 4), None], "'data'"),
        ("softmax_cross_entropy", {}, [(2, 3), (3,)], "'label'"),
    ],
)
def test_shape_errors(op_name, attrs, shapes, argument):
    shapes = shapes[: len(opdef(op_name).arguments(opdef(op_name).parse(attrs)))]
    with pytest.raises(ShapeError, match=argument) as info:
        infer(op_name, attrs, shapes)
    assert "node0" in str(info.value)


def test_output_shape_conflict():
    with pytest.raises(ShapeError):
        infer("softmax", {}, [(2, 3)], out_shapes=[(3, 2)])


@pytest.mark.parametrize(
    "attrs, fragment",
    [
        ({"axis": "a"}, "axis='a' is invalid"),
        ({"dtype": "int32"}, "dtype='int32' is invalid"),
        ({"temperature": "hot"}, "temperature='hot' is invalid"),
        ({"use_lenght": "True"}, "unknown parameter 'use_lenght'"),
    ],
)
def test_bad_params(attrs, fragment):
    with pytest.raises(ParamError, match=fragment):
        opdef("softmax").parse(attrs)


def test_arguments():
    op = opdef("softmax")
    assert op.arguments(op.parse({})) == ("data",)
    assert op.arguments(op.parse({"use_length": "True"})) == ("data", "length")
    assert opdef("softmax_cross_entropy").arguments(None) == ("data", "label")
