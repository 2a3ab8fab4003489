"""Random initializers by distribution (bounds, mean, variance) and reproducibility."""

import math

import numpy as np
import pytest

import rebind as mx
from rebind.initializer import InitDesc

from .distribution import assert_normal, assert_uniform

SEED = 1234


def _init(init, shape, ctx, name="w_weight", dtype=np.float32, seed=SEED):
    mx.random.seed(seed)
    arr = mx.nd.zeros(shape, ctx=ctx, dtype=dtype)
    init(InitDesc(name), arr)
    return arr.asnumpy()


def test_uniform(ctx):
    values = _init(mx.init.Uniform(0.3), (200, 300), ctx)
    assert_uniform(values, 0.3, f"Uniform(0.3), seed {SEED}")
    assert_uniform(_init(mx.init.Uniform(), (50000,), ctx), 0.07, f"Uniform(), seed {SEED}")


def test_normal(ctx):
    assert_normal(_init(mx.init.Normal(2.5), (200, 300), ctx), 2.5, f"Normal(2.5), seed {SEED}")
    assert_normal(_init(mx.init.Normal(), (50000,), ctx), 0.01, f"Normal(), seed {SEED}")


def _fans(shape):
    """MXNet's fans: the first two dimensions, each times the receptive field size."""
    receptive = 1
    for d in shape[2:]:
        receptive *= d
    return shape[1] * receptive, shape[0] * receptive


@pytest.mark.parametrize("shape", [(300, 200), (64, 32, 3, 3), (20, 10, 2, 3, 4)])
@pytest.mark.parametrize("factor_type", ["avg", "in", "out"])
@pytest.mark.parametrize("rnd_type", ["uniform", "gaussian"])
def test_xavier_scale_from_mxnet_fans(ctx, shape, factor_type, rnd_type):
    magnitude = 2.34
    init = mx.init.Xavier(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
    values = _init(init, shape, ctx)
    fan_in, fan_out = _fans(shape)
    factor = {"avg": (fan_in + fan_out) / 2, "in": fan_in, "out": fan_out}[factor_type]
    scale = math.sqrt(magnitude / factor)
    what = f"Xavier({rnd_type}, {factor_type}) on {shape}, seed {SEED}"
    if rnd_type == "uniform":
        assert_uniform(values, scale, what)
    else:
        assert_normal(values, scale, what)


def test_xavier_default_is_uniform_avg_magnitude_3(ctx):
    values = _init(mx.init.Xavier(), (400, 100), ctx)
    assert_uniform(values, math.sqrt(3 / 250), f"Xavier(), seed {SEED}")


def test_xavier_refuses_vectors(ctx):
    with pytest.raises(ValueError, match="cannot be applied to vector fc_weight.*least 2D"):
        mx.init.Xavier()(InitDesc("fc_weight"), mx.nd.zeros((5,), ctx=ctx))


@pytest.mark.parametrize("factor_type, slope", [("avg", 0.25), ("in", 0.0), ("out", 1.0)])
def test_msra_prelu_is_gaussian_with_prelu_magnitude(ctx, factor_type, slope):
    shape = (96, 48, 3, 3)
    values = _init(mx.init.MSRAPrelu(factor_type, slope), shape, ctx)
    fan_in, fan_out = _fans(shape)
    factor = {"avg": (fan_in + fan_out) / 2, "in": fan_in, "out": fan_out}[factor_type]
    sigma = math.sqrt(2 / (1 + slope**2) / factor)
    assert_normal(values, sigma, f"MSRAPrelu({factor_type}, {slope}), seed {SEED}")


@pytest.mark.parametrize("shape", [(8, 20), (20, 8), (10, 10), (6, 2, 3, 3)])
@pytest.mark.parametrize("rand_type", ["uniform", "normal"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_orthogonal(ctx, shape, rand_type, dtype):
    scale = 1.7
    values = _init(mx.init.Orthogonal(scale, rand_type), shape, ctx, dtype=dtype)
    assert values.shape == shape and values.dtype == dtype
    matrix = values.reshape(shape[0], -1).astype(np.float64) / scale
    rows, cols = matrix.shape
    # orthonormal rows when there are no more rows than columns, columns otherwise
    gram = matrix @ matrix.T if rows <= cols else matrix.T @ matrix
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(gram, np.eye(min(rows, cols)), atol=tol)


def test_orthogonal_default_scale(ctx):
    values = _init(mx.init.Orthogonal(), (5, 7), ctx).astype(np.float64)
    np.testing.assert_allclose(values @ values.T, 1.414**2 * np.eye(5), atol=1e-5)


RANDOM_INITS = [
    mx.init.Uniform(0.5),
    mx.init.Normal(0.5),
    mx.init.Xavier(),
    mx.init.Xavier("gaussian", "in", 2),
    mx.init.MSRAPrelu(),
    mx.init.Orthogonal(),
    mx.init.Orthogonal(rand_type="normal"),
]


@pytest.mark.parametrize("init", RANDOM_INITS, ids=repr)
def test_reproducible_under_seed(ctx, init):
    first = _init(init, (16, 8, 3), ctx, seed=7)
    again = _init(init, (16, 8, 3), ctx, seed=7)
    other = _init(init, (16, 8, 3), ctx, seed=8)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    # the stream goes on: a second draw after one seed differs from the first
    mx.random.seed(7)
    arr = mx.nd.zeros((16, 8, 3), ctx=ctx)
    init(InitDesc("w_weight"), arr)
    init(InitDesc("w_weight"), arr)
    assert not np.array_equal(first, arr.asnumpy())


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_fills_in_the_array_dtype_in_place(ctx, dtype):
    mx.random.seed(SEED)
    arr = mx.nd.zeros((100, 100), ctx=ctx, dtype=dtype)
    data = arr.data
    mx.init.Xavier()(InitDesc("w_weight"), arr)
    assert arr.data is data and arr.dtype == dtype
    what = f"Xavier in {dtype.__name__}, seed {SEED}"
    assert_uniform(arr.asnumpy(), math.sqrt(3 / 100), what, rtol=float(np.finfo(dtype).eps))
