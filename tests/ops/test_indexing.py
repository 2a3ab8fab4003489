"""Index and ordering operators: golden cases, finite differences, inference, errors.

Covers core/ops/indexing.py (take, pick, one_hot, Embedding) and
core/ops/ordering.py (topk, sort, argsort, argmax, argmin, argmax_channel).
"""

import numpy as np
import pytest

from rebind.base import MXNetError
from rebind.errors import ShapeError
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden
from tests.ops.test_shape import backward, rand, run

INDEX_OPS = ("take", "pick", "one_hot", "Embedding")
ORDER_OPS = ("topk", "sort", "argsort", "argmax", "argmin", "argmax_channel")


@pytest.mark.parametrize("case_id", case_ids(*INDEX_OPS, *ORDER_OPS))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def types(op_name, attrs, in_types):
    op = opdef(op_name)
    return op.infer_types(op.parse(attrs), in_types)


def test_alias():
    assert opdef("choose_element_0index") is opdef("pick")


# -- take --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "attrs, shape, indices",
    [
        ({}, (4, 3), [[0, 3], [3, 1]]),  # repeated rows accumulate
        ({"axis": "1"}, (2, 3, 2), [2, 0, 2]),
        ({"axis": "-1", "mode": "wrap"}, (2, 3), [-1, 4, 0]),
        ({"mode": "clip"}, (3, 2), [-3.0, 1.7, 9.0]),
    ],
)
def test_take_numeric_gradient(attrs, shape, indices, ctx):
    inputs = [rand(*shape), np.asarray(indices, np.float32)]
    check_numeric_gradient("take", attrs, inputs, ctx, grad_args=[0])


def test_take_modes_and_index_conversion(ctx):
    a = np.arange(12.0).reshape(4, 3)
    indices = np.asarray([-5.0, -0.9, 1.9, 4.0, 7.0], np.float32)
    (clip,), *_ = run(ctx, "take", {"mode": "clip"}, a, indices)
    np.testing.assert_array_equal(clip, a[[0, 0, 1, 3, 3]])  # truncation toward zero
    (wrap,), *_ = run(ctx, "take", {"mode": "wrap"}, a, indices)
    np.testing.assert_array_equal(wrap, a[[-5 % 4, 0, 1, 0, 3]])
    (ok,), *_ = run(ctx, "take", {"mode": "raise"}, a, np.asarray([3, 0], np.int32))
    np.testing.assert_array_equal(ok, a[[3, 0]])
    with pytest.raises(IndexError, match="out of range") as raised:
        run(ctx, "take", {"mode": "raise"}, a, np.asarray([4.0], np.float32))
    assert isinstance(raised.value, MXNetError)  # what MXNet's test_take catches


def test_take_index_gradient_is_zeros_when_asked_and_none_otherwise(ctx):
    a, indices = rand(3, 2), np.asarray([0.0, 2.0], np.float32)
    _, op, params, saved = run(ctx, "take", {}, a, indices)
    grads = backward(ctx, op, params, saved, [np.ones((2, 2))], [True, True])
    np.testing.assert_array_equal(grads[1], [0, 0])
    assert backward(ctx, op, params, saved, [np.ones((2, 2))], [True, False])[1] is None


def test_take_inference_and_types():
    assert infer("take", {"axis": "1"}, [(2, 5, 3), (4, 0)])[1] == [(2, 4, 0, 3)]
    assert infer("take", {}, [None, (4,)])[1] == [None]
    assert types("take", {}, ["float16", "int32"]) == (["float16", "int32"], ["float16"], [])
    with pytest.raises(ShapeError, match="'a'"):
        infer("take", {"axis": "2"}, [(2, 5), (4,)])
    with pytest.raises(ParamError, match="mode='fast'"):
        opdef("take").parse({"mode": "fast"})


# -- pick ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "attrs, shape, index",
    [
        ({}, (2, 4), [3, 0]),
        ({"axis": "0", "keepdims": "True"}, (3, 2), [[2, 0]]),
        ({"axis": "1", "mode": "wrap"}, (2, 3, 2), [[-1, 4], [0, 2]]),
        ({"axis": "0"}, (4,), [9]),
    ],
)
def test_pick_numeric_gradient(attrs, shape, index, ctx):
    inputs = [rand(*shape), np.asarray(index, np.float32)]
    check_numeric_gradient("pick", attrs, inputs, ctx, grad_args=[0])


def test_pick_inference_accepts_index_with_or_without_the_axis():
    ins, outs, _ = infer("pick", {"axis": "1"}, [(2, 4, 3), (2, 3)])
    assert outs == [(2, 3)] and ins[1] == (2, 3)
    ins, outs, _ = infer("pick", {"axis": "1"}, [(2, 4, 3), (0, 1, 0)])
    assert outs == [(2, 3)] and ins[1] == (2, 1, 3)
    assert infer("pick", {"keepdims": "True"}, [(2, 4), None])[1] == [(2, 1)]
    assert infer("pick", {}, [(5,), None])[1] == [(1,)]
    with pytest.raises(ShapeError, match="'index'"):
        infer("pick", {"axis": "1"}, [(2, 4, 3), (2, 4)])
    assert types("pick", {}, ["float64", "int64"]) == (["float64", "int64"], ["float64"], [])


def test_pick_rejects_axis_none():
    with pytest.raises(ParamError, match="axis=None is not supported"):
        opdef("pick").parse({"axis": "None"})


# -- one_hot --------------------------------------------------------------------------------


def test_one_hot_values_dtype_and_zero_gradient(ctx):
    indices = np.asarray([[0.0, 3.0], [-1.0, 2.9]], np.float32)
    attrs = {"depth": "3", "on_value": "5", "off_value": "-2", "dtype": "int64"}
    (out,), op, params, saved = run(ctx, "one_hot", attrs, indices)
    expected = np.full((2, 2, 3), -2)
    expected[0, 0, 0] = expected[1, 1, 2] = 5  # 3 and -1 are out of range; 2.9 -> 2
    np.testing.assert_array_equal(out, expected)
    assert out.dtype == np.int64
    (grad,) = backward(ctx, op, params, saved, [np.ones((2, 2, 3))], [True])
    np.testing.assert_array_equal(grad, np.zeros((2, 2)))


def test_one_hot_inference():
    assert infer("one_hot", {"depth": "4"}, [(2, 3)])[1] == [(2, 3, 4)]
    ins, _, _ = infer("one_hot", {"depth": "4"}, [None], out_shapes=[(5, 4)])
    assert ins == [(5,)]
    assert types("one_hot", {"depth": "2", "dtype": "uint8"}, ["float32"])[1] == ["uint8"]
    with pytest.raises(ShapeError):
        infer("one_hot", {"depth": "4"}, [(2,)], out_shapes=[(2, 5)])
    with pytest.raises(ParamError, match="depth must be positive"):
        opdef("one_hot").parse({"depth": "0"})
    with pytest.raises(ParamError, match="dtype"):
        opdef("one_hot").parse({"depth": "2", "dtype": "bool"})


# -- Embedding ---------------------------------------------------------------------------------


def test_embedding_numeric_gradient(ctx):
    data = np.asarray([[1, 3, 1], [0, 1, 4]], np.float32)
    check_numeric_gradient(
        "Embedding", {"input_dim": "5", "output_dim": "3"}, [data, rand(5, 3)], ctx, grad_args=[1]
    )


def test_embedding_repeated_indices_accumulate(ctx):
    data = np.asarray([2, 2, 0, 2, 7], np.float32)  # 7 clips to the last row
    weight = rand(4, 3)
    attrs = {"input_dim": "4", "output_dim": "3"}
    (out,), op, params, saved = run(ctx, "Embedding", attrs, data, weight)
    np.testing.assert_array_equal(out, weight[[2, 2, 0, 2, 3]])
    head = rand(5, 3, seed=1)
    grads = backward(ctx, op, params, saved, [head], [False, True])
    expected = np.zeros((4, 3))
    np.add.at(expected, [2, 2, 0, 2, 3], head)
    assert grads[0] is None
    np.testing.assert_allclose(grads[1], expected, rtol=1e-12)


def test_embedding_float16_gradient_accumulates_in_float32(ctx):
    data = np.zeros(3000, np.float32)
    weight = np.zeros((2, 1), np.float16)
    attrs = {"input_dim": "2", "output_dim": "1", "dtype": "float16"}
    _, op, params, saved = run(ctx, "Embedding", attrs, data, weight)
    grads = backward(ctx, op, params, saved, [np.ones((3000, 1), np.float16)], [False, True])
    assert grads[1].dtype == np.float16 and grads[1][0, 0] == 3000


def test_embedding_inference_and_types():
    attrs = {"input_dim": "10", "output_dim": "4"}
    ins, outs, _ = infer("Embedding", attrs, [(2, 0), None])
    assert ins == [(2, 0), (10, 4)] and outs == [(2, 0, 4)]
    ins, _, _ = infer("Embedding", attrs, [None, None], out_shapes=[(3, 4)])
    assert ins == [(3,), (10, 4)]
    with pytest.raises(ShapeError) as info:
        infer("Embedding", attrs, [(2,), (10, 5)])
    assert "'weight'" in str(info.value) and "(10, 5)" in str(info.value)
    attrs["dtype"] = "float16"
    assert types("Embedding", attrs, ["int32", None]) == (["int32", "float16"], ["float16"], [])
    with pytest.raises(ParamError, match="required parameter 'output_dim'"):
        opdef("Embedding").parse({"input_dim": "3"})


# -- topk ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "attrs, shape",
    [
        ({"k": "2", "ret_typ": "value"}, (3, 5)),
        ({"k": "2", "ret_typ": "both", "axis": "0", "is_ascend": "True"}, (4, 3)),
        ({"k": "3", "ret_typ": "value", "axis": "None"}, (2, 3)),
        ({"k": "0", "ret_typ": "value", "axis": "1"}, (2, 3, 2)),
    ],
)
def test_topk_numeric_gradient(attrs, shape, ctx):
    check_numeric_gradient("topk", attrs, [rand(*shape)], ctx)


def test_topk_outputs_hidden_outputs_and_types():
    op = opdef("topk")
    for ret_typ, names, hidden in [
        ("indices", ("output",), 0),
        ("mask", ("output",), 0),
        ("value", ("output0",), 1),
        ("both", ("output0", "output1"), 0),
    ]:
        params = op.parse({"ret_typ": ret_typ})
        assert op.outputs(params) == names and op.num_hidden(params) == hidden
    assert types("topk", {"dtype": "int32"}, ["float64"])[1] == ["int32"]
    assert types("topk", {"ret_typ": "both", "dtype": "int64"}, ["float16"])[1] == [
        "float16",
        "int64",
    ]
    assert types("topk", {"ret_typ": "mask"}, ["float64"])[1] == ["float64"]


def test_topk_shapes():
    assert infer("topk", {"k": "2"}, [(3, 5)])[1] == [(3, 2)]
    assert infer("topk", {"k": "2", "axis": "None"}, [(3, 5)])[1] == [(2,)]
    assert infer("topk", {"k": "0", "ret_typ": "both"}, [(3, 5)])[1] == [(3, 5), (3, 5)]
    assert infer("topk", {"k": "2", "ret_typ": "mask", "axis": "0"}, [(3, 5)])[1] == [(3, 5)]
    with pytest.raises(ShapeError, match="k=6"):
        infer("topk", {"k": "6"}, [(3, 5)])
    with pytest.raises(ParamError, match="ret_typ='values'"):
        opdef("topk").parse({"ret_typ": "values"})


def test_topk_values_indices_and_mask(ctx):
    data = np.asarray([[3.0, 1.0, 4.0, 1.0, 5.0]])
    (values, indices), *_ = run(ctx, "topk", {"k": "3", "ret_typ": "both"}, data)
    np.testing.assert_array_equal(values, [[5, 4, 3]])
    np.testing.assert_array_equal(indices, [[4, 2, 0]])
    assert indices.dtype == np.float32
    (mask,), *_ = run(ctx, "topk", {"k": "2", "ret_typ": "mask", "is_ascend": "1"}, data)
    np.testing.assert_array_equal(mask, [[0, 1, 0, 1, 0]])  # ties: lower index first


def test_topk_index_and_mask_outputs_have_zero_gradient(ctx):
    data = rand(2, 4)
    for ret_typ in ("indices", "mask"):
        (out,), op, params, saved = run(ctx, "topk", {"k": "2", "ret_typ": ret_typ}, data)
        (grad,) = backward(ctx, op, params, saved, [np.ones(out.shape)], [True])
        np.testing.assert_array_equal(grad, np.zeros((2, 4)))


# -- sort, argsort --------------------------------------------------------------------------------


@pytest.mark.parametrize("attrs", [{}, {"is_ascend": "False", "axis": "0"}, {"axis": "None"}])
def test_sort_numeric_gradient(attrs, ctx):
    check_numeric_gradient("sort", attrs, [rand(3, 4)], ctx)


def test_sort_and_argsort_values(ctx):
    data = np.asarray([[2.0, -1.0, 2.0, 0.0], [1.0, 1.0, 3.0, -4.0]])
    for attrs in ({}, {"is_ascend": "False"}, {"axis": "0"}, {"axis": "None"}):
        axis = -1 if "axis" not in attrs else (None if attrs["axis"] == "None" else 0)
        descending = attrs.get("is_ascend") == "False"
        keys = -data if descending else data
        order = np.argsort(keys, axis=axis, kind="stable")
        (sorted_,), *_ = run(ctx, "sort", attrs, data)
        (positions,), *_ = run(ctx, "argsort", attrs, data)
        flat = data.reshape(-1) if axis is None else data
        np.testing.assert_array_equal(positions, order)
        np.testing.assert_array_equal(sorted_, np.take_along_axis(flat, order, axis=axis or 0))
    assert opdef("sort").outputs(opdef("sort").parse({})) == ("output0",)
    assert opdef("sort").num_hidden(opdef("sort").parse({})) == 1


def test_argsort_dtype_shapes_and_zero_gradient(ctx):
    assert types("argsort", {"dtype": "int32"}, ["float64"])[1] == ["int32"]
    assert infer("argsort", {"axis": "None"}, [(2, 3)])[1] == [(6,)]
    (out,), op, params, saved = run(ctx, "argsort", {"dtype": "int64"}, rand(2, 3))
    assert out.dtype == np.int64
    (grad,) = backward(ctx, op, params, saved, [np.ones((2, 3))], [True])
    np.testing.assert_array_equal(grad, np.zeros((2, 3)))


# -- argmax, argmin, argmax_channel --------------------------------------------------------


@pytest.mark.parametrize("op_name", ["argmax", "argmin"])
def test_arg_reductions(op_name, ctx):
    data = np.asarray([[1.0, 5.0, 5.0], [7.0, -2.0, 0.0]], np.float16)
    reference = getattr(np, op_name)
    for attrs, expected in [
        ({"axis": "1"}, reference(data, axis=1)),
        ({"axis": "0", "keepdims": "True"}, reference(data, 0)[None]),
        ({}, np.asarray([reference(data)])),
        ({"keepdims": "True"}, np.asarray([[reference(data)]])),
    ]:
        (out,), op, params, saved = run(ctx, op_name, attrs, data)
        assert out.dtype == np.float16  # MXNet's legacy arg-reductions keep the input dtype
        np.testing.assert_array_equal(out, expected)
        assert infer(op_name, attrs, [(2, 3)])[1] == [expected.shape]
        (grad,) = backward(ctx, op, params, saved, [np.ones(out.shape, np.float16)], [True])
        np.testing.assert_array_equal(grad, np.zeros((2, 3)))


def test_arg_reduction_errors_and_one_dim_input():
    assert infer("argmax", {"axis": "0"}, [(5,)])[1] == [(1,)]
    with pytest.raises(ShapeError, match="axis 2"):
        infer("argmin", {"axis": "2"}, [(2, 3)])
    with pytest.raises(ParamError, match="unknown parameter 'exclude'"):
        opdef("argmax").parse({"exclude": "True"})


def test_argmax_channel_reduces_axis_one(ctx):
    data = rand(2, 3, 4)
    (out,), *_ = run(ctx, "argmax_channel", {}, data)
    np.testing.assert_array_equal(out, np.argmax(data, axis=1))
    assert infer("argmax_channel", {}, [(2, 3, 4)])[1] == [(2, 4)]


def test_embedding_rows_take_the_weights_dtype():
    """MXNet 1.9.1 (EmbeddingOpType): the weight's dtype wins over the ``dtype`` parameter."""
    import rebind as mx

    data = mx.sym.var("data")
    emb = mx.sym.Embedding(data, input_dim=10, output_dim=4, name="emb")
    _, out_types, _ = emb.infer_type(data=np.float32, emb_weight=np.float64)
    assert out_types == [np.float64]
    _, out_types, _ = emb.infer_type(data=np.float32)
    assert out_types == [np.float32]  # the parameter's default
    net = mx.sym.FullyConnected(emb, num_hidden=3, flatten=False)
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    types = {name: np.float64 for name in net.list_arguments()}
    executor = net.simple_bind(mx.cpu(), type_dict=types, data=(2, 5), softmax_label=(2, 5))
    assert executor.outputs[0].dtype == np.float64
