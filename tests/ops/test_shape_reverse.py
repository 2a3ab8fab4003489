"""reverse (alias flip): values and gradient against NumPy, names as MXNet writes them."""

import numpy as np
import pytest

import rebind as mx


@pytest.mark.parametrize("axis", [0, -1, (0, 2)])
def test_reverse_forward_and_backward(axis, ctx):
    rng = np.random.default_rng(0)
    data = rng.standard_normal((2, 3, 4)).astype(np.float32)
    scale = rng.standard_normal((2, 3, 4)).astype(np.float32)
    net = mx.sym.reverse(mx.sym.Variable("x"), axis=axis) * mx.sym.Variable("w")
    executor = net.simple_bind(ctx, x=data.shape, w=data.shape)
    executor.arg_dict["x"][:] = mx.nd.array(data, ctx=ctx)
    executor.arg_dict["w"][:] = mx.nd.array(scale, ctx=ctx)
    (out,) = executor.forward(is_train=True)
    np.testing.assert_array_equal(out.asnumpy(), np.flip(data, axis) * scale)
    executor.backward([mx.nd.ones(data.shape, ctx=ctx)])
    np.testing.assert_array_equal(executor.grad_dict["x"].asnumpy(), np.flip(scale, axis))


def test_flip_is_reverse_and_attrs_are_mxnet_strings(ctx):
    x = mx.nd.array(np.arange(6).reshape(2, 3), ctx=ctx)
    np.testing.assert_array_equal(mx.nd.flip(x, axis=1).asnumpy(), [[2, 1, 0], [5, 4, 3]])
    with mx.name.NameManager():
        node = mx.sym.reverse(mx.sym.Variable("x"), axis=(0, 1))
    assert node.name == "reverse0" and node.list_attr() == {"axis": "(0, 1)"}
    assert '"op": "reverse"' in mx.sym.flip(mx.sym.Variable("x"), axis=1).tojson()
    with pytest.raises(mx.ShapeError, match="axis 2"):
        mx.sym.reverse(mx.sym.Variable("x"), axis=2).infer_shape(x=(2, 3))
