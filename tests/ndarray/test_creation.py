"""Tests for rebind.ndarray.creation: making, filling and joining NDArrays."""

import numpy as np
import pytest

import rebind as mx
from rebind.errors import ContextMismatchError, ShapeError
from rebind.ops.params import ParamError

SEED = 7


def host_values(shape, dtype=np.float32, offset=0):
    print(f"numpy seed={SEED + offset}")
    return np.random.default_rng(SEED + offset).uniform(-2, 2, size=shape).astype(dtype)


# ------------------------------------------------------------------------ array


@pytest.mark.parametrize(
    "source",
    [
        [1, 2, 3],
        [[1, 2], [3, 4]],
        (1.5, -2.5),
        [[True, False]],
        [[1, 2**20]],
    ],
    ids=str,
)
def test_array_from_python_defaults_to_float32(ctx, source):
    a = mx.nd.array(source, ctx=ctx)
    expected = np.array(source, dtype=np.float32)
    assert a.dtype is np.float32 and a.context == ctx and a.shape == expected.shape
    np.testing.assert_array_equal(a.asnumpy(), expected)


@pytest.mark.parametrize("scalar", [3, 2.5, np.float64(-1.25), np.int64(9)])
def test_array_from_scalar_defaults_to_float32(ctx, scalar):
    a = mx.nd.array(scalar, ctx=ctx)
    assert a.dtype is np.float32 and a.size == 1
    assert a.asnumpy().reshape(-1)[0] == np.float32(scalar)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32, np.int64, np.uint8])
def test_array_from_numpy_defaults_to_float32(ctx, dtype):
    # MXNet 1.x: the default dtype is the source's only for NDArrays, float32 otherwise
    values = (np.arange(6) - 2).reshape(2, 3).astype(dtype)
    a = mx.nd.array(values, ctx=ctx)
    assert a.dtype is np.float32
    np.testing.assert_array_equal(a.asnumpy(), values.astype(np.float32))
    assert mx.nd.array(values, ctx=ctx, dtype=dtype).dtype is dtype


def test_array_from_ndarray_keeps_its_dtype(ctx):
    src = mx.nd.array(np.arange(4), ctx=ctx, dtype=np.int64)
    for source in (src, src.copyto(mx.cpu(1))):
        a = mx.nd.array(source, ctx=ctx)
        assert a.dtype is np.int64 and a.context == ctx
        np.testing.assert_array_equal(a.asnumpy(), np.arange(4))


@pytest.mark.parametrize("dtype", [np.int32, "float16", np.dtype("float64"), "uint8"])
def test_array_explicit_dtype(ctx, dtype):
    expected_type = np.dtype(dtype).type
    values = np.array([[0.0, 1.0], [2.0, 3.0]])
    for source in (values.tolist(), values, mx.nd.array(values, ctx=ctx)):
        a = mx.nd.array(source, ctx=ctx, dtype=dtype)
        assert a.dtype is expected_type
        np.testing.assert_array_equal(a.asnumpy(), values.astype(dtype))


def test_array_default_context_and_ctx_argument(ctx):
    assert mx.nd.array([1, 2]).context == mx.current_context()
    a = mx.nd.array([1, 2], ctx=ctx)
    assert a.context == ctx
    other = mx.nd.array(a, ctx=mx.cpu(1))
    assert other.context == mx.cpu(1)
    np.testing.assert_array_equal(other.asnumpy(), a.asnumpy())


def test_array_copies_its_source(ctx):
    values = host_values((2, 3))
    a = mx.nd.array(values, ctx=ctx)
    original = values.copy()
    values[:] = 100
    np.testing.assert_array_equal(a.asnumpy(), original)
    b = mx.nd.array(a, ctx=ctx)
    assert b is not a
    a[:] = -1
    np.testing.assert_array_equal(b.asnumpy(), original)
    c = mx.nd.array(b.data, ctx=ctx)  # the backend's own array is copied too
    b[:] = 3
    np.testing.assert_array_equal(c.asnumpy(), original)


# ---------------------------------------------------------------- filled arrays


@pytest.mark.parametrize("shape", [3, (3,), (2, 3), [2, 1, 4], (0, 2)], ids=str)
@pytest.mark.parametrize("dtype", [None, np.float64, "int32", np.float16])
def test_empty_zeros_ones_full(ctx, shape, dtype):
    expected_shape = (shape,) if isinstance(shape, int) else tuple(shape)
    np_dtype = np.dtype(dtype or np.float32)
    for make, expected in (
        (lambda: mx.nd.zeros(shape, ctx=ctx, dtype=dtype), np.zeros(expected_shape, np_dtype)),
        (lambda: mx.nd.ones(shape, ctx=ctx, dtype=dtype), np.ones(expected_shape, np_dtype)),
        (lambda: mx.nd.full(shape, 7, ctx=ctx, dtype=dtype), np.full(expected_shape, 7, np_dtype)),
        (lambda: mx.nd.empty(shape, ctx=ctx, dtype=dtype), None),
    ):
        a = make()
        assert a.shape == expected_shape and a.dtype is np_dtype.type and a.context == ctx
        if expected is not None:
            np.testing.assert_array_equal(a.asnumpy(), expected)


def test_full_casts_the_value_to_the_dtype(ctx):
    np.testing.assert_array_equal(
        mx.nd.full((2,), 2.5, ctx=ctx).asnumpy(), np.full(2, 2.5, np.float32)
    )
    np.testing.assert_array_equal(
        mx.nd.full((2,), 2.5, ctx=ctx, dtype="int32").asnumpy(), np.full(2, 2.5).astype(np.int32)
    )


def test_positional_ctx_and_dtype(ctx):
    a = mx.nd.zeros((2, 2), ctx, "float64")
    assert a.context == ctx and a.dtype is np.float64
    b = mx.nd.full((2,), 3, ctx, np.int32)
    assert b.context == ctx and b.dtype is np.int32


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64])
def test_zeros_like_ones_like(ctx, dtype):
    src = mx.nd.full((3, 2), 5, ctx=ctx, dtype=dtype)
    for fn, fill in ((mx.nd.zeros_like, 0), (mx.nd.ones_like, 1)):
        a = fn(src)
        assert a.shape == src.shape and a.dtype is dtype and a.context == ctx
        np.testing.assert_array_equal(a.asnumpy(), np.full((3, 2), fill, dtype))
    np.testing.assert_array_equal(src.asnumpy(), np.full((3, 2), 5, dtype))


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: mx.nd.ones((2, 2), **kw),
        lambda **kw: mx.nd.full((2, 2), 1.0, **kw),
    ],
    ids=["ones", "full"],
)
def test_sparse_storage_is_refused_where_mxnet_has_none(ctx, make):
    for stype in ("csr", "row_sparse"):
        with pytest.raises(NotImplementedError, match=stype):
            make(ctx=ctx, stype=stype)
    assert make(ctx=ctx, stype="default").stype == "default"


@pytest.mark.parametrize("make", [mx.nd.zeros, mx.nd.empty], ids=["zeros", "empty"])
def test_zeros_and_empty_make_sparse_storage(ctx, make):
    for stype in ("csr", "row_sparse"):
        array = make((2, 3), ctx=ctx, stype=stype, dtype="float16")
        assert array.stype == stype and array.context == ctx and array.dtype == np.float16
        np.testing.assert_array_equal(array.asnumpy(), np.zeros((2, 3)))
    assert make((2, 2), ctx=ctx, stype="default").stype == "default"


# ------------------------------------------------------------------------ arange


def test_arange_in_an_integer_dtype_steps_in_that_dtype(ctx):
    # MXNet's _arange computes start + i * step in the output dtype: int(1.3) + i * int(1.3)
    a = mx.nd.arange(1.3, 456.6, 1.3, repeat=3, dtype="int32", ctx=ctx)
    np.testing.assert_array_equal(a.asnumpy(), np.repeat(np.arange(1, 352, dtype=np.int32), 3))


def test_an_empty_range_is_an_error_as_in_mxnet(ctx):
    with pytest.raises(ParamError, match="invalid range"):
        mx.nd.arange(3, 3, ctx=ctx)


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((5,), {}),
        ((2, 6), {}),
        ((2, 6), {"step": 2}),
        ((2, 6), {"step": 1.5, "repeat": 2}),
        ((0, 1), {"step": 0.1}),
        ((5, 0), {"step": -1.5}),
        ((-3, 3), {"repeat": 3}),
    ],
    ids=str,
)
def test_arange_matches_numpy(ctx, args, kwargs):
    start, stop = (0, args[0]) if len(args) == 1 else args
    step, repeat = kwargs.get("step", 1), kwargs.get("repeat", 1)
    expected = np.repeat(np.arange(start, stop, step, dtype=np.float64), repeat)
    a = mx.nd.arange(*args, ctx=ctx, **kwargs)
    assert a.dtype is np.float32 and a.context == ctx and a.shape == expected.shape
    np.testing.assert_allclose(a.asnumpy(), expected.astype(np.float32), rtol=1e-6)


def test_arange_dtype(ctx):
    a = mx.nd.arange(2, 6, step=2, repeat=3, ctx=ctx, dtype="int32")
    assert a.dtype is np.int32
    np.testing.assert_array_equal(a.asnumpy(), np.repeat(np.arange(2, 6, 2), 3))


def test_arange_step_zero(ctx):
    with pytest.raises(ValueError, match="step"):
        mx.nd.arange(0, 5, step=0, ctx=ctx)


# --------------------------------------------------------------------- joining


def test_concat_joins_along_dim_1_by_default(ctx):
    parts = [host_values((2, 3), offset=i) for i in range(3)]
    out = mx.nd.concat(*[mx.nd.array(p, ctx=ctx) for p in parts])
    assert out.shape == (2, 9) and out.context == ctx
    np.testing.assert_array_equal(out.asnumpy(), np.concatenate(parts, axis=1))
    out = mx.nd.concat(*[mx.nd.array(p, ctx=ctx) for p in parts], dim=0, num_args=3)
    np.testing.assert_array_equal(out.asnumpy(), np.concatenate(parts, axis=0))


def test_concat_rejects_unknown_arguments(ctx):
    # MXNet's concat calls its parameter dim; a misspelled parameter is refused by name
    a = mx.nd.ones((2, 2), ctx=ctx)
    with pytest.raises(ParamError, match="unknown parameter 'axis'"):
        mx.nd.concat(a, a, axis=0)


def test_concatenate(ctx):
    parts = [host_values((2, 3), offset=0), host_values((1, 3), offset=1)]
    out = mx.nd.concatenate([mx.nd.array(p, ctx=ctx) for p in parts])
    assert out.shape == (3, 3)
    np.testing.assert_array_equal(out.asnumpy(), np.concatenate(parts, axis=0))
    cols = [host_values((2, 1), offset=2), host_values((2, 4), offset=3)]
    out = mx.nd.concatenate([mx.nd.array(p, ctx=ctx) for p in cols], axis=1)
    np.testing.assert_array_equal(out.asnumpy(), np.concatenate(cols, axis=1))


def test_concatenate_single_array(ctx):
    a = mx.nd.array(host_values((2, 2)), ctx=ctx)
    assert mx.nd.concatenate([a], always_copy=False) is a
    copy = mx.nd.concatenate([a])
    assert copy is not a
    copy[:] = 0
    assert not np.array_equal(a.asnumpy(), copy.asnumpy())


def test_concatenate_errors(ctx):
    a = mx.nd.ones((2, 3), ctx=ctx)
    with pytest.raises(ShapeError) as info:
        mx.nd.concatenate([a, mx.nd.ones((2, 4), ctx=ctx)])
    assert "(2, 3)" in str(info.value) and "(2, 4)" in str(info.value)
    with pytest.raises(ContextMismatchError):
        mx.nd.concatenate([a, mx.nd.ones((2, 3), ctx=mx.cpu(1))])
    with pytest.raises(ValueError):
        mx.nd.concatenate([])


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack(ctx, axis):
    parts = [host_values((2, 3), offset=i) for i in range(4)]
    out = mx.nd.stack(*[mx.nd.array(p, ctx=ctx) for p in parts], axis=axis)
    expected = np.stack(parts, axis=axis)
    assert out.shape == expected.shape and out.context == ctx
    np.testing.assert_array_equal(out.asnumpy(), expected)


def test_stack_default_axis_and_errors(ctx):
    parts = [host_values((3,), offset=i) for i in range(2)]
    out = mx.nd.stack(*[mx.nd.array(p, ctx=ctx) for p in parts], num_args=2)
    np.testing.assert_array_equal(out.asnumpy(), np.stack(parts))
    with pytest.raises(ShapeError):
        mx.nd.stack(mx.nd.ones((2,), ctx=ctx), mx.nd.ones((3,), ctx=ctx))
    with pytest.raises(ContextMismatchError):
        mx.nd.stack(mx.nd.ones((2,), ctx=ctx), mx.nd.ones((2,), ctx=mx.cpu(1)))


# ------------------------------------------------------------------------- dot


@pytest.mark.parametrize(
    "lhs_shape, rhs_shape",
    [
        ((3, 4), (4, 5)),
        ((4,), (4, 2)),
        ((3, 4), (4,)),
        ((2, 3, 4), (4, 5)),
        ((2, 3, 4), (4, 2, 5)),
        ((3,), (3, 2, 2)),
    ],
    ids=str,
)
def test_dot_contracts_last_axis_with_first(ctx, lhs_shape, rhs_shape):
    x, y = host_values(lhs_shape, offset=0), host_values(rhs_shape, offset=1)
    out = mx.nd.dot(mx.nd.array(x, ctx=ctx), mx.nd.array(y, ctx=ctx))
    expected = np.tensordot(x, y, axes=1)
    assert out.shape == expected.shape and out.dtype is np.float32 and out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5, atol=1e-6)


def test_dot_of_vectors_has_shape_1(ctx):
    x, y = host_values((5,), offset=0), host_values((5,), offset=1)
    out = mx.nd.dot(mx.nd.array(x, ctx=ctx), mx.nd.array(y, ctx=ctx))
    assert out.shape == (1,)
    np.testing.assert_allclose(out.asscalar(), np.dot(x, y), rtol=1e-5)


@pytest.mark.parametrize("transpose_a, transpose_b", [(True, False), (False, True), (True, True)])
def test_dot_transposes(ctx, transpose_a, transpose_b):
    x = host_values((4, 3) if transpose_a else (3, 4), offset=0)
    y = host_values((5, 4) if transpose_b else (4, 5), offset=1)
    out = mx.nd.dot(
        mx.nd.array(x, ctx=ctx),
        mx.nd.array(y, ctx=ctx),
        transpose_a=transpose_a,
        transpose_b=transpose_b,
    )
    expected = np.dot(x.T if transpose_a else x, y.T if transpose_b else y)
    assert out.shape == (3, 5)
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "lhs_shape, rhs_shape, kwargs",
    [
        ((3, 4), (3, 4), {}),
        ((3, 4), (4, 5), {"transpose_a": True}),
        ((3,), (4,), {}),
    ],
    ids=str,
)
def test_dot_shape_mismatch(ctx, lhs_shape, rhs_shape, kwargs):
    lhs, rhs = mx.nd.ones(lhs_shape, ctx=ctx), mx.nd.ones(rhs_shape, ctx=ctx)
    with pytest.raises(ShapeError) as info:
        mx.nd.dot(lhs, rhs, **kwargs)
    assert str(lhs_shape) in str(info.value) and str(rhs_shape) in str(info.value)


def test_dot_context_mismatch(ctx):
    with pytest.raises(ContextMismatchError):
        mx.nd.dot(mx.nd.ones((2, 2), ctx=ctx), mx.nd.ones((2, 2), ctx=mx.cpu(1)))


# ------------------------------------------------------------ contexts and waits


def test_waitall(ctx):
    a = mx.nd.ones((64, 64), ctx=ctx)
    b = mx.nd.dot(a, a)
    assert mx.nd.waitall() is None
    np.testing.assert_array_equal(b.asnumpy(), np.full((64, 64), 64, np.float32))


def test_with_context_sets_the_default(ctx):
    outside = mx.current_context()
    with ctx:
        assert mx.current_context() == ctx
        with mx.cpu(1) as inner:
            assert inner == mx.cpu(1) and mx.current_context() == mx.cpu(1)
            made = [
                mx.nd.array([1, 2]),
                mx.nd.zeros(2),
                mx.nd.ones(2),
                mx.nd.full(2, 3),
                mx.nd.empty(2),
                mx.nd.arange(3),
                mx.nd.random.uniform(shape=2),
                mx.nd.random.normal(shape=2),
                mx.nd.random.randint(0, 5, shape=2),
            ]
            assert [a.context for a in made] == [mx.cpu(1)] * len(made)
        assert mx.current_context() == ctx
        assert mx.nd.zeros(2).context == ctx
        assert mx.nd.array(np.zeros(2)).context == ctx
    assert mx.current_context() == outside
    assert mx.nd.zeros(2).context == outside


def test_arange_in_uint8_wraps_its_parameters_as_mxnet(ctx):
    # MXNet's test_arange: arange(50, -50, -2, dtype='uint8') counts 50, 48, ... modulo 256
    a = mx.nd.arange(50, -50, -2, dtype="uint8", ctx=ctx)
    np.testing.assert_array_equal(a.asnumpy(), (50 - 2 * np.arange(50)) % 256)


@pytest.mark.parametrize("make", ["zeros", "ones"])
def test_zeros_ones_fill_out_and_check_its_shape(ctx, make):
    out = mx.nd.full((2, 2), 7, ctx=ctx)
    assert getattr(mx.nd, make)((2, 2), out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 2), make == "ones"))
    with pytest.raises(ShapeError, match=r"out has shape \(2, 2\)"):
        getattr(mx.nd, make)((2, 3), out=out)  # MXNet: "Shape inconsistent"


def test_full_fills_out_whatever_its_shape_as_mxnet(ctx):
    out = mx.nd.zeros((2, 3), ctx=ctx)
    assert mx.nd.full((2, 2), 3, out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 3))
