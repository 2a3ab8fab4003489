"""Pooling and UpSampling: golden cases, gradients, tie routing, inference."""

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden


@pytest.mark.parametrize("case_id", case_ids("Pooling", "UpSampling"))
def test_golden(case_id, ctx):
    replay_golden(case_id, ctx)


def _distinct(shape, seed):
    """Values far apart (no ties, no near-ties) so max pooling is differentiable."""
    rng = np.random.default_rng(seed)
    return rng.permutation(np.prod(shape)).reshape(shape) * 0.1 + 0.05


POOL_VARIANTS = [
    ((2, 2, 5, 6), {"kernel": "(2, 2)", "stride": "(2, 2)"}),
    ((1, 2, 5, 6), {"kernel": "(3, 3)", "stride": "(2, 1)", "pad": "(1, 1)"}),
    ((1, 2, 5, 7), {"kernel": "(2, 2)", "stride": "(2, 2)", "pooling_convention": "full"}),
    ((2, 2, 9), {"kernel": "(3,)", "stride": "(2,)", "pad": "(1,)"}),
    ((1, 2, 20), {"kernel": "(4,)", "stride": "(3,)"}),
    ((1, 2, 3, 4, 4), {"kernel": "(2, 2, 3)", "stride": "(1, 2, 1)", "pad": "(0, 1, 1)"}),
    ((1, 2, 10), {"kernel": "(3,)", "stride": "(3,)", "pooling_convention": "same"}),
    ((1, 2, 4, 5), {"kernel": "(1, 1)", "global_pool": "True"}),
    ((1, 2, 6), {"global_pool": "True"}),
]


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum", "lp"])
@pytest.mark.parametrize("shape, attrs", POOL_VARIANTS)
def test_pooling_numeric_gradient(pool_type, shape, attrs, ctx):
    attrs = {**attrs, "pool_type": pool_type}
    if pool_type == "lp":
        attrs["p_value"] = "2"
    check_numeric_gradient(
        "Pooling", attrs, [_distinct(shape, 1)], ctx, eps=1e-4, rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("p_value", ["1", "3"])
@pytest.mark.parametrize("count_include_pad", ["True", "False"])
def test_lp_and_exclusive_average_numeric_gradient(p_value, count_include_pad, ctx):
    data = _distinct((1, 2, 5, 5), 2)
    check_numeric_gradient(
        "Pooling",
        {
            "kernel": "(3, 3)",
            "pad": "(1, 1)",
            "stride": "(2, 2)",
            "pool_type": "lp",
            "p_value": p_value,
        },
        [data],
        ctx,
        eps=1e-4,
    )
    check_numeric_gradient(
        "Pooling",
        {
            "kernel": "(3, 2)",
            "pad": "(1, 1)",
            "pool_type": "avg",
            "count_include_pad": count_include_pad,
            "pooling_convention": "full",
            "stride": "(2, 2)",
        },
        [_distinct((1, 2, 5, 6), 3)],
        ctx,
        eps=1e-4,
    )


def _forward_backward(ctx, attrs, data):
    """Output and input gradient for a head gradient of ones."""
    op = opdef("Pooling")
    params, op_ctx = op.parse(attrs), OpContext(True, ctx.backend, ctx.device_id)
    outs, saved = op.forward(
        op_ctx, params, [ctx.backend.asarray(data, data.dtype, ctx.device_id)], []
    )
    head = ctx.backend.xp.ones_like(outs[0])
    grad = op.backward(op_ctx, params, saved, [head], [True])[0]
    return [np.asarray(ctx.backend.to_host(a)) for a in (outs[0], grad)]


@pytest.mark.parametrize(
    "attrs, first_maxima",
    [
        ({"kernel": "(2, 2)", "stride": "(2, 2)"}, [(0, 0)]),
        ({"kernel": "(2, 2)", "stride": "(1, 1)"}, [(0, 0), (0, 1), (1, 0), (1, 1)]),
        ({"global_pool": "True", "kernel": "(1, 1)"}, [(0, 0)]),
    ],
)
def test_max_pooling_sends_gradient_to_the_first_maximum(attrs, first_maxima, ctx):
    data = np.zeros((1, 1, 3, 3), dtype=np.float32)  # every window is a tie (ReLU zeros)
    data[0, 0, 2, 2] = -1
    _, grad = _forward_backward(ctx, {**attrs, "pool_type": "max"}, data)
    expected = np.zeros_like(data)
    for row, column in first_maxima:  # each window's top-left element is its first maximum
        expected[0, 0, row, column] = 1
    np.testing.assert_array_equal(grad, expected)


def test_pooling_keeps_float16(ctx):
    data = _distinct((1, 2, 4, 4), 3).astype(np.float16)
    for pool_type in ("max", "avg", "lp"):
        attrs = {"kernel": "(2, 2)", "pool_type": pool_type, "p_value": "2"}
        out, grad = _forward_backward(ctx, attrs, data)
        assert out.dtype == grad.dtype == np.float16


@pytest.mark.parametrize(
    "attrs, shape, expected",
    [
        ({"kernel": "(2, 2)", "stride": "(2, 2)"}, (2, 3, 5, 7), (2, 3, 2, 3)),
        (
            {"kernel": "(2, 2)", "stride": "(2, 2)", "pooling_convention": "full"},
            (2, 3, 5, 7),
            (2, 3, 3, 4),
        ),
        ({"kernel": "(3,)", "stride": "(2,)", "pooling_convention": "same"}, (2, 3, 7), (2, 3, 4)),
        ({"kernel": "(3, 3)", "pad": "(1, 1)"}, (2, 3, 5, 7), (2, 3, 5, 7)),
        ({"global_pool": "True"}, (2, 3, 4, 5, 6), (2, 3, 1, 1, 1)),
        ({"kernel": "(2, 2)", "stride": "(2, 2)"}, (0, 3, 0, 8), (0, 3, 0, 4)),
    ],
)
def test_pooling_output_shapes(attrs, shape, expected):
    assert infer("Pooling", attrs, [shape])[1] == [expected]


def test_pooling_learns_batch_and_channels_from_output():
    ins, outs, _ = infer("Pooling", {"kernel": "(2, 2)"}, [(0, 0, 5, 5)], out_shapes=[(4, 3, 4, 4)])
    assert ins == [(4, 3, 5, 5)] and outs == [(4, 3, 4, 4)]


@pytest.mark.parametrize(
    "attrs, shape, fragment",
    [
        ({"kernel": "(2, 2)"}, (2, 3, 5), "4-D data"),
        ({"kernel": "(4, 4)"}, (2, 3, 3, 5), "exceeds"),
        ({"kernel": "(2, 2)", "pooling_convention": "same"}, (2, 3, 5, 5), "1-D pooling only"),
        ({"global_pool": "True"}, (2, 3), "pooling needs"),
    ],
)
def test_pooling_shape_errors(attrs, shape, fragment):
    with pytest.raises(ShapeError, match=fragment) as info:
        infer("Pooling", attrs, [shape])
    assert "'data'" in str(info.value) and str(shape) in str(info.value)


@pytest.mark.parametrize(
    "attrs, fragment",
    [
        ({}, "kernel is required"),
        ({"kernel": "(2, 2)", "pool_type": "lp"}, "p_value=None is invalid"),
        ({"kernel": "(2, 2)", "pool_type": "lp", "p_value": "4"}, "p_value=4 is invalid"),
        ({"kernel": "(2, 2)", "pool_type": "median"}, "pool_type='median'"),
        ({"kernel": "(2, 2)", "stride": "(2,)"}, "stride=(2,) is invalid"),
        ({"kernel": "(3,)", "pad": "(1,)", "pooling_convention": "same"}, "pad=(1,) is invalid"),
    ],
)
def test_pooling_bad_params(attrs, fragment):
    with pytest.raises(ParamError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        opdef("Pooling").parse(attrs)


def test_pooling_channel_last_layout_is_not_implemented():
    with pytest.raises(NotImplementedError, match="NHWC"):
        opdef("Pooling").parse({"kernel": "(2, 2)", "layout": "NHWC"})
    with pytest.raises(NotImplementedError, match="NWC"):
        opdef("Pooling").parse({"global_pool": "True", "layout": "NWC"})


def test_pooling_hidden_workspace_output_of_max_pooling():
    op = opdef("Pooling")
    assert op.num_hidden(op.parse({"kernel": "(2, 2)"})) == 1
    assert op.num_hidden(op.parse({"kernel": "(2, 2)", "pool_type": "avg"})) == 0
    assert op.num_hidden(op.parse({"global_pool": "True"})) == 0
    assert op.outputs(op.parse({"kernel": "(2, 2)"})) == ("output",)


# -- UpSampling ------------------------------------------------------------------


@pytest.mark.parametrize(
    "attrs, shapes",
    [
        ({"scale": "2", "num_args": "1"}, [(2, 2, 2, 3)]),
        ({"scale": "2", "num_args": "3"}, [(1, 2, 2, 2), (1, 1, 4, 4), (1, 2, 1, 2)]),
        ({"scale": "3", "num_args": "2", "multi_input_mode": "sum"}, [(1, 2, 2, 2), (1, 2, 3, 6)]),
    ],
)
def test_upsampling_numeric_gradient(attrs, shapes, ctx):
    rng = np.random.default_rng(4)
    inputs = [rng.standard_normal(s) for s in shapes]
    check_numeric_gradient("UpSampling", {**attrs, "sample_type": "nearest"}, inputs, ctx)


def test_upsampling_repeats_each_value(ctx):
    op = opdef("UpSampling")
    params = op.parse({"scale": "2", "num_args": "2", "sample_type": "nearest"})
    data = [np.arange(4.0).reshape(1, 1, 2, 2), np.arange(16.0).reshape(1, 1, 4, 4)]
    outs, _ = op.forward(
        OpContext(False, ctx.backend, ctx.device_id),
        params,
        [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in data],
        [],
    )
    out = np.asarray(ctx.backend.to_host(outs[0]))
    np.testing.assert_array_equal(out[0, 0], np.kron(data[0][0, 0], np.ones((2, 2))))
    np.testing.assert_array_equal(out[0, 1], data[1][0, 0])


def test_upsampling_arguments_and_shapes():
    op = opdef("UpSampling")
    params = op.parse({"scale": "2", "num_args": "3", "sample_type": "nearest"})
    assert op.arguments(params) == ("arg0", "arg1", "arg2") and op.variadic == "num_args"
    ins, outs, _ = infer(
        "UpSampling",
        {"scale": "2", "num_args": "2", "sample_type": "nearest"},
        [(2, 3, 4, 5), (2, 1, 8, 10)],
    )
    assert outs == [(2, 4, 8, 10)]
    _, outs, _ = infer(
        "UpSampling",
        {"scale": "2", "num_args": "2", "sample_type": "nearest"},
        [(2, 3, 4, 5), None],
    )
    assert outs == [(2, 0, 8, 10)]  # channels unknown until every input is


def test_upsampling_bilinear_infers_its_weight(ctx):
    # the computation itself is checked against MXNet in test_upsampling_bilinear.py
    attrs = {"scale": "3", "num_filter": "4", "num_args": "2", "sample_type": "bilinear"}
    op = opdef("UpSampling")
    assert op.arguments(op.parse(attrs)) == ("data", "weight")
    ins, outs, _ = infer("UpSampling", attrs, [(2, 4, 5, 6), None])
    assert ins[1] == (4, 1, 5, 5) and outs == [(2, 4, 15, 18)]


@pytest.mark.parametrize(
    "attrs, shapes, fragment",
    [
        ({"num_args": "2"}, [(2, 3, 4, 5), (2, 3, 3, 5)], "'arg1'"),
        (
            {"num_args": "2", "multi_input_mode": "sum"},
            [(2, 3, 4, 5), (2, 2, 8, 10)],
            "equal channels",
        ),
        ({"num_args": "1"}, [(2, 3, 4)], "4-D data"),
    ],
)
def test_upsampling_shape_errors(attrs, shapes, fragment):
    with pytest.raises(ShapeError, match=fragment):
        infer("UpSampling", {**attrs, "scale": "2", "sample_type": "nearest"}, shapes)


@pytest.mark.parametrize(
    "attrs, fragment",
    [
        ({"num_args": "1", "sample_type": "nearest"}, "required parameter 'scale'"),
        ({"scale": "2", "num_args": "1"}, "required parameter 'sample_type'"),
        ({"scale": "0", "num_args": "1", "sample_type": "nearest"}, "scale must be positive"),
        ({"scale": "2", "num_args": "1", "sample_type": "cubic"}, "sample_type='cubic'"),
    ],
)
def test_upsampling_bad_params(attrs, fragment):
    with pytest.raises(ParamError, match=fragment):
        opdef("UpSampling").parse(attrs)


def test_same_convention_takes_a_zero_pad_of_any_length():
    # MXNet's test_valid_max_pooling_pad_type_same passes pad=(0, 0, 0) with a 1-D kernel
    attrs = {"kernel": "(2,)", "stride": "(2,)", "pad": "(0, 0, 0)", "pooling_convention": "same"}
    assert infer("Pooling", attrs, [(1, 1, 10)])[1] == [(1, 1, 5)]
