"""Tests for rebind.ndarray.random (``mx.nd.random``) and ``mx.random.seed``."""

import numpy as np
import pytest

import rebind as mx

N = 20_000  # large samples: moments are checked within 5 standard errors


def seeded(seed, ctx=None):
    print(f"mx.random.seed({seed})")
    mx.random.seed(seed) if ctx is None else mx.random.seed(seed, ctx=ctx)


def assert_mean_close(sample, mean, std):
    """The sample mean within 5 standard errors of ``mean``."""
    error = abs(float(sample.mean()) - mean)
    assert error <= 5 * std / np.sqrt(sample.size), (sample.mean(), mean, std)


# ------------------------------------------------------------- shapes and dtypes


@pytest.mark.parametrize(
    "draw",
    [
        lambda **kw: mx.nd.random.uniform(**kw),
        lambda **kw: mx.nd.random.normal(**kw),
        lambda **kw: mx.nd.random.randint(0, 10, **kw),
    ],
    ids=["uniform", "normal", "randint"],
)
def test_shapes_and_contexts(ctx, draw):
    seeded(1)
    assert draw(ctx=ctx).shape == (1,)  # no shape: one sample, as MXNet
    for shape, expected in ((4, (4,)), ((2, 3), (2, 3)), ([3, 1, 2], (3, 1, 2)), ((0,), (0,))):
        a = draw(shape=shape, ctx=ctx)
        assert a.shape == expected and a.context == ctx


@pytest.mark.parametrize("dtype", [None, "float64", np.float16])
def test_float_dtypes(ctx, dtype):
    expected = np.dtype(dtype or np.float32).type
    seeded(2)
    assert mx.nd.random.uniform(shape=3, dtype=dtype, ctx=ctx).dtype is expected
    assert mx.nd.random.normal(shape=3, dtype=dtype, ctx=ctx).dtype is expected


@pytest.mark.parametrize("dtype", [None, "int64", np.int32, "uint8"])
def test_randint_dtypes(ctx, dtype):
    expected = np.dtype(dtype or np.int32).type
    seeded(3)
    assert mx.nd.random.randint(0, 5, shape=3, dtype=dtype, ctx=ctx).dtype is expected


def test_mx_random_is_mx_nd_random(ctx):
    seeded(4)
    a = mx.random.uniform(-1, 1, shape=(5,), ctx=ctx)
    seeded(4)
    b = mx.nd.random.uniform(-1, 1, shape=(5,), ctx=ctx)
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


# ------------------------------------------------------------ values and moments


@pytest.mark.parametrize("low, high", [(0, 1), (-2.0, 3.0), (10, 10.5)])
def test_uniform_bounds_and_moments(ctx, low, high):
    seeded(5)
    sample = mx.nd.random.uniform(low, high, shape=(N,), ctx=ctx).asnumpy().astype(np.float64)
    assert sample.min() >= low and sample.max() <= high
    width = high - low
    assert_mean_close(sample, (low + high) / 2, width / np.sqrt(12))
    # the spread covers the interval: both ends are reached within 1% of its width
    assert sample.min() < low + width / 100 and sample.max() > high - width / 100
    assert abs(sample.var() - width**2 / 12) < 0.05 * width**2 / 12


@pytest.mark.parametrize("loc, scale", [(0, 1), (3.0, 0.5), (-10, 4)])
def test_normal_moments(ctx, loc, scale):
    seeded(6)
    sample = mx.nd.random.normal(loc, scale, shape=(N,), ctx=ctx).asnumpy().astype(np.float64)
    assert_mean_close(sample, loc, scale)
    # the standard error of the sample standard deviation is about scale / sqrt(2N)
    assert abs(sample.std() - scale) <= 5 * scale / np.sqrt(2 * N)
    within_one = np.mean(np.abs(sample - loc) < scale)
    assert abs(within_one - 0.6827) < 0.02


@pytest.mark.parametrize("low, high", [(0, 10), (-5, 3), (7, 8), (0, 2**31 - 1)])
def test_randint_bounds_and_moments(ctx, low, high):
    seeded(7)
    sample = mx.nd.random.randint(low, high, shape=(N,), ctx=ctx).asnumpy().astype(np.float64)
    assert sample.min() >= low and sample.max() <= high - 1
    assert np.array_equal(sample, np.round(sample))
    count = high - low
    assert_mean_close(sample, (low + high - 1) / 2, np.sqrt((count**2 - 1) / 12))
    if count <= 10:  # every value turns up
        assert set(np.unique(sample)) == set(range(low, high))


@pytest.mark.parametrize("low, high", [(5, 5), (5, 2), (0, -1)])
def test_randint_needs_high_above_low(ctx, low, high):
    with pytest.raises(ValueError, match="high"):
        mx.nd.random.randint(low, high, shape=2, ctx=ctx)


def test_ndarray_parameters_draw_one_distribution_per_element(ctx):
    seeded(13)
    low, high = mx.nd.array([0, 10], ctx=ctx), mx.nd.array([1, 11], ctx=ctx)
    out = mx.nd.random.uniform(low, high, shape=3)
    assert out.shape == (2, 3) and out.context == ctx
    values = out.asnumpy()
    assert (values[0] < 1).all() and (values[1] >= 10).all()
    scale = mx.nd.array([1.0, 4.0], ctx=ctx)
    assert mx.nd.random.exponential(scale).shape == (2,)
    assert mx.nd.random.normal(low, scale, shape=(2, 2)).shape == (2, 2, 2)


def test_parameters_must_be_all_numbers_or_all_ndarrays(ctx):
    with pytest.raises(TypeError, match="same type"):
        mx.nd.random.uniform(mx.nd.zeros((2,), ctx=ctx), 1)
    with pytest.raises(TypeError):  # MXNet has no randint with NDArray parameters
        mx.nd.random.randint(mx.nd.zeros((2,), ctx=ctx), mx.nd.ones((2,), ctx=ctx))


@pytest.mark.parametrize(
    "draw, mean",
    [
        (lambda ctx: mx.nd.random.poisson(3, shape=4000, ctx=ctx), 3.0),
        (lambda ctx: mx.nd.random.exponential(2, shape=4000, ctx=ctx), 2.0),
        (lambda ctx: mx.nd.random.gamma(2, 1.5, shape=4000, ctx=ctx), 3.0),
        (lambda ctx: mx.nd.random.negative_binomial(4, 0.5, shape=4000, ctx=ctx), 4.0),
        (lambda ctx: mx.nd.random.generalized_negative_binomial(2, 0.5, shape=4000, ctx=ctx), 2.0),
        (lambda ctx: mx.nd.random.randn(40, 100, ctx=ctx, loc=1), 1.0),
    ],
    ids=["poisson", "exponential", "gamma", "negative_binomial", "gen_negative_binomial", "randn"],
)
def test_other_distributions(ctx, draw, mean):
    seeded(14)
    sample = draw(ctx).asnumpy().astype(np.float64)
    assert sample.dtype == np.float64 and abs(sample.mean() - mean) < 0.15 * mean


def test_like_samplers_and_multinomial(ctx):
    seeded(15)
    data = mx.nd.zeros((3, 2), ctx=ctx, dtype=np.float64)
    out = mx.nd.random.normal_like(data, loc=2)
    assert out.shape == (3, 2) and out.dtype is np.float64
    probs = mx.nd.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], ctx=ctx)
    index, log_prob = mx.nd.random.multinomial(probs, shape=5, get_prob=True)
    assert index.dtype is np.int32 and index.shape == (2, 5)
    assert set(index.asnumpy()[1].tolist()) == {2} and (log_prob.asnumpy()[1] == 0).all()


# ------------------------------------------------------------------------ seeds


@pytest.mark.parametrize(
    "draw",
    [
        lambda ctx: mx.nd.random.uniform(shape=(50,), ctx=ctx),
        lambda ctx: mx.nd.random.normal(2, 3, shape=(5, 10), ctx=ctx),
        lambda ctx: mx.nd.random.randint(0, 1000, shape=(50,), ctx=ctx),
        lambda ctx: mx.nd.random.shuffle(mx.nd.arange(50, ctx=ctx)),
    ],
    ids=["uniform", "normal", "randint", "shuffle"],
)
def test_seed_makes_draws_reproducible(ctx, draw):
    seeded(123)
    first, second = draw(ctx).asnumpy(), draw(ctx).asnumpy()
    assert not np.array_equal(first, second)  # the stream moves on
    seeded(123)
    np.testing.assert_array_equal(draw(ctx).asnumpy(), first)
    np.testing.assert_array_equal(draw(ctx).asnumpy(), second)
    seeded(124)
    assert not np.array_equal(draw(ctx).asnumpy(), first)


def test_seed_of_one_context(ctx):
    seeded(99, ctx=ctx)
    first = mx.nd.random.uniform(shape=(20,), ctx=ctx).asnumpy()
    seeded(99, ctx=ctx)
    np.testing.assert_array_equal(mx.nd.random.uniform(shape=(20,), ctx=ctx).asnumpy(), first)


def test_seed_must_be_an_integer():
    with pytest.raises(TypeError):
        mx.random.seed(1.5)


# ---------------------------------------------------------------------- shuffle


@pytest.mark.parametrize("shape", [(30,), (30, 3), (12, 2, 2)])
def test_shuffle_permutes_rows_and_keeps_the_input(ctx, shape):
    seeded(8)
    values = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    data = mx.nd.array(values, ctx=ctx)
    out = mx.nd.random.shuffle(data)
    assert out is not data
    assert out.shape == shape and out.dtype is np.float32 and out.context == ctx
    result = out.asnumpy()
    np.testing.assert_array_equal(data.asnumpy(), values)  # the input is unchanged
    assert not np.array_equal(result, values)  # 30 rows: never the identity for this seed
    # each row of the result is a whole row of the input, and each input row is used once
    flat_in = values.reshape(shape[0], -1)
    flat_out = result.reshape(shape[0], -1)
    order = [int(row[0]) // flat_in.shape[1] for row in flat_out]
    assert sorted(order) == list(range(shape[0]))
    np.testing.assert_array_equal(flat_out, flat_in[order])


# -------------------------------------------------------------------------- out=


def test_out_is_filled_with_fresh_samples(ctx):
    seeded(9)
    out = mx.nd.zeros((40, 5), ctx=ctx)
    result = mx.nd.random.uniform(2, 3, out=out)
    assert result is out and out.shape == (40, 5) and out.dtype is np.float32
    values = out.asnumpy()
    assert values.min() >= 2 and values.max() <= 3
    assert len(np.unique(values)) > 150  # independent samples, not one value repeated


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_out_keeps_its_dtype(ctx, dtype):
    seeded(10)
    out = mx.nd.zeros((200,), ctx=ctx, dtype=dtype)
    assert mx.nd.random.normal(out=out) is out
    assert out.dtype is dtype and out.shape == (200,)
    assert len(np.unique(out.asnumpy())) > 100


def test_randint_out(ctx):
    seeded(11)
    out = mx.nd.zeros((300,), ctx=ctx, dtype=np.int32)
    assert mx.nd.random.randint(-3, 4, out=out) is out
    values = out.asnumpy()
    assert out.dtype is np.int32
    assert set(np.unique(values)) == set(range(-3, 4))


def test_out_with_explicit_shape(ctx):
    seeded(12)
    out = mx.nd.zeros((3, 4), ctx=ctx)
    assert mx.nd.random.uniform(-1, 0, shape=(3, 4), out=out) is out
    values = out.asnumpy()
    assert values.min() >= -1 and values.max() <= 0 and len(np.unique(values)) == 12
