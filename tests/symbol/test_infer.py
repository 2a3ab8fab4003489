"""Shape and dtype inference over whole symbols (``infer_shape``, ``infer_type``)."""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ShapeError


def _mlp(hidden=8, classes=3):
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=hidden, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=classes, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def _expected_mlp(batch, features, hidden=8, classes=3):
    return (
        [(batch, features), (hidden, features), (hidden,), (classes, hidden), (classes,), (batch,)],
        [(batch, classes)],
        [],
    )


def test_keyword_and_positional_shapes_agree():
    net = _mlp()
    assert net.infer_shape(data=(4, 5)) == _expected_mlp(4, 5)
    assert net.infer_shape((4, 5)) == _expected_mlp(4, 5)
    assert net.infer_shape([4, 5]) == _expected_mlp(4, 5)


def test_shapes_flow_backward_from_consumers():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    assert (a + b).infer_shape(b=(2, 3)) == ([(2, 3), (2, 3)], [(2, 3)], [])
    # the label learns its shape from the output, the weight from both sides
    net = _mlp()
    args, _, _ = net.infer_shape(data=(6, 7))
    assert dict(zip(net.list_arguments(), args, strict=True))["softmax_label"] == (6,)


def test_partial_inference_leaves_unknowns_empty_or_zero():
    net = _mlp()
    args, outs, aux = net.infer_shape_partial()
    names = dict(zip(net.list_arguments(), args, strict=True))
    assert names["data"] == () and names["fc1_weight"] == () and outs == [()]
    args, _, _ = net.infer_shape_partial(fc1_weight=(8, 5))
    assert dict(zip(net.list_arguments(), args, strict=True))["fc1_weight"] == (8, 5)
    a, b = mx.sym.var("a"), mx.sym.var("b")
    assert (a * b).infer_shape_partial(a=(2, 0)) == ([(2, 0), (2, 0)], [(2, 0)], [])
    assert net.infer_shape_partial(data=(4, 5)) == net.infer_shape(data=(4, 5))


def test_conflicting_shapes_name_node_argument_and_inputs():
    net = _mlp()
    with pytest.raises(ShapeError) as info:
        net.infer_shape(data=(4, 5), fc1_weight=(7, 5))
    message = str(info.value)
    for part in (
        "FullyConnected node 'fc1'",
        "argument 'weight'",
        "(7, 5)",
        "(8, 5)",
        "input shapes given: data=(4, 5), fc1_weight=(7, 5)",
    ):
        assert part in message
    a, b = mx.sym.var("a"), mx.sym.var("b")
    with pytest.raises(ShapeError, match=r"elemwise_add node .*\(3, 3\).*\(2, 3\)"):
        (a + b).infer_shape(a=(2, 3), b=(3, 3))


def test_label_mismatch_is_reported_on_the_loss_node():
    with pytest.raises(ShapeError, match="SoftmaxOutput node 'softmax': argument 'label'"):
        _mlp().infer_shape(data=(4, 5), softmax_label=(5,))


def test_missing_input_shape_gives_nones_and_a_warning_as_mxnet():
    with pytest.warns(UserWarning, match="Cannot decide shape.*\\n\tdata: \\(\\)") as caught:
        assert _mlp().infer_shape() == (None, None, None)
    assert "cannot infer the shape of argument 'data'" in str(caught[0].message)
    with pytest.warns(UserWarning, match="given: fc1_weight=\\(8, 5\\)"):
        assert _mlp().infer_shape(fc1_weight=(8, 5)) == (None, None, None)


def test_binding_needs_every_shape_and_says_which_is_missing(ctx):
    with pytest.raises(ShapeError, match="cannot infer the shape of argument 'data'.*given: none"):
        _mlp().simple_bind(ctx)


def test_a_recurrent_state_of_unknown_shape_as_mxnet():
    """MXNet's test_symbol_infer_shape: the state's shape comes from a first partial pass."""
    data, prev = mx.sym.var("data"), mx.sym.var("prevstate")
    x2h = mx.sym.FullyConnected(data=data, name="x2h", num_hidden=128)
    h2h = mx.sym.FullyConnected(data=prev, name="h2h", num_hidden=128)
    out = mx.sym.Activation(data=mx.sym.elemwise_add(x2h, h2h), act_type="relu")
    with pytest.warns(UserWarning, match="prevstate: \\(\\)"):
        assert out.infer_shape(data=(10, 64)) == (None, None, None)
    args, outs, _ = out.infer_shape_partial(data=(10, 64))
    shapes = dict(zip(out.list_arguments(), args, strict=True))
    assert shapes["x2h_weight"] == (128, 64) and shapes["h2h_weight"] == ()
    args, _, _ = out.infer_shape(data=(10, 64), prevstate=outs[0])
    assert dict(zip(out.list_arguments(), args, strict=True))["h2h_weight"] == (128, 128)


def test_declared_shape_is_used_and_given_shape_wins():
    """MXNet uses ``__shape__`` only where no shape is given (a bigger batch at bind is fine)."""
    v = mx.sym.var("v", shape=(2, 3))
    assert (v * 2).infer_shape() == ([(2, 3)], [(2, 3)], [])
    assert (v * 2).infer_shape(v=(2, 4)) == ([(2, 4)], [(2, 4)], [])
    partial = mx.sym.var("p", shape=(0, 3))
    assert (partial * 2).infer_shape(p=(5, 0)) == ([(5, 3)], [(5, 3)], [])
    with pytest.raises(ShapeError, match="variable 'p': shape \\(5, 4, 0\\) given"):
        (partial * 2).infer_shape(p=(5, 4, 0))


def test_unknown_names_are_rejected():
    with pytest.raises(ValueError, match="\\['bogus'\\] are not inputs"):
        _mlp().infer_shape(bogus=(1,))
    with pytest.raises(ValueError, match="\\['bogus'\\] are not inputs"):
        _mlp().infer_type(bogus="float64")
    with pytest.raises(ValueError, match="not both"):
        _mlp().infer_shape((4, 5), data=(4, 5))
    with pytest.raises(ValueError, match="7 values for 6 arguments"):
        _mlp().infer_shape(*[(1,)] * 7)


@pytest.mark.parametrize("dtype", [np.float64, "float16", np.float32])
def test_dtypes_propagate_from_data(dtype):
    net = _mlp()
    args, outs, aux = net.infer_type(data=dtype)
    expected = np.dtype(dtype).type
    assert args == [expected] * 6 and outs == [expected] and aux == []
    assert net.infer_type_partial(data=dtype) == (args, outs, aux)


def test_dtype_defaults_and_declared_flags():
    assert _mlp().infer_type() == ([np.float32] * 6, [np.float32], [])
    half = mx.sym.var("h", dtype="float16")
    assert (half * 2).infer_type() == ([np.float16], [np.float16], [])
    assert (half * 2).infer_type(h="float64") == ([np.float64], [np.float64], [])


def test_aux_state_shapes_and_groups():
    bn = mx.sym.BatchNorm(mx.sym.var("x"), name="bn")
    assert bn.infer_shape(x=(4, 3, 2)) == ([(4, 3, 2), (3,), (3,)], [(4, 3, 2)], [(3,), (3,)])
    fc = mx.sym.FullyConnected(mx.sym.var("d"), num_hidden=8, name="fc")
    group = mx.sym.Group([fc, mx.sym.var("y")])
    assert group.infer_shape(d=(2, 3), y=(4,)) == ([(2, 3), (8, 3), (8,), (4,)], [(2, 8), (4,)], [])


def test_partial_type_inference_leaves_unknown_dtypes_none():
    """MXNet's test_symbol_infer_type: a dtype nothing determines is None in the partial
    form (and float32 in rebind's infer_type, which always completes)."""
    data = mx.sym.Variable("data")
    net = mx.sym.SoftmaxOutput(
        mx.sym.FullyConnected(mx.sym.Cast(data, dtype="float32"), num_hidden=3, name="fc1"),
        name="softmax",
    )
    args, outs, aux = net.infer_type_partial()
    assert args == [None, np.float32, np.float32, np.float32] and outs == [np.float32]
    assert net.infer_type()[0][0] is np.float32
    assert net.infer_type(data=np.float16)[0] == [np.float16] + [np.float32] * 3


@pytest.mark.parametrize(("first", "second"), [((2, 3), (-1, -1)), ((2, -1), (3, -1))])
def test_creator_shapes_with_minus_one_are_learned_from_consumers(first, second):
    # MXNet's test_transpose_infer_shape_back / _mixed: -1 is an unknown dimension
    total = mx.sym.ones(shape=first) + mx.sym.transpose(mx.sym.ones(shape=second))
    out = total.bind(mx.cpu(), args={}).forward()[0]
    assert out.shape == (2, 3)
    assert (out.asnumpy() == 2).all()
