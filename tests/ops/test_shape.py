"""Shape operators: golden cases, finite differences, inference and errors.

Covers core/ops/shape.py, shape_join.py, shape_slice.py and shape_repeat.py.
"""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

SHAPE_OPS = (
    "Reshape",
    "Flatten",
    "transpose",
    "SwapAxis",
    "expand_dims",
    "squeeze",
    "Concat",
    "stack",
    "SliceChannel",
    "slice",
    "slice_axis",
    "tile",
    "repeat",
    "broadcast_to",
    "broadcast_axis",
)


@pytest.mark.parametrize("case_id", case_ids(*SHAPE_OPS))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def run(ctx, op_name, attrs, *arrays, is_train=True):
    """Forward one op on host arrays; returns (host outputs, op, params, saved)."""
    op = opdef(op_name)
    params = op.parse(attrs)
    inputs = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in arrays]
    outs, saved = op.forward(OpContext(is_train, ctx.backend, ctx.device_id), params, inputs, [])
    return [np.asarray(ctx.backend.to_host(o)) for o in outs], op, params, saved


def backward(ctx, op, params, saved, heads, need):
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    heads = [ctx.backend.asarray(h, h.dtype, ctx.device_id) for h in heads]
    grads = op.backward(op_ctx, params, saved, heads, need)
    return [None if g is None else np.asarray(ctx.backend.to_host(g)) for g in grads]


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def test_aliases_resolve_to_the_canonical_ops():
    for alias, name in [
        ("reshape", "Reshape"),
        ("flatten", "Flatten"),
        ("swapaxes", "SwapAxis"),
        ("concat", "Concat"),
        ("split", "SliceChannel"),
        ("crop", "slice"),
        ("broadcast_axes", "broadcast_axis"),
    ]:
        assert opdef(alias) is opdef(name)


# -- finite differences -------------------------------------------------------------


@pytest.mark.parametrize(
    "op_name, attrs, shapes",
    [
        ("Reshape", {"shape": "(0, -1)"}, [(2, 3, 2)]),
        ("Reshape", {"shape": "(-4, 1, 2, -2)", "reverse": "False"}, [(2, 3)]),
        ("Flatten", {}, [(2, 2, 3)]),
        ("transpose", {}, [(2, 3, 2)]),
        ("transpose", {"axes": "(1, 0, 2)"}, [(2, 3, 2)]),
        ("SwapAxis", {"dim1": "0", "dim2": "-1"}, [(2, 3, 2)]),
        ("expand_dims", {"axis": "-2"}, [(2, 3)]),
        ("squeeze", {"axis": "(0, 2)"}, [(1, 3, 1)]),
        ("Concat", {"num_args": "3", "dim": "-1"}, [(2, 1), (2, 3), (2, 2)]),
        ("stack", {"num_args": "2", "axis": "-1"}, [(2, 3), (2, 3)]),
        ("SliceChannel", {"num_outputs": "2", "axis": "0"}, [(4, 3)]),
        ("SliceChannel", {"num_outputs": "3", "squeeze_axis": "True"}, [(2, 3, 2)]),
        ("slice", {"begin": "(1, None)", "end": "(None, 0)", "step": "(1, -2)"}, [(3, 5)]),
        ("slice_axis", {"axis": "0", "begin": "-2", "end": "None"}, [(4, 3)]),
        ("tile", {"reps": "(2, 1, 3)"}, [(2, 2)]),
        ("tile", {"reps": "(2,)"}, [(2, 3)]),
        ("repeat", {"repeats": "3"}, [(2, 2)]),
        ("repeat", {"repeats": "2", "axis": "-1"}, [(2, 3)]),
        ("broadcast_to", {"shape": "(0, 3, 4)"}, [(2, 1, 1)]),
        ("broadcast_axis", {"axis": "(0, -1)", "size": "(3, 2)"}, [(1, 2, 1)]),
    ],
)
def test_numeric_gradient(op_name, attrs, shapes, ctx):
    inputs = [rand(*s, seed=i) for i, s in enumerate(shapes)]
    check_numeric_gradient(op_name, attrs, inputs, ctx)


def test_float16_tile_and_broadcast_gradients_sum_exactly(ctx):
    data = np.ones((1, 2), np.float16)
    outs, op, params, saved = run(ctx, "broadcast_to", {"shape": "(3000, 2)"}, data)
    head = np.ones((3000, 2), np.float16)
    (grad,) = backward(ctx, op, params, saved, [head], [True])
    assert grad.dtype == np.float16 and np.all(grad == 3000)  # float16 would stall at 2048
    outs, op, params, saved = run(ctx, "tile", {"reps": "(3000, 1)"}, data)
    (grad,) = backward(ctx, op, params, saved, [head], [True])
    assert np.all(grad == 3000)


# -- Reshape ---------------------------------------------------------------------------


def test_reshape_partial_and_reverse_inference():
    _, outs, _ = infer("Reshape", {"shape": "(0, -1)"}, [(0, 3, 4)])
    assert outs == [(0, 0)]  # as MXNet: -1 stays unknown while the input is partial
    ins, outs, _ = infer("Reshape", {"shape": "(0, -1)"}, [(0, 3, 4)], out_shapes=[(2, 12)])
    assert ins == [(2, 3, 4)] and outs == [(2, 12)]
    ins, outs, _ = infer("Reshape", {}, [(0, 3)], out_shapes=[(4, 3)])
    assert ins == [(4, 3)]
    _, outs, _ = infer("Reshape", {"shape": "(-1, 0)", "reverse": "True"}, [(4, 3, 5)])
    assert outs == [(12, 5)]


def test_reshape_legacy_target_shape(ctx):
    _, outs, _ = infer("Reshape", {"target_shape": "(0, 6)"}, [(2, 3, 2)])
    assert outs == [(2, 6)]
    attrs = {"target_shape": "(9, 0)", "keep_highest": "True"}
    _, outs, _ = infer("Reshape", attrs, [(4, 3, 2)])
    assert outs == [(4, 6)]
    out, *_ = run(ctx, "Reshape", attrs, np.arange(24.0).reshape(4, 3, 2))
    np.testing.assert_array_equal(out[0], np.arange(24.0).reshape(4, 6))


def test_reshape_size_mismatch_names_node_argument_and_shapes():
    with pytest.raises(ShapeError) as info:
        infer("Reshape", {"shape": "(5, -1)"}, [(2, 3)])
    message = str(info.value)
    assert "node0" in message and "'data'" in message and "(2, 3)" in message
    with pytest.raises(ShapeError):
        infer("Reshape", {"shape": "(4, 2)"}, [(2, 3)])
    with pytest.raises(ShapeError):
        infer("Reshape", {"shape": "(0, 0, 0)"}, [(2, 3)])


def test_reshape_bad_params():
    with pytest.raises(ParamError, match="shape='x'"):
        opdef("Reshape").parse({"shape": "x"})
    with pytest.raises(ParamError, match="unknown parameter 'newshape'"):
        opdef("Reshape").parse({"newshape": "(2,)"})


# -- Flatten, transpose, SwapAxis, expand_dims, squeeze ----------------------------------


def test_flatten_inference():
    assert infer("Flatten", {}, [(0, 3, 4)])[1] == [(0, 12)]
    ins, outs, _ = infer("Flatten", {}, [(0, 3, 4)], out_shapes=[(5, 12)])
    assert ins == [(5, 3, 4)]
    assert infer("Flatten", {}, [(7,)])[1] == [(7, 1)]
    with pytest.raises(ShapeError):
        infer("Flatten", {}, [(2, 3)], out_shapes=[(2, 4)])


def test_transpose_infers_both_ways_and_rejects_bad_axes():
    ins, outs, _ = infer("transpose", {}, [None], out_shapes=[(5, 3, 2)])
    assert ins == [(2, 3, 5)]
    ins, outs, _ = infer("transpose", {"axes": "(2, 0, 1)"}, [(0, 3, 4)], out_shapes=[(4, 7, 3)])
    assert ins == [(7, 3, 4)] and outs == [(4, 7, 3)]
    with pytest.raises(ShapeError, match="permutation"):
        infer("transpose", {"axes": "(0, 0, 1)"}, [(2, 3, 4)])
    with pytest.raises(ShapeError):
        infer("transpose", {"axes": "(1, 0)"}, [(2, 3, 4)])


def test_swapaxis_inference():
    _, outs, _ = infer("SwapAxis", {"dim1": "-1", "dim2": "1"}, [(2, 3, 4, 5)])
    assert outs == [(2, 5, 4, 3)]
    ins, _, _ = infer("SwapAxis", {"dim1": "0", "dim2": "1"}, [None], out_shapes=[(3, 2)])
    assert ins == [(2, 3)]
    with pytest.raises(ShapeError, match="axis 4"):
        infer("SwapAxis", {"dim1": "0", "dim2": "4"}, [(2, 3)])


def test_expand_dims_inference():
    assert infer("expand_dims", {"axis": "2"}, [(2, 3)])[1] == [(2, 3, 1)]
    ins, _, _ = infer("expand_dims", {"axis": "0"}, [None], out_shapes=[(1, 4, 5)])
    assert ins == [(4, 5)]
    with pytest.raises(ShapeError):
        infer("expand_dims", {"axis": "3"}, [(2, 3)])
    with pytest.raises(ParamError, match="required parameter 'axis'"):
        opdef("expand_dims").parse({})


def test_squeeze_inference():
    assert infer("squeeze", {}, [(1, 1)])[1] == [(1,)]  # never 0-d
    assert infer("squeeze", {}, [(2, 0, 1)])[1] == [None]  # an unknown dim may be 1
    assert infer("squeeze", {"axis": "1"}, [(2, 0, 1)]) == ([(2, 1, 1)], [(2, 1)], [])
    with pytest.raises(ShapeError, match="size 1 at axis 0"):
        infer("squeeze", {"axis": "0"}, [(2, 1)])


# -- Concat, stack, SliceChannel ------------------------------------------------------------


def test_concat_names_and_inference():
    op = opdef("Concat")
    assert op.arguments(op.parse({"num_args": "3"})) == ("arg0", "arg1", "arg2")
    assert op.variadic == "num_args"
    ins, outs, _ = infer("Concat", {"num_args": "2"}, [(2, 3), (2, 0)], out_shapes=[(2, 7)])
    assert ins == [(2, 3), (2, 4)] and outs == [(2, 7)]
    ins, outs, _ = infer("Concat", {"num_args": "2", "dim": "0"}, [(2, 0), None])
    assert ins == [(2, 0), (0, 0)] and outs == [(0, 0)]
    ins, _, _ = infer("Concat", {"num_args": "2", "dim": "0"}, [(2, 3), None])
    assert ins == [(2, 3), (0, 3)]


def test_concat_errors():
    with pytest.raises(ShapeError) as info:
        infer("Concat", {"num_args": "2"}, [(2, 3), (4, 3)])
    assert "'arg1'" in str(info.value) and "(4, 3)" in str(info.value)
    with pytest.raises(ShapeError):
        infer("Concat", {"num_args": "2"}, [(2, 3), (2, 3, 1)])
    with pytest.raises(ParamError, match="required parameter 'num_args'"):
        opdef("Concat").parse({})
    with pytest.raises(ParamError, match="num_args must be positive"):
        opdef("Concat").parse({"num_args": "0"})


def test_stack_inference_and_errors():
    ins, outs, _ = infer("stack", {"num_args": "3", "axis": "1"}, [(2, 0), None, (0, 4)])
    assert ins == [(2, 4)] * 3 and outs == [(2, 3, 4)]
    ins, _, _ = infer("stack", {"num_args": "2"}, [None, None], out_shapes=[(2, 5)])
    assert ins == [(5,), (5,)]
    with pytest.raises(ShapeError, match="arg1"):
        infer("stack", {"num_args": "2"}, [(2, 3), (3, 2)])


def test_slice_channel_outputs_and_inference():
    op = opdef("split")
    assert op.outputs(op.parse({"num_outputs": "3"})) == ("output0", "output1", "output2")
    _, outs, _ = infer("SliceChannel", {"num_outputs": "2", "axis": "-1"}, [(2, 6)])
    assert outs == [(2, 3), (2, 3)]
    ins, _, _ = infer(
        "SliceChannel", {"num_outputs": "2", "squeeze_axis": "1"}, [None], out_shapes=[(4, 5), None]
    )
    assert ins == [(4, 2, 5)]
    with pytest.raises(ShapeError, match="equal parts"):
        infer("SliceChannel", {"num_outputs": "4"}, [(2, 6)])
    with pytest.raises(ShapeError, match="one element per output"):
        infer("SliceChannel", {"num_outputs": "3", "squeeze_axis": "True"}, [(2, 6)])


def test_slice_channel_unused_outputs_get_zero_gradient(ctx):
    data = rand(2, 4)
    outs, op, params, saved = run(ctx, "SliceChannel", {"num_outputs": "2"}, data)
    heads = [np.ones((2, 2)), np.zeros((2, 2))]
    (grad,) = backward(ctx, op, params, saved, heads, [True])
    np.testing.assert_array_equal(grad, [[1, 1, 0, 0], [1, 1, 0, 0]])


# -- slice, slice_axis ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "attrs, expected",
    [
        ({"begin": "(1,)", "end": "(3,)"}, np.s_[1:3]),
        ({"begin": "(None, -3)", "end": "(None, None)"}, np.s_[:, -3:]),
        ({"begin": "(2, 4)", "end": "(None, 0)", "step": "(-1, -2)"}, np.s_[2::-1, 4:0:-2]),
        ({"begin": "(None,)", "end": "(None,)", "step": "(-2,)"}, np.s_[::-2]),
        ({"begin": "[0, 1]", "end": "[4, 5]", "step": "[2, None]"}, np.s_[0:4:2, 1:5]),
    ],
)
def test_slice_matches_python_slicing(attrs, expected, ctx):
    data = np.arange(20.0).reshape(4, 5)
    out, *_ = run(ctx, "slice", attrs, data)
    np.testing.assert_array_equal(out[0], data[expected])
    assert infer("slice", attrs, [(4, 5)])[1] == [data[expected].shape]


@pytest.mark.parametrize(
    "begin, end, step",
    [
        ("(4,)", "(None,)", "()"),
        ("(2,)", "(2,)", "()"),
        ("(3,)", "(1,)", "()"),
        ("(0, 0, 0)", "(1, 1, 1)", "()"),
    ],
)
def test_slice_out_of_range_is_a_shape_error(begin, end, step):
    with pytest.raises(ShapeError):
        infer("slice", {"begin": begin, "end": end, "step": step}, [(4, 5)])


@pytest.mark.parametrize(
    "begin, end, step, shape",
    [
        ("(0,)", "(6,)", "()", (4, 5)),  # MXNet clips an end past the axis
        ("(-9, 1)", "(9, 99)", "()", (4, 4)),
        ("(9,)", "(-9,)", "(-1,)", (4, 5)),  # and a begin past it for a negative step
    ],
)
def test_slice_clips_bounds_past_the_axis(begin, end, step, shape):
    assert infer("slice", {"begin": begin, "end": end, "step": step}, [(4, 5)])[1] == [shape]


@pytest.mark.parametrize(
    "attrs, fragment",
    [
        ({"begin": "(0, 1)", "end": "(2,)"}, "differ in length"),
        ({"begin": "(0,)", "end": "(2,)", "step": "(0,)"}, "contains 0"),
        ({"begin": "(a,)", "end": "(2,)"}, "tuple of integers or None"),
        ({"end": "(2,)"}, "required parameter 'begin'"),
    ],
)
def test_slice_bad_params(attrs, fragment):
    with pytest.raises(ParamError, match=fragment):
        opdef("slice").parse(attrs)


def test_slice_keeps_unknown_dims_unknown():
    assert infer("slice", {"begin": "(0, 1)", "end": "(None, 3)"}, [(0, 5)])[1] == [(0, 2)]


def test_slice_axis_inference_and_errors():
    assert infer("slice_axis", {"axis": "0", "begin": "1", "end": "None"}, [(4, 2)])[1] == [(3, 2)]
    with pytest.raises(ShapeError, match="do not fit"):
        infer("slice_axis", {"axis": "1", "begin": "1", "end": "1"}, [(4, 2)])
    with pytest.raises(ShapeError):
        infer("slice_axis", {"axis": "2", "begin": "0", "end": "1"}, [(4, 2)])
    with pytest.raises(ParamError, match="required parameter 'end'"):
        opdef("slice_axis").parse({"axis": "0", "begin": "0"})


# -- tile, repeat, broadcast_to, broadcast_axis -------------------------------------------------


def test_tile_and_repeat_match_numpy(ctx):
    data = np.arange(6.0).reshape(2, 3)
    for attrs, expected in [
        ({"reps": "(2, 1, 2)"}, np.tile(data, (2, 1, 2))),
        ({"reps": "(3,)"}, np.tile(data, 3)),
        ({"reps": "()"}, data),
    ]:
        out, *_ = run(ctx, "tile", attrs, data)
        np.testing.assert_array_equal(out[0], expected)
        assert infer("tile", attrs, [(2, 3)])[1] == [expected.shape]
    out, *_ = run(ctx, "repeat", {"repeats": "2"}, data)
    np.testing.assert_array_equal(out[0], np.repeat(data, 2))
    assert infer("repeat", {"repeats": "2"}, [(2, 3)])[1] == [(12,)]
    assert infer("repeat", {"repeats": "2", "axis": "0"}, [(2, 3)])[1] == [(4, 3)]


def test_tile_and_repeat_bad_params():
    with pytest.raises(ParamError, match="reps entries must be positive"):
        opdef("tile").parse({"reps": "(2, 0)"})
    with pytest.raises(ParamError, match="repeats must be positive"):
        opdef("repeat").parse({"repeats": "0"})


def test_broadcast_inference_and_errors():
    assert infer("broadcast_to", {"shape": "(4, 0, 3)"}, [(1, 2, 1)])[1] == [(4, 2, 3)]
    assert infer("broadcast_axis", {"axis": "(-1,)", "size": "(5,)"}, [(2, 1)])[1] == [(2, 5)]
    with pytest.raises(ShapeError, match="cannot broadcast"):
        infer("broadcast_to", {"shape": "(4, 3)"}, [(2, 3)])
    with pytest.raises(ShapeError):
        infer("broadcast_to", {"shape": "(4, 3)"}, [(3,)])
    with pytest.raises(ShapeError, match="size 1 at axis 0"):
        infer("broadcast_axis", {"axis": "0", "size": "3"}, [(2, 1)])
    with pytest.raises(ParamError, match="differ in length"):
        opdef("broadcast_axis").parse({"axis": "(0, 1)", "size": "(2,)"})


def test_broadcast_output_is_writable(ctx):
    out, *_ = run(ctx, "broadcast_to", {"shape": "(3, 2)"}, np.ones((1, 2)))
    assert out[0].shape == (3, 2) and out[0].flags.writeable
