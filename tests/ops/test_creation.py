"""Creators (_zeros, _ones, _full, _arange) and zeros_like/ones_like: golden cases,
shapes from parameters and from consumers, dtypes, parameter errors."""

import re

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden


def _create(op_name, attrs_, ctx, inputs=(), out_shapes=None):
    op = opdef(op_name)
    params = op.parse(attrs_)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    op_ctx = OpContext(False, ctx.backend, ctx.device_id, out_shapes=out_shapes)
    outs, _ = op.forward(op_ctx, params, arrays, [])
    return np.asarray(ctx.backend.to_host(outs[0]))


@pytest.mark.parametrize(
    "case_id", case_ids("_zeros", "_ones", "_full", "_arange", "zeros_like", "ones_like")
)
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


@pytest.mark.parametrize(
    "op_name, attrs_, expected",
    [
        ("_zeros", {"shape": "(2, 3)", "dtype": "int32"}, np.zeros((2, 3), np.int32)),
        ("_ones", {"shape": "(4,)", "dtype": "float16"}, np.ones(4, np.float16)),
        ("_ones", {"shape": "(2, 1)"}, np.ones((2, 1), np.float32)),
        ("_full", {"shape": "(3,)", "value": "0.1", "dtype": "float64"}, np.full(3, 0.1)),
        ("_full", {"shape": "(1, 2)", "value": "-7"}, np.full((1, 2), -7, np.float32)),
    ],
)
def test_creators(op_name, attrs_, expected, ctx):
    out = _create(op_name, attrs_, ctx)
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


def test_creator_types_come_from_dtype():
    op = opdef("_zeros")
    assert op.infer_types(op.parse({"shape": "(2,)"}), []) == ([], ["float32"], [])
    assert op.infer_types(op.parse({"shape": "(2,)", "dtype": "int64"}), [])[1] == ["int64"]
    assert op.arguments(op.parse({})) == ()


def test_begin_state_learns_batch_size_from_its_consumer(ctx):
    # the LSTM begin state: _zeros(shape=(0, H)), batch size from backward inference
    assert infer("_zeros", {"shape": "(0, 8)"}, [])[1] == [(0, 8)]
    assert infer("_zeros", {"shape": "(0, 8)"}, [], out_shapes=[(5, 8)])[1] == [(5, 8)]
    assert infer("_full", {"shape": "()", "value": "1"}, [], out_shapes=[(2, 2)])[1] == [(2, 2)]
    with pytest.raises(ShapeError, match="node0"):
        infer("_ones", {"shape": "(0, 8)"}, [], out_shapes=[(5, 9)])
    # forward takes the settled shape from the executor
    out = _create("_zeros", {"shape": "(0, 8)"}, ctx, out_shapes=((5, 8),))
    assert out.shape == (5, 8)
    out = _create("_full", {"value": "2"}, ctx, out_shapes=((3,),))
    np.testing.assert_array_equal(out, [2, 2, 2])


@pytest.mark.parametrize("out_shapes", [None, ((0, 8),), ((5, 9),)])
def test_creator_without_a_settled_shape(out_shapes, ctx):
    with pytest.raises(ShapeError, match="_zeros: output shape unknown or contradictory"):
        _create("_zeros", {"shape": "(0, 8)"}, ctx, out_shapes=out_shapes)


def test_arange_infer_range_takes_its_length_from_the_consumer(ctx):
    attrs_ = {"start": "2", "step": "0.5", "repeat": "2", "infer_range": "True"}
    assert infer("_arange", attrs_, [])[1] == [(0,)]
    assert infer("_arange", attrs_, [], out_shapes=[(6,)])[1] == [(6,)]
    out = _create("_arange", attrs_, ctx, out_shapes=((6,),))
    np.testing.assert_array_equal(out, [2, 2, 2.5, 2.5, 3, 3])
    with pytest.raises(ShapeError):
        _create("_arange", attrs_, ctx)
    # with a stop, infer_range changes nothing
    assert infer("_arange", {"start": "0", "stop": "3", "infer_range": "True"}, [])[1] == [(3,)]


@pytest.mark.parametrize(
    "attrs_, expected",
    [
        ({"start": "1", "stop": "7", "step": "2"}, [1, 3, 5]),
        ({"start": "4"}, [0, 1, 2, 3]),
        ({"start": "5", "stop": "1", "step": "-1.5"}, [5, 3.5, 2]),
        ({"start": "0", "stop": "3", "repeat": "3"}, [0, 0, 0, 1, 1, 1, 2, 2, 2]),
        ({"start": "0", "stop": "1", "step": "0.25"}, [0, 0.25, 0.5, 0.75]),
        ({"start": "-3", "stop": "3", "step": "2", "dtype": "int32"}, [-3, -1, 1]),
    ],
)
def test_arange(attrs_, expected, ctx):
    out = _create("_arange", attrs_, ctx)
    assert out.dtype == np.dtype(attrs_.get("dtype", "float32"))
    np.testing.assert_array_equal(out, expected)
    assert infer("_arange", attrs_, [])[1] == [(len(expected),)]


def test_arange_type_and_shape_merge():
    op = opdef("_arange")
    assert op.infer_types(op.parse({"start": "3", "dtype": "float64"}), [])[1] == ["float64"]
    with pytest.raises(ShapeError):
        infer("_arange", {"start": "3"}, [], out_shapes=[(4,)])


@pytest.mark.parametrize(
    "attrs_, error, fragment",
    [
        ({"start": "0", "stop": "3", "step": "0"}, ParamError, "step must not be 0"),
        ({"start": "3", "stop": "1"}, ParamError, "invalid range"),
        ({"start": "1", "stop": "3", "step": "-1"}, ParamError, "invalid range"),
        ({"start": "0", "stop": "3", "repeat": "0"}, ParamError, "repeat must be positive"),
        ({"stop": "3"}, ParamError, "required parameter 'start'"),
        ({"start": "0", "dtype": "bool"}, ParamError, "dtype='bool' is invalid"),
    ],
)
def test_arange_bad_params(attrs_, error, fragment):
    with pytest.raises(error, match=fragment):
        opdef("_arange").parse(attrs_)


@pytest.mark.parametrize(
    "attrs_, fragment",
    [
        ({"shape": "(2, x)"}, "shape='(2, x)' is invalid"),
        ({"shape": "(2,)", "dtype": "complex64"}, "dtype='complex64' is invalid"),
        ({"shape": "(2,)", "value": "1"}, "unknown parameter 'value'"),
    ],
)
def test_creator_bad_params(attrs_, fragment):
    with pytest.raises(ParamError, match=re.escape(fragment)):
        opdef("_zeros").parse(attrs_)
    with pytest.raises(ParamError, match="required parameter 'value'"):
        opdef("_full").parse({"shape": "(2,)"})


@pytest.mark.parametrize("op_name, value", [("zeros_like", 0), ("ones_like", 1)])
def test_like_ops(op_name, value, ctx):
    data = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = _create(op_name, {}, ctx, [data])
    assert out.dtype == np.int32 and out.shape == (2, 3) and np.all(out == value)
    check_numeric_gradient(op_name, {}, [np.random.default_rng(12).standard_normal(4)], ctx)
    assert infer(op_name, {}, [None], out_shapes=[(3, 1)])[0] == [(3, 1)]
