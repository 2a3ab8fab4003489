"""amp_cast and amp_multicast: dtypes, pass-through of non-AMP types, gradients, inference."""

import numpy as np
import pytest

import rebind as mx
from rebind.ops import OpContext
from tests.ops.harness import check_numeric_gradient, infer, opdef


def _run(ctx, name, attrs, arrays):
    op = opdef(name)
    params = op.parse(attrs)
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    inputs = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in arrays]
    outs, saved = op.forward(op_ctx, params, inputs, [])
    return op, params, op_ctx, outs, saved


def _host(ctx, array):
    return np.asarray(ctx.backend.to_host(array))


@pytest.mark.parametrize(
    ("in_dtype", "target", "expected"),
    [
        ("float32", "float16", "float16"),
        ("float16", "float32", "float32"),
        ("float16", "float16", "float16"),
        ("float64", "float16", "float64"),  # not an AMP float: passes unchanged
        ("int32", "float16", "int32"),
    ],
)
def test_amp_cast_forward_and_backward_dtypes(ctx, in_dtype, target, expected):
    data = (np.arange(6).reshape(2, 3) * 0.37).astype(in_dtype)
    op, params, op_ctx, outs, saved = _run(ctx, "amp_cast", {"dtype": target}, [data])
    out = _host(ctx, outs[0])
    assert out.dtype == np.dtype(expected)
    np.testing.assert_array_equal(out, data.astype(expected))
    head = ctx.backend.asarray(np.ones((2, 3), expected), np.dtype(expected), ctx.device_id)
    (grad,) = op.backward(op_ctx, params, saved, [head], [True])
    assert _host(ctx, grad).dtype == np.dtype(in_dtype)


def test_amp_cast_type_inference_follows_the_input():
    op = opdef("amp_cast")
    params = op.parse({"dtype": "float16"})
    assert op.infer_types(params, ["float32"]) == (["float32"], ["float16"], [])
    assert op.infer_types(params, ["int64"])[1] == ["int64"]
    # an unknown input says nothing, and the output does not decide the input
    assert op.infer_types(params, [None], ["float16"]) == ([None], ["float16"], [])


def test_amp_cast_numeric_gradient(ctx):
    data = np.random.default_rng(0).standard_normal((3, 4))
    check_numeric_gradient("amp_cast", {"dtype": "float32"}, [data], ctx, rtol=1e-2, eps=1e-3)


@pytest.mark.parametrize(
    ("dtypes", "narrow", "expected"),
    [
        (("float16", "float32"), False, ("float32", "float32")),
        (("float16", "float16"), False, ("float16", "float16")),
        (("float16", "float32"), True, ("float16", "float16")),
        (("float32", "int32", "float16"), False, ("float32", "int32", "float32")),
        (("float32", "float64"), False, ("float32", "float64")),
    ],
)
def test_amp_multicast_casts_to_the_widest_or_narrowest(ctx, dtypes, narrow, expected):
    arrays = [np.full((2, 2), i + 1.5).astype(t) for i, t in enumerate(dtypes)]
    attrs = {"num_outputs": len(dtypes), "cast_narrow": narrow}
    op, params, op_ctx, outs, saved = _run(ctx, "amp_multicast", attrs, arrays)
    assert tuple(_host(ctx, o).dtype.name for o in outs) == expected
    for out, array, dtype in zip(outs, arrays, expected, strict=True):
        np.testing.assert_array_equal(_host(ctx, out), array.astype(dtype))
    heads = [ctx.backend.asarray(np.ones((2, 2), t), np.dtype(t), ctx.device_id) for t in expected]
    grads = op.backward(op_ctx, params, saved, heads, [True] * len(dtypes))
    assert tuple(_host(ctx, g).dtype.name for g in grads) == dtypes
    assert op.infer_types(params, list(dtypes))[1] == list(expected)


def test_amp_multicast_numeric_gradient(ctx):
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((2, 3)), rng.standard_normal((2, 3))]
    check_numeric_gradient("amp_multicast", {"num_outputs": 2}, inputs, ctx)


def test_amp_multicast_names_and_shapes():
    s = mx.sym.amp_multicast(mx.sym.var("a"), mx.sym.var("b"), num_outputs=2, name="mc")
    assert s.list_arguments() == ["a", "b"]
    assert s.list_outputs() == ["mc_output0", "mc_output1"]
    ins, outs, _ = infer("amp_multicast", {"num_outputs": 2}, [(2, 3), None], [None, (4, 5)])
    assert ins == [(2, 3), (4, 5)] and outs == [(2, 3), (4, 5)]
    assert opdef("amp_multicast").arguments(opdef("amp_multicast").parse({"num_outputs": 3})) == (
        "data_0",
        "data_1",
        "data_2",
    )


def test_amp_cast_through_ndarray_and_autograd_free_executor(ctx):
    x = mx.nd.array(np.linspace(-1, 1, 6).reshape(2, 3), ctx=ctx)
    y = mx.nd.amp_cast(x, dtype="float16")
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy().astype(np.float16))
    data = mx.sym.var("data")
    net = mx.sym.sum(mx.sym.amp_cast(data, dtype="float16") * 2)
    exe = net.simple_bind(ctx, data=(2, 3))
    exe.arg_dict["data"][:] = x
    exe.forward(is_train=True)
    exe.backward()
    assert exe.outputs[0].dtype == np.float16
    assert exe.grad_dict["data"].dtype == np.float32
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), np.full((2, 3), 2.0))
