"""The samplers: ``_random_*``, ``_random_*_like``, ``_sample_*``, ``_shuffle``.

Their draws cannot match MXNet's, so MXNet's recorded cases check shapes and
dtypes, and the distributions are checked by moments and chi-square tests.
"""

import math

import numpy as np
import pytest

import rebind as mx
from rebind.errors import DTypeMismatchError, ShapeError
from rebind.ops import OpContext
from rebind.ops.params import ParamError
from rebind.test_utils import mean_check, var_check, verify_generator
from tests.ops.harness import case_ids, golden_cases, infer, opdef, replay_golden

DISTRIBUTIONS = (
    "uniform",
    "normal",
    "gamma",
    "exponential",
    "poisson",
    "negative_binomial",
    "generalized_negative_binomial",
)
SAMPLER_OPS = (
    *(f"_random_{d}" for d in DISTRIBUTIONS),
    *(f"_random_{d}_like" for d in DISTRIBUTIONS),
    *(f"_sample_{d}" for d in DISTRIBUTIONS),
    "_random_randint",
    "_sample_multinomial",
    "_shuffle",
)


def _draw(ctx, op_name, attrs=None, inputs=(), shape=None):
    """Host arrays of one forward run of ``op_name``."""
    op = opdef(op_name)
    params = op.parse(attrs or {})
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    _, out_shapes, _ = op.infer_shapes(params, [a.shape for a in arrays])
    op_ctx = OpContext(True, ctx.backend, ctx.device_id, tuple(out_shapes))
    outs, _ = op.forward(op_ctx, params, arrays, [])
    return [np.asarray(ctx.backend.to_host(o)) for o in outs]


@pytest.mark.parametrize("case_id", case_ids(*SAMPLER_OPS))
def test_golden_shapes_and_dtypes(case_id, ctx):
    replay_golden(case_id, ctx, skip=("train", "infer", "backward"))  # inference only
    case = golden_cases()[case_id]
    with np.load(mx_golden(case["file"])) as npz:
        inputs = [npz[f"arg.{name}"] for name in case["arguments"]]
    outs = _draw(ctx, case["op"], case["attrs"], inputs)
    assert [list(o.shape) for o in outs] == case["out_shapes"]
    assert [o.dtype.name for o in outs] == case["out_dtypes"]


def mx_golden(relative):
    from tests.conftest import GOLDEN

    return GOLDEN / relative


# -- distributions -------------------------------------------------------------------------


def _generator(ctx, op_name, **attrs):
    def generate(n):
        return _draw(ctx, op_name, {**attrs, "shape": (n,), "dtype": "float64"})[0]

    return generate


def _pmf_buckets(pmf, count):
    values = list(range(count))
    return values, [pmf(k) for k in values]


def _negative_binomial_pmf(k, p):
    # MXNet: failures before the k-th success of probability p
    return lambda x: math.exp(
        math.lgamma(x + k)
        - math.lgamma(x + 1)
        - math.lgamma(k)
        + k * math.log(p)
        + x * math.log(1 - p)
    )


def test_uniform_chi_square(ctx):
    mx.random.seed(1)
    buckets = [(0.5 + i * 0.25, 0.5 + (i + 1) * 0.25) for i in range(8)]
    generate = _generator(ctx, "_random_uniform", low=0.5, high=2.5)
    verify_generator(generate, buckets, [1 / 8] * 8, nsamples=20000, nrepeat=3)


def test_exponential_chi_square(ctx):
    mx.random.seed(2)
    lam = 2.0
    edges = [-math.log(1 - q / 10) / lam for q in range(10)] + [1e9]
    buckets = list(zip(edges[:-1], edges[1:], strict=True))
    generate = _generator(ctx, "_random_exponential", lam=lam)
    verify_generator(generate, buckets, [0.1] * 10, nsamples=20000, nrepeat=3)


@pytest.mark.parametrize(
    "op_name, attrs, pmf",
    [
        (
            "_random_poisson",
            {"lam": 4.0},
            lambda x: math.exp(x * math.log(4) - 4 - math.lgamma(x + 1)),
        ),
        ("_random_negative_binomial", {"k": 3, "p": 0.6}, _negative_binomial_pmf(3, 0.6)),
        # mean mu, dispersion alpha: k = 1 / alpha, p = 1 / (1 + mu alpha)
        (
            "_random_generalized_negative_binomial",
            {"mu": 2.0, "alpha": 0.5},
            _negative_binomial_pmf(2.0, 0.5),
        ),
    ],
)
def test_discrete_chi_square(ctx, op_name, attrs, pmf):
    mx.random.seed(3)
    values, probs = _pmf_buckets(pmf, 12)
    verify_generator(_generator(ctx, op_name, **attrs), values, probs, nsamples=20000, nrepeat=3)


@pytest.mark.parametrize(
    "op_name, attrs, mean, std",
    [
        ("_random_normal", {"loc": 1.5, "scale": 2.0}, 1.5, 2.0),
        ("_random_gamma", {"alpha": 2.5, "beta": 0.8}, 2.0, math.sqrt(2.5) * 0.8),
        ("_random_gamma", {"alpha": 0.5, "beta": 2.0}, 1.0, math.sqrt(0.5) * 2.0),
        ("_random_generalized_negative_binomial", {"mu": 3.0, "alpha": 0.0}, 3.0, math.sqrt(3)),
    ],
)
def test_moments(ctx, op_name, attrs, mean, std):
    mx.random.seed(4)
    generate = _generator(ctx, op_name, **attrs)
    assert mean_check(generate, mean, std, nsamples=50000)
    assert var_check(generate, std, nsamples=50000)


@pytest.mark.parametrize(
    "op_name, params, mean, std",
    [
        ("_sample_uniform", [[0.0, 10.0], [1.0, 14.0]], [0.5, 12.0], [12**-0.5, 4 * 12**-0.5]),
        ("_sample_normal", [[0.0, 10.0], [1.0, 2.0]], [0.0, 10.0], [1.0, 2.0]),
        ("_sample_gamma", [[1.0, 4.0], [2.0, 0.5]], [2.0, 2.0], [2.0, 1.0]),
        ("_sample_exponential", [[1.0, 4.0]], [1.0, 0.25], [1.0, 0.25]),
        ("_sample_poisson", [[1.0, 9.0]], [1.0, 9.0], [1.0, 3.0]),
        (
            "_sample_negative_binomial",
            [[2.0, 5.0], [0.5, 0.8]],
            [2.0, 1.25],
            [2.0, 1.25**0.5 / 0.8**0.5],
        ),
        (
            "_sample_generalized_negative_binomial",
            [[2.0, 3.0], [0.5, 0.0]],
            [2.0, 3.0],
            [2.0**0.5 * 2**0.5, 3**0.5],
        ),
    ],
)
def test_one_distribution_per_element(ctx, op_name, params, mean, std):
    mx.random.seed(5)
    inputs = [np.array(p, dtype=np.float32) for p in params]
    n = 40000
    (out,) = _draw(ctx, op_name, {"shape": (n,)}, inputs)
    assert out.shape == (2, n) and out.dtype == np.float32
    for row, mu, sigma in zip(out.astype(np.float64), mean, std, strict=True):
        assert abs(row.mean() - mu) < 5 * sigma / math.sqrt(n), (row.mean(), mu)
        assert abs(row.std() - sigma) < 0.05 * sigma, (row.std(), sigma)


def test_randint_covers_the_range(ctx):
    mx.random.seed(6)
    (out,) = _draw(ctx, "_random_randint", {"low": -2, "high": 3, "shape": (5000,)})
    assert out.dtype == np.int32
    verify_generator(
        lambda n: _draw(ctx, "_random_randint", {"low": -2, "high": 3, "shape": (n,)})[0],
        [-2, -1, 0, 1, 2],
        [0.2] * 5,
        nsamples=10000,
        nrepeat=3,
    )


# -- multinomial --------------------------------------------------------------------------


def test_multinomial_frequencies_and_log_probabilities(ctx):
    mx.random.seed(7)
    probs = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.0, 0.25, 0.25]], dtype=np.float32)
    index, log_prob = _draw(
        ctx, "_sample_multinomial", {"shape": (20000,), "get_prob": True}, [probs]
    )
    assert index.shape == (2, 20000) and index.dtype == np.int32
    for row, p in zip(index, probs, strict=True):
        frequencies = np.bincount(row, minlength=4) / row.size
        np.testing.assert_allclose(frequencies, p, atol=0.015)
    np.testing.assert_allclose(log_prob, np.log(np.take_along_axis(probs, index, 1)), rtol=1e-6)


def test_multinomial_gradient_is_one_over_p_where_drawn(ctx):
    mx.random.seed(8)
    probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    op = opdef("_sample_multinomial")
    params = op.parse({"shape": (5,), "get_prob": "True"})
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    outs, saved = op.forward(op_ctx, params, [ctx.backend.asarray(probs, "float64", 0)], [])
    index = np.asarray(ctx.backend.to_host(outs[0]))
    head = np.random.default_rng(0).standard_normal((2, 5))
    heads = [ctx.backend.xp.zeros_like(outs[0]), ctx.backend.asarray(head, "float64", 0)]
    (grad,) = op.backward(op_ctx, params, saved, heads, [True])
    expected = np.zeros_like(probs)
    for row in range(2):
        for j in range(5):
            expected[row, index[row, j]] += head[row, j] / probs[row, index[row, j]]
    np.testing.assert_allclose(ctx.backend.to_host(grad), expected, rtol=1e-12)


def test_multinomial_shapes():
    assert infer("_sample_multinomial", {}, [(4,)])[1] == [(1,)]
    assert infer("_sample_multinomial", {"shape": (2, 3)}, [(4,)])[1] == [(2, 3)]
    assert infer("_sample_multinomial", {"get_prob": True}, [(5, 4)])[1] == [(5,), (5,)]


# -- unique zipfian ---------------------------------------------------------------------------


def test_unique_zipfian(ctx):
    mx.random.seed(9)
    samples, tries = _draw(ctx, "_sample_unique_zipfian", {"range_max": 50, "shape": (3, 20)})
    assert samples.shape == (3, 20) and tries.shape == (3,) and samples.dtype == np.int64
    for row, count in zip(samples, tries, strict=True):
        assert len(set(row.tolist())) == 20 and row.min() >= 0 and row.max() < 50
        assert count >= 20
    # small classes are the likely ones: P(class) ~ log((c + 2) / (c + 1)) / log(range_max + 1)
    many, _ = _draw(ctx, "_sample_unique_zipfian", {"range_max": 1000, "shape": (400, 1)})
    assert abs(np.mean(many == 0) - math.log(2) / math.log(1001)) < 0.05


def test_unique_zipfian_needs_enough_classes(ctx):
    with pytest.raises(ParamError, match="cannot exceed"):
        _draw(ctx, "_sample_unique_zipfian", {"range_max": 3, "shape": (1, 4)})


# -- seeds, parameters, inference -------------------------------------------------------------


@pytest.mark.parametrize(
    "op_name, attrs",
    [(f"_random_{d}", {"shape": (6,)}) for d in DISTRIBUTIONS]
    + [("_random_randint", {"low": 0, "high": 100, "shape": (6,)})],
)
def test_seed_reproduces_draws(ctx, op_name, attrs):
    mx.random.seed(42)
    first = _draw(ctx, op_name, attrs)[0]
    mx.random.seed(42)
    np.testing.assert_array_equal(_draw(ctx, op_name, attrs)[0], first)


@pytest.mark.parametrize(
    "op_name, attrs, message",
    [
        ("_random_uniform", {"low": 2, "high": 1}, "low must be less or equal to high"),
        ("_random_normal", {"scale": 0}, "scale parameter in gaussian has to be positive"),
        ("_random_gamma", {"beta": -1}, "beta parameter in gamma distribution"),
        ("_random_exponential", {"lam": 0}, "lambda parameter in exponential"),
        ("_random_poisson", {"lam": -1}, "lambda parameter in poisson"),
        ("_random_negative_binomial", {"k": -1}, "k parameter in negative binomial"),
    ],
)
def test_bad_parameters(ctx, op_name, attrs, message):
    with pytest.raises(ParamError, match=message):
        _draw(ctx, op_name, {**attrs, "shape": (2,)})


def test_creator_shapes_and_types():
    assert infer("_random_uniform", {"shape": (2, 3)}, [])[1] == [(2, 3)]
    assert infer("_random_normal", {"shape": (0, 3)}, [], [(4, 3)])[1] == [(4, 3)]
    op = opdef("_random_gamma")
    assert op.infer_types(op.parse({}), [])[1] == ["float32"]
    assert op.infer_types(op.parse({"dtype": "float16"}), [])[1] == ["float16"]
    assert op.infer_types(op.parse({}), [], ["float64"])[1] == ["float64"]
    with pytest.raises(DTypeMismatchError):
        op.infer_types(op.parse({"dtype": "float16"}), [], ["float64"])
    randint = opdef("_random_randint")
    assert randint.infer_types(randint.parse({"low": 0, "high": 2}), [])[1] == ["int32"]


def test_per_element_shapes():
    assert infer("_sample_normal", {"shape": (3,)}, [(2, 2), (2, 2)])[1] == [(2, 2, 3)]
    assert infer("_sample_poisson", {}, [(4,)])[1] == [(4,)]
    # the parameters' shape learned from the output
    in_shapes, _, _ = infer("_sample_gamma", {"shape": (5,)}, [None, None], [(2, 5)])
    assert in_shapes == [(2,), (2,)]


def test_per_element_shape_mismatch_names_the_argument():
    with pytest.raises(ShapeError, match="'sigma'"):
        infer("_sample_normal", {}, [(2,), (3,)])


def test_like_keeps_shape_and_dtype(ctx):
    data = np.zeros((3, 2), dtype=np.float64)
    (out,) = _draw(ctx, "_random_exponential_like", {"lam": 2}, [data])
    assert out.shape == (3, 2) and out.dtype == np.float64 and (out > 0).all()


def test_shuffle_permutes_the_first_axis(ctx):
    mx.random.seed(10)
    data = np.arange(24, dtype=np.float32).reshape(6, 4)
    (out,) = _draw(ctx, "_shuffle", {}, [data])
    assert sorted(out[:, 0].tolist()) == data[:, 0].tolist()
    np.testing.assert_array_equal(out, data[(out[:, 0] // 4).astype(int)])
