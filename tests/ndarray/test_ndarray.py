"""Tests for rebind.ndarray.NDArray: MXNet 1.x semantics, checked against NumPy."""

import json
import operator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import rebind as mx
from rebind.errors import ContextMismatchError, DTypeMismatchError, ShapeError

GOLDEN = Path(__file__).parents[1] / "golden"
RESHAPE_CASES = [
    case
    for case in json.loads((GOLDEN / "manifest.json").read_text())["categories"]["ops"]["cases"]
    if case["op"] == "Reshape"
]
SEED = 20240611
FAST = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
DTYPES = [np.float32, np.float64, np.float16, np.int32, np.int64, np.int8, np.uint8]


def rng(offset=0):
    print(f"numpy seed={SEED + offset}")
    return np.random.default_rng(SEED + offset)


def nd(values, ctx):
    """An NDArray on ``ctx`` holding ``values`` with their NumPy dtype."""
    values = np.asarray(values)
    return mx.nd.array(values, ctx=ctx, dtype=values.dtype)


def other_context(ctx):
    """A context different from ``ctx`` (mx.cpu(1) is served by the numpy backend)."""
    assert mx.cpu(1) != ctx
    return mx.cpu(1)


# ------------------------------------------------------------------ description


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_description(ctx, dtype):
    a = mx.nd.zeros((2, 3, 4), ctx=ctx, dtype=dtype)
    assert a.shape == (2, 3, 4) and isinstance(a.shape, tuple)
    assert a.dtype is dtype  # the scalar type, as MXNet gives it
    assert a.size == 24 and a.ndim == 3
    assert a.context == ctx and a.ctx == ctx
    assert a.stype == "default"


def test_asnumpy_returns_a_copy(ctx):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = nd(values, ctx)
    host = a.asnumpy()
    assert isinstance(host, np.ndarray) and host.dtype == np.float32
    np.testing.assert_array_equal(host, values)
    host[:] = -1
    np.testing.assert_array_equal(a.asnumpy(), values)


@pytest.mark.parametrize("shape", [(1,), (1, 1), (1, 1, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
def test_asscalar(ctx, shape, dtype):
    a = mx.nd.full(shape, 7, ctx=ctx, dtype=dtype)
    value = a.asscalar()
    assert type(value) is dtype and value == 7


@pytest.mark.parametrize("shape", [(2,), (0,), (1, 2)])
def test_asscalar_needs_one_element(ctx, shape):
    with pytest.raises(ValueError, match=r"one element"):
        mx.nd.zeros(shape, ctx=ctx).asscalar()


def test_astype(ctx):
    values = np.array([[-1.7, 0.2], [2.9, 3.5]], dtype=np.float32)
    a = nd(values, ctx)
    b = a.astype(np.int32)
    assert b.dtype is np.int32 and b.context == ctx
    np.testing.assert_array_equal(b.asnumpy(), values.astype(np.int32))
    assert a.dtype is np.float32  # the source is unchanged


@pytest.mark.parametrize("same", [np.float32, "float32", np.dtype("float32")])
def test_astype_copy_false_same_dtype_returns_self(ctx, same):
    a = mx.nd.ones((2, 2), ctx=ctx)
    assert a.astype(same, copy=False) is a
    c = a.astype(same)  # copy=True: a new, independent array
    assert c is not a
    c[:] = 5
    np.testing.assert_array_equal(a.asnumpy(), np.ones((2, 2), np.float32))
    d = a.astype(np.float64, copy=False)
    assert d is not a and d.dtype is np.float64


def test_copy_is_independent(ctx):
    values = np.arange(4, dtype=np.float32)
    a = nd(values, ctx)
    b = a.copy()
    assert b is not a and b.context == ctx and b.dtype is np.float32
    b[:] = 9
    np.testing.assert_array_equal(a.asnumpy(), values)
    np.testing.assert_array_equal(b.asnumpy(), np.full(4, 9, np.float32))


@pytest.mark.parametrize("target", ["same", "other"])
def test_copyto_context(ctx, target):
    values = np.arange(6, dtype=np.float64).reshape(3, 2)
    a = nd(values, ctx)
    dest = ctx if target == "same" else other_context(ctx)
    b = a.copyto(dest)
    assert b is not a and b.context == dest and b.dtype is np.float64
    np.testing.assert_array_equal(b.asnumpy(), values)
    b[:] = 0
    np.testing.assert_array_equal(a.asnumpy(), values)


def test_copyto_ndarray_fills_in_place(ctx):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = nd(values, ctx)
    for target in (mx.nd.zeros((2, 3), ctx=ctx), mx.nd.zeros((2, 3), ctx=other_context(ctx))):
        before = target.context
        assert a.copyto(target) is target
        assert target.context == before
        np.testing.assert_array_equal(target.asnumpy(), values)


def test_copyto_ndarray_shape_mismatch(ctx):
    a = mx.nd.ones((2, 3), ctx=ctx)
    target = mx.nd.zeros((3, 2), ctx=ctx)
    with pytest.raises(ShapeError) as info:
        a.copyto(target)
    assert "(2, 3)" in str(info.value) and "(3, 2)" in str(info.value)
    np.testing.assert_array_equal(target.asnumpy(), np.zeros((3, 2), np.float32))


def test_copyto_rejects_other_types(ctx):
    with pytest.raises(TypeError):
        mx.nd.ones(2, ctx=ctx).copyto(np.zeros(2))


def test_as_in_context(ctx):
    a = mx.nd.array([1, 2, 3], ctx=ctx)
    assert a.as_in_context(ctx) is a
    other = other_context(ctx)
    b = a.as_in_context(other)
    assert b is not a and b.context == other
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())


# ---------------------------------------------------------------------- reshape


@pytest.mark.parametrize("case", RESHAPE_CASES, ids=[c["id"] for c in RESHAPE_CASES])
def test_reshape_matches_mxnet_golden(ctx, case):
    """The Reshape cases recorded from MXNet 1.9.1, through NDArray.reshape."""
    recorded = np.load(GOLDEN / case["file"])
    data = recorded["arg.data"]
    spec = tuple(int(d) for d in case["attrs"]["shape"].strip("()").split(",") if d.strip())
    reverse = case["attrs"].get("reverse") == "True"
    out = nd(data, ctx).reshape(spec, reverse=reverse)
    assert out.shape == tuple(case["out_shapes"][0])
    np.testing.assert_array_equal(out.asnumpy(), recorded["out.0"])


@st.composite
def reshape_specs(draw):
    """A source shape, a spec using MXNet's codes, and the shape the codes mean."""
    source = draw(st.lists(st.integers(1, 6), min_size=1, max_size=4))
    spec, target, i = [], [], 0
    while i < len(source):
        dim = source[i]
        kinds = ["keep", "copy", "split", "rest"] + (["merge"] if i + 1 < len(source) else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "keep":
            spec.append(dim)
            target.append(dim)
        elif kind == "copy":
            spec.append(0)
            target.append(dim)
        elif kind == "merge":
            spec.append(-3)
            target.append(dim * source[i + 1])
            i += 1
        elif kind == "split":
            first = draw(st.sampled_from([p for p in range(1, dim + 1) if dim % p == 0]))
            second = dim // first
            spec += [-4, *draw(st.sampled_from([(first, second), (-1, second), (first, -1)]))]
            target += [first, second]
        else:  # -2: every remaining input dimension
            spec.append(-2)
            target += source[i:]
            i = len(source)
        i += 1
    ones = draw(st.integers(0, 2))
    spec += [1] * ones
    target += [1] * ones
    # replace one plain size (outside a -4 pair) by -1, to be inferred
    plain = [
        j
        for j, d in enumerate(spec)
        if d > 0 and (j < 1 or spec[j - 1] != -4) and (j < 2 or spec[j - 2] != -4)
    ]
    if plain and draw(st.booleans()):
        spec[draw(st.sampled_from(plain))] = -1
    return tuple(source), tuple(spec), tuple(target)


@FAST
@given(case=reshape_specs())
def test_reshape_codes_match_numpy(ctx, case):
    source, spec, target = case
    values = np.arange(int(np.prod(source)), dtype=np.float32).reshape(source)
    out = nd(values, ctx).reshape(spec)
    assert out.shape == target
    np.testing.assert_array_equal(out.asnumpy(), values.reshape(target))


@FAST
@given(source=st.lists(st.integers(1, 5), min_size=1, max_size=4), data=st.data())
def test_reshape_reverse_matches_codes_right_to_left(ctx, source, data):
    # spec (-1, c_1 ... c_k): each c is 0 or the size, aligned with the last k input dims
    k = data.draw(st.integers(1, len(source)))
    tail = source[len(source) - k :]
    codes = [data.draw(st.sampled_from([0, d])) for d in tail]
    target = (int(np.prod(source[: len(source) - k])), *tail)
    values = np.arange(int(np.prod(source)), dtype=np.float32).reshape(source)
    out = nd(values, ctx).reshape((-1, *codes), reverse=True)
    assert out.shape == target
    np.testing.assert_array_equal(out.asnumpy(), values.reshape(target))


def test_reshape_reverse_differs_from_forward(ctx):
    # MXNet's documented example: (10, 5, 4) with (-1, 0)
    a = mx.nd.zeros((10, 5, 4), ctx=ctx)
    assert a.reshape((-1, 0)).shape == (40, 5)
    assert a.reshape((-1, 0), reverse=True).shape == (50, 4)


def test_reshape_argument_forms(ctx):
    values = np.arange(24, dtype=np.float32)
    a = nd(values, ctx)
    for out in (a.reshape((4, 6)), a.reshape(4, 6), a.reshape([4, 6]), a.reshape(shape=(4, 6))):
        assert out.shape == (4, 6)
        np.testing.assert_array_equal(out.asnumpy(), values.reshape(4, 6))
    with pytest.raises(TypeError):
        a.reshape((4, 6), order="F")


def test_reshape_reverse_splits_with_minus_4_as_mxnet(ctx):
    # MXNet's test_reshape: (64,) reshaped to (16, 4, -4) with reverse=True is (16, 4)
    assert mx.nd.zeros((64,), ctx=ctx).reshape((16, 4, -4), reverse=True).shape == (16, 4)
    assert mx.nd.zeros((6, 5), ctx=ctx).reshape((3, 2, -4, 0), reverse=True).shape == (3, 2, 5)


@pytest.mark.parametrize(
    "source, spec, reverse",
    [
        ((2, 3, 4), (-1, -1), False),  # two unknowns
        ((2, 3, 4), (5, 5), False),  # element count differs
        ((2, 3, 4), (-1, 5), False),  # -1 cannot be inferred
        ((2, 3, 4), (-4, 3, -1, 0, 0), False),  # 2 does not split into 3 x ?
        ((2, 3, 4), (-4, 2), False),  # -4 needs two sizes
        ((2, 3), (0, 0, 0), False),  # 0 past the input dimensions
        ((2, 3), (-3, -3), False),  # -3 past the input dimensions
        ((2, 3, 4), (-5, 4), False),  # unknown code
        ((2, 3, 4), (-4, 1, 2, -2), True),  # reversed, -4 comes last: no sizes follow
    ],
)
def test_reshape_errors(ctx, source, spec, reverse):
    a = mx.nd.zeros(source, ctx=ctx)
    with pytest.raises(ShapeError):
        a.reshape(spec, reverse=reverse)


def test_reshape_is_a_view(ctx):
    a = mx.nd.zeros((2, 3), ctx=ctx)
    b = a.reshape((-1,))
    b[4] = 7
    expected = np.zeros(6, np.float32)
    expected[4] = 7
    np.testing.assert_array_equal(a.asnumpy(), expected.reshape(2, 3))
    a[0] = 1
    np.testing.assert_array_equal(b.asnumpy()[:3], np.ones(3, np.float32))


@pytest.mark.parametrize("shape", [(2, 3), (1, 4), (4, 1), (2, 3, 4)])
def test_transpose_property(ctx, shape):
    values = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    a = nd(values, ctx)
    t = a.T
    assert t.shape == values.T.shape
    np.testing.assert_array_equal(t.asnumpy(), values.T)
    t[:] = -1  # a copy: the source keeps its values
    np.testing.assert_array_equal(a.asnumpy(), values)


def test_transpose_of_1d_is_self(ctx):
    a = mx.nd.array([1, 2, 3], ctx=ctx)
    assert a.T is a


# --------------------------------------------------------------------- indexing


def test_int_index_on_1d_is_a_1_element_view(ctx):
    values = np.arange(5, dtype=np.float32) * 10
    a = nd(values, ctx)
    for index in (0, 3, -1, -5, np.int64(2)):
        item = a[index]
        assert item.shape == (1,)
        assert item.asscalar() == values[index]
    item = a[-2]
    item[:] = 99
    assert a.asnumpy()[3] == 99
    item += 1
    assert a.asnumpy()[3] == 100


def test_int_index_on_nd_is_a_view(ctx):
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = nd(values, ctx)
    row = a[1]
    assert row.shape == (4,)
    np.testing.assert_array_equal(row.asnumpy(), values[1])
    np.testing.assert_array_equal(a[-1].asnumpy(), values[-1])
    row[:] = 0
    np.testing.assert_array_equal(a.asnumpy()[1], np.zeros(4, np.float32))


def test_full_int_tuple_gives_shape_1(ctx):
    values = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = nd(values, ctx)
    for key in [(1, 2, 3), (0, -1, -2), (1, 0, 0)]:
        item = a[key]
        assert item.shape == (1,)
        assert item.asscalar() == values[key]


@pytest.mark.parametrize(
    "shape, key",
    [((5,), 5), ((5,), -6), ((3, 4), 3), ((3, 4), -4), ((3, 4), (0, 4)), ((3, 4), (-4, 0))],
)
def test_index_out_of_range(ctx, shape, key):
    with pytest.raises(IndexError):
        mx.nd.zeros(shape, ctx=ctx)[key]


@pytest.mark.parametrize(
    "key",
    [
        slice(1, 3),
        slice(None),
        slice(None, None, 2),
        slice(None, None, -1),
        slice(-3, None),
        slice(4, 1, -2),
        slice(10, 20),
        (slice(1, 3), slice(None, None, 2)),
        (1, slice(1, None)),
        (slice(None), 2),
        (slice(None, None, -1), slice(0, 2), 1),
    ],
    ids=str,
)
def test_slicing_matches_numpy(ctx, key):
    values = np.arange(5 * 4 * 3, dtype=np.float32).reshape(5, 4, 3)
    out = nd(values, ctx)[key]
    expected = values[key]
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.asnumpy(), expected)


def test_first_axis_slice_is_a_view(ctx):
    a = mx.nd.zeros((4, 3), ctx=ctx)
    part = a[1:3]
    part[:] = 5
    expected = np.zeros((4, 3), np.float32)
    expected[1:3] = 5
    np.testing.assert_array_equal(a.asnumpy(), expected)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64, np.float32, np.float64])
def test_ndarray_index_arrays(ctx, index_dtype):
    values = np.arange(20, dtype=np.float32).reshape(5, 4)
    a = nd(values, ctx)
    rows = np.array([3, 0, 3, 4])
    out = a[nd(rows.astype(index_dtype), ctx)]
    np.testing.assert_array_equal(out.asnumpy(), values[rows])
    cols = np.array([1, 0, 2, 3])
    out = a[nd(rows.astype(index_dtype), ctx), nd(cols.astype(index_dtype), ctx)]
    np.testing.assert_array_equal(out.asnumpy(), values[rows, cols])
    out = nd(values[0], ctx)[nd(cols.astype(index_dtype), ctx)]
    np.testing.assert_array_equal(out.asnumpy(), values[0][cols])


def test_setitem(ctx):
    expected = np.zeros((4, 3), np.float32)
    a = nd(expected, ctx)
    steps = [
        (slice(None), 1.5),
        (2, 7),
        ((1, 2), -3),
        ((slice(0, 2), slice(1, None)), np.array([[10, 11], [12, 13]], np.float32)),
        (3, [4, 5, 6]),
        ((slice(None), 0), np.array([9, 8, 7, 6], np.float64)),
        (slice(None, None, 2), 0.25),
        (slice(None), np.array([1, 2, 3], np.float32)),  # broadcast over rows
    ]
    for key, value in steps:
        a[key] = value
        expected[key] = value
        np.testing.assert_array_equal(a.asnumpy(), expected)
    a[1:3] = nd(np.full((2, 3), 4, np.float32), ctx)
    expected[1:3] = 4
    a[0] = nd(np.array([1, 1, 1], np.float32), other_context(ctx))
    expected[0] = 1
    np.testing.assert_array_equal(a.asnumpy(), expected)
    assert a.dtype is np.float32


def test_setitem_1d_int_and_ndarray_index(ctx):
    expected = np.arange(6, dtype=np.int32)
    a = nd(expected, ctx)
    a[-1] = 40
    expected[-1] = 40
    a[nd(np.array([0, 2]), ctx)] = 9
    expected[[0, 2]] = 9
    np.testing.assert_array_equal(a.asnumpy(), expected)


@pytest.mark.parametrize(
    "key, value",
    [
        (slice(0, 2), np.ones((3, 3))),
        (1, [1, 2]),
        (slice(None), np.ones((4, 2))),
    ],
)
def test_setitem_shape_mismatch(ctx, key, value):
    a = mx.nd.zeros((4, 3), ctx=ctx)
    with pytest.raises(ShapeError) as info:
        a[key] = value
    assert str(np.shape(value)) in str(info.value) and "(4, 3)" in str(info.value)
    with pytest.raises(ShapeError):
        a[key] = nd(np.asarray(value, np.float32), ctx)


@pytest.mark.parametrize("as_ndarray", [False, True])
def test_setitem_drops_extra_leading_axes_of_length_one(ctx, as_ndarray):
    """As MXNet 1.9.1: b[0] = numpy.array([v]) on a 1-d b; a[0] = ones((1, 1, 3)) on a 2-d a."""
    convert = (lambda v: nd(v, ctx)) if as_ndarray else (lambda v: v)
    b = mx.nd.zeros(1, ctx=ctx)
    b[0] = convert(np.array([47.844944], dtype=np.float32))
    np.testing.assert_array_equal(b.asnumpy(), np.array([47.844944], dtype=np.float32))
    a = mx.nd.zeros((2, 3), ctx=ctx)
    a[0] = convert(np.array([[[5.0, 6.0, 7.0]]], dtype=np.float32))
    np.testing.assert_array_equal(a.asnumpy(), [[5, 6, 7], [0, 0, 0]])
    with pytest.raises(ShapeError):
        a[0] = convert(np.ones((2, 1, 3), dtype=np.float32))  # a leading 2 is not dropped


# ------------------------------------------------------------------- arithmetic

BINARY = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "%": operator.mod,
    "**": operator.pow,
}
INPLACE = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "%=": operator.imod,
}
COMPARE = {
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


def positive_floats(shape, dtype=np.float32, offset=0):
    return rng(offset).uniform(0.5, 3.0, size=shape).astype(dtype)


def expected_binary(fn, lhs, rhs, dtype):
    """NumPy's result with MXNet's rule: the scalar is cast to the array's dtype."""
    lhs = np.asarray(lhs).astype(dtype)
    rhs = np.asarray(rhs).astype(dtype)
    return np.asarray(fn(lhs, rhs)).astype(dtype)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_binary_with_scalar_and_reflected(ctx, name, dtype):
    fn = BINARY[name]
    values = positive_floats((3, 4), dtype)
    a = nd(values, ctx)
    for scalar in (2, 1.5, np.float64(0.75)):
        out = fn(a, scalar)
        assert out.dtype is dtype and out.context == ctx and out.shape == (3, 4)
        np.testing.assert_allclose(
            out.asnumpy(), expected_binary(fn, values, scalar, dtype), rtol=1e-6
        )
        out = fn(scalar, a)
        assert isinstance(out, mx.nd.NDArray) and out.dtype is dtype
        np.testing.assert_allclose(
            out.asnumpy(), expected_binary(fn, scalar, values, dtype), rtol=1e-6
        )


@pytest.mark.parametrize("name", BINARY)
def test_binary_between_ndarrays(ctx, name):
    fn = BINARY[name]
    x = positive_floats((3, 4))
    y = positive_floats((3, 4), offset=1)
    out = fn(nd(x, ctx), nd(y, ctx))
    assert out.dtype is np.float32 and out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), fn(x, y), rtol=1e-6)


@pytest.mark.parametrize("name", INPLACE)
@pytest.mark.parametrize("rhs_kind", ["scalar", "ndarray", "broadcast"])
def test_inplace_operators(ctx, name, rhs_kind):
    fn = INPLACE[name]
    values = positive_floats((3, 4))
    other = positive_floats((3, 4), offset=1)
    rhs = {"scalar": 1.25, "ndarray": other, "broadcast": other[0].copy()}[rhs_kind]
    a = nd(values, ctx)
    view = a[1]
    result = fn(a, rhs if rhs_kind == "scalar" else nd(rhs, ctx))
    assert result is a and a.dtype is np.float32
    expected = fn(values.copy(), np.float32(rhs) if rhs_kind == "scalar" else rhs)
    np.testing.assert_allclose(a.asnumpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(view.asnumpy(), expected[1], rtol=1e-6)  # same memory


def test_inplace_on_a_view_updates_the_base(ctx):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = nd(values, ctx)
    row = a[1]
    row *= 10
    expected = values.copy()
    expected[1] *= 10
    np.testing.assert_array_equal(a.asnumpy(), expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int64])
def test_negation_and_abs(ctx, dtype):
    values = np.array([[-3, 0, 2], [5, -1, 4]], dtype=dtype)
    a = nd(values, ctx)
    assert (-a).dtype is dtype and abs(a).dtype is dtype
    np.testing.assert_array_equal((-a).asnumpy(), -values)
    np.testing.assert_array_equal(abs(a).asnumpy(), np.abs(values))
    assert (+a) is a


def test_int_division_truncates_toward_zero(ctx):
    x = np.array([-7, 7, -8, 5, 0, -1, 9, -9], dtype=np.int32)
    y = np.array([2, 2, 3, -2, 4, 2, -4, -4], dtype=np.int32)
    a = nd(x, ctx)
    out = a / 2
    assert out.dtype is np.int32
    np.testing.assert_array_equal(out.asnumpy(), np.trunc(x / 2).astype(np.int32))
    assert out.asnumpy()[0] == -3  # -7 / 2, truncated (not floored to -4)
    out = a / nd(y, ctx)
    np.testing.assert_array_equal(out.asnumpy(), np.trunc(x / y).astype(np.int32))
    nonzero = nd(y, ctx)
    out = 17 / nonzero
    np.testing.assert_array_equal(out.asnumpy(), np.trunc(17 / y).astype(np.int32))
    a /= 3
    assert a.dtype is np.int32
    np.testing.assert_array_equal(a.asnumpy(), np.trunc(x / 3).astype(np.int32))


def test_int_scalar_is_cast_to_array_dtype(ctx):
    x = np.array([-3, 0, 4, 10], dtype=np.int32)
    a = nd(x, ctx)
    for scalar in (0.5, 2.7, -1.9):
        cast = np.asarray(scalar).astype(np.int32)
        out = a + scalar
        assert out.dtype is np.int32
        np.testing.assert_array_equal(out.asnumpy(), x + cast)
        np.testing.assert_array_equal((a * scalar).asnumpy(), x * cast)


def test_int_modulo_matches_numpy(ctx):
    x = np.array([-7, 7, -8, 5, 0, -1], dtype=np.int32)
    y = np.array([3, -3, 3, -2, 4, 5], dtype=np.int32)
    a = nd(x, ctx)
    np.testing.assert_array_equal((a % 3).asnumpy(), np.mod(x, 3))
    np.testing.assert_array_equal((a % nd(y, ctx)).asnumpy(), np.mod(x, y))
    np.testing.assert_array_equal((10 % nd(y, ctx)).asnumpy(), np.mod(10, y))
    assert (a % 3).dtype is np.int32


def test_float16_stays_float16(ctx):
    values = positive_floats((4,), np.float16)
    a = nd(values, ctx)
    for out in (a + 1, a * 0.1, a / a, 2**a, a**0.5, a - nd(values, ctx), a > 1):
        assert out.dtype is np.float16


@pytest.mark.parametrize("name", COMPARE)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_comparisons_give_0_1_in_array_dtype(ctx, name, dtype):
    fn = COMPARE[name]
    x = np.array([[1, 2, 3], [4, 2, 0]], dtype=dtype)
    y = np.array([[3, 2, 1], [4, 5, 0]], dtype=dtype)
    a = nd(x, ctx)
    for rhs, expected in (
        (2, fn(x, dtype(2))),
        (nd(y, ctx), fn(x, y)),
        (nd(y[0], ctx), fn(x, y[0])),
    ):
        out = fn(a, rhs)
        assert out.dtype is dtype and out.shape == x.shape
        np.testing.assert_array_equal(out.asnumpy(), expected.astype(dtype))
    # the reflected form (2 < a is a > 2)
    np.testing.assert_array_equal(fn(2, a).asnumpy(), fn(dtype(2), x).astype(dtype))


@pytest.mark.parametrize(
    "lhs_shape, rhs_shape",
    [
        ((2, 3), (3,)),
        ((2, 1), (1, 3)),
        ((4, 1, 3), (2, 1)),
        ((1,), (2, 2)),
        ((2, 3), (2, 3)),
    ],
)
@pytest.mark.parametrize("name", ["+", "-", "*", "/"])
def test_broadcasting(ctx, lhs_shape, rhs_shape, name):
    fn = BINARY[name]
    x, y = positive_floats(lhs_shape), positive_floats(rhs_shape, offset=1)
    out = fn(nd(x, ctx), nd(y, ctx))
    expected = fn(x, y)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-6)


def test_incompatible_broadcast_is_refused(ctx):
    with pytest.raises(ValueError):
        mx.nd.ones((2, 3), ctx=ctx) + mx.nd.ones((4,), ctx=ctx)


@pytest.mark.parametrize(
    "fn",
    [
        operator.add,
        operator.sub,
        operator.truediv,
        operator.eq,
        operator.lt,
        operator.iadd,
        operator.imul,
    ],
    ids=lambda f: f.__name__,
)
def test_mixing_contexts_is_refused(ctx, fn):
    other = other_context(ctx)
    a, b = mx.nd.ones((2,), ctx=ctx), mx.nd.ones((2,), ctx=other)
    with pytest.raises(ContextMismatchError) as info:
        fn(a, b)
    assert str(ctx) in str(info.value) and str(other) in str(info.value)
    np.testing.assert_array_equal(a.asnumpy(), np.ones(2, np.float32))


@pytest.mark.parametrize(
    "fn",
    [operator.add, operator.mul, operator.mod, operator.ge, operator.isub],
    ids=lambda f: f.__name__,
)
def test_mixing_dtypes_is_refused(ctx, fn):
    a = mx.nd.ones((2,), ctx=ctx, dtype=np.float32)
    b = mx.nd.ones((2,), ctx=ctx, dtype=np.float64)
    with pytest.raises(DTypeMismatchError) as info:
        fn(a, b)
    assert "float32" in str(info.value) and "float64" in str(info.value)


def test_unsupported_operand(ctx):
    a = mx.nd.ones((2,), ctx=ctx)
    with pytest.raises(TypeError):
        a + "1"
    with pytest.raises(TypeError):
        None * a


@pytest.mark.parametrize("name", ["+", "-", "*", "/"])
def test_numpy_arrays_meet_ndarrays(ctx, name):
    fn = BINARY[name]
    x = positive_floats((2, 3))
    host = positive_floats((2, 3), np.float64, offset=1)  # cast to the NDArray's float32
    a = nd(x, ctx)
    for out, expected in (
        (fn(host, a), fn(host.astype(np.float32), x)),
        (fn(a, host), fn(x, host.astype(np.float32))),
    ):
        assert isinstance(out, mx.nd.NDArray)
        assert out.dtype is np.float32 and out.context == ctx
        np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-6)


FLOATS = st.floats(-100, 100, width=32, allow_subnormal=False)


@FAST
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4), data=st.data()
)
def test_arithmetic_matches_numpy(ctx, shapes, data):
    lhs_shape, rhs_shape = shapes.input_shapes
    x = data.draw(hnp.arrays(np.float32, lhs_shape, elements=FLOATS))
    y = data.draw(hnp.arrays(np.float32, rhs_shape, elements=FLOATS))
    divisor = np.where(np.abs(y) < 0.5, np.float32(0.5), y)  # keep away from zero
    a, b, c = nd(x, ctx), nd(y, ctx), nd(divisor, ctx)
    for out, expected in (
        (a + b, x + y),
        (a - b, x - y),
        (a * b, x * y),
        (a / c, x / divisor),
        (-a, -x),
        (a > b, (x > y).astype(np.float32)),
    ):
        assert out.shape == expected.shape and out.dtype is np.float32
        np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-6, atol=_subnormal_slack(ctx))


def _subnormal_slack(ctx):
    """0 on the CPU; on the GPU a float32 result below the smallest normal may read 0."""
    return 0 if ctx.device_type == "cpu" else np.finfo(np.float32).smallest_normal


def test_subnormal_float32_results_follow_the_device(ctx):
    # The CPU keeps float32 subnormals, as MXNet 1.9.1's CPU kernels do (0.5 times the
    # smallest normal reads 5.877472e-39 there). CuPy compiles its kernels with
    # -ftz=true, so on the GPU such a float32 result is flushed to 0 (README,
    # "Differences from MXNet"); float64 keeps its subnormals on both.
    tiny32 = np.finfo(np.float32).smallest_normal
    half = (nd(np.array([tiny32], np.float32), ctx) * 0.5).asnumpy()
    expected = np.float32(np.float64(tiny32) / 2) if ctx.device_type == "cpu" else 0.0
    assert half.dtype == np.float32 and half[0] == expected
    tiny64 = np.finfo(np.float64).smallest_normal
    half64 = (mx.nd.array([tiny64], ctx=ctx, dtype="float64") * 0.5).asnumpy()
    assert half64[0] == tiny64 / 2 and half64[0] > 0


# ------------------------------------------------------------- python protocols


def test_array_protocol(ctx):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = nd(values, ctx)
    host = np.asarray(a)
    assert isinstance(host, np.ndarray) and host.dtype == np.float32
    np.testing.assert_array_equal(host, values)
    np.testing.assert_array_equal(np.asarray(a, dtype=np.float64), values.astype(np.float64))
    assert np.asarray(a, dtype=np.float64).dtype == np.float64


def test_dlpack_round_trip(ctx, xp):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = nd(values, ctx)
    shared = xp.from_dlpack(a)
    assert shared.shape == (2, 3) and shared.dtype == np.float32
    assert xp.shares_memory(shared, a.data)  # DLPack hands over the buffer, not a copy
    back = mx.nd.array(shared, ctx=ctx)
    assert back.dtype is np.float32
    np.testing.assert_array_equal(back.asnumpy(), values)


def test_len_and_iteration(ctx):
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = nd(values, ctx)
    assert len(a) == 3
    rows = list(a)
    assert len(rows) == 3
    for row, expected in zip(rows, values, strict=True):
        assert isinstance(row, mx.nd.NDArray) and row.shape == (4,)
        np.testing.assert_array_equal(row.asnumpy(), expected)
    items = list(nd(values[0], ctx))
    assert [item.shape for item in items] == [(1,)] * 4
    assert [item.asscalar() for item in items] == list(values[0])


@pytest.mark.parametrize(
    "values, expected",
    [
        (np.zeros((0,), np.float32), False),
        (np.zeros((2, 0), np.float32), False),
        (np.array([0.0], np.float32), False),
        (np.array([3.0], np.float32), True),
        (np.array([[-1]], np.int32), True),
        (np.array([[0]], np.int32), False),
    ],
)
def test_bool(ctx, values, expected):
    assert bool(nd(values, ctx)) is expected


def test_bool_of_many_elements_is_ambiguous(ctx):
    with pytest.raises(ValueError, match="ambiguous"):
        bool(mx.nd.ones((2,), ctx=ctx))


def test_hash_is_identity(ctx):
    a = mx.nd.ones((2,), ctx=ctx)
    b = mx.nd.ones((2,), ctx=ctx)  # equal values, a different array
    assert hash(a) == hash(a) and hash(a) != hash(b)
    seen = {a, b, a}
    assert len(seen) == 2 and a in seen and b in seen
    assert a.copy() not in seen
    table = {a: "a", b: "b"}
    assert table[a] == "a" and table[b] == "b"


@pytest.mark.parametrize("shape", [(2, 3), (4,), (2, 1, 3)])
def test_repr_like_mxnet(ctx, shape):
    values = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    a = nd(values, ctx)
    dims = "x".join(str(d) for d in shape)
    device = f"{ctx.device_type}({ctx.device_id})"
    assert repr(a) == "\n" + str(values) + f"\n<NDArray {dims} @{device}>"


def test_repr_of_cpu_array_names_cpu0(ctx):
    a = mx.nd.zeros((2, 3), ctx=ctx).copyto(mx.cpu(0))
    assert repr(a).endswith("\n<NDArray 2x3 @cpu(0)>")
