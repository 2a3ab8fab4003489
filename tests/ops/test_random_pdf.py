"""The densities ``_random_pdf_*``: MXNet's recorded values and gradients, finite
differences, a NumPy reference, and shape inference."""

import math

import numpy as np
import pytest

from rebind.errors import ShapeError
from rebind.ops import OpContext
from tests.ops.harness import case_ids, check_numeric_gradient, infer, opdef, replay_golden

PDF_OPS = tuple(
    f"_random_pdf_{name}"
    for name in (
        "uniform",
        "normal",
        "gamma",
        "exponential",
        "poisson",
        "negative_binomial",
        "generalized_negative_binomial",
        "dirichlet",
    )
)


# MXNet's digamma takes the logarithm in single precision (cephes' ``logf``) even for
# float64, so its float64 gradients through digamma are good to about 1e-6 only
DIGAMMA_OPS = ("gamma", "negbin", "gennegbin", "dirichlet")


@pytest.mark.parametrize("case_id", case_ids(*PDF_OPS))
def test_golden(case_id, ctx):
    loose = case_id.endswith("_f64") and any(f"_{n}_" in case_id for n in DIGAMMA_OPS)
    replay_golden(case_id, ctx, tolerance=(1e-5, 1e-6) if loose else None)


def _run(ctx, op_name, attrs, inputs):
    op = opdef(op_name)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in inputs]
    outs, _ = op.forward(OpContext(False, ctx.backend, ctx.device_id), op.parse(attrs), arrays, [])
    return np.asarray(ctx.backend.to_host(outs[0]))


# -- a reference written with the math module, one element at a time -------------------


def _reference(name, x, *params):
    lg = math.lgamma
    if name == "normal":
        mu, sigma = params
        return -0.5 * ((x - mu) / sigma) ** 2 - math.log(sigma * math.sqrt(2 * math.pi))
    if name == "gamma":  # beta is a rate in MXNet's density
        a, b = params
        return a * math.log(b) + (a - 1) * math.log(x) - b * x - lg(a)
    if name == "poisson":
        (lam,) = params
        return x * math.log(lam) - lg(x + 1) - lam
    if name == "negative_binomial":
        k, p = params
        return lg(x + k) - lg(x + 1) - lg(k) + k * math.log(p) + x * math.log(1 - p)
    raise AssertionError(name)


@pytest.mark.parametrize(
    "name, sample, params",
    [
        ("normal", [[0.5, -1.0, 2.0]], [[0.3], [1.5]]),
        ("gamma", [[0.5, 1.0, 4.0]], [[2.5], [0.7]]),
        ("poisson", [[0.0, 3.0, 12.0]], [[4.5]]),
        ("negative_binomial", [[0.0, 2.0, 7.0]], [[3.5], [0.4]]),
    ],
)
def test_log_density_matches_a_scalar_reference(ctx, name, sample, params):
    sample = np.array(sample)
    params = [np.array(p).reshape(1) for p in params]
    got = _run(ctx, f"_random_pdf_{name}", {"is_log": "True"}, [sample, *params])
    want = [[_reference(name, x, *(float(p[0]) for p in params)) for x in sample[0]]]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    density = _run(ctx, f"_random_pdf_{name}", {}, [sample, *params])
    np.testing.assert_allclose(density, np.exp(want), rtol=1e-12)


def test_dirichlet_density_of_the_documented_example(ctx):
    # MXNet's documented example: alpha = [0.1, 0.4, 0.9]
    sample = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], dtype=np.float32)
    got = _run(ctx, "_random_pdf_dirichlet", {}, [sample, np.array([0.1, 0.4, 0.9], np.float32)])
    total = math.lgamma(1.4)
    expected = [
        math.exp(
            sum(
                (a - 1) * math.log(x) - math.lgamma(a)
                for a, x in zip((0.1, 0.4, 0.9), row, strict=True)
            )
            + total
        )
        for row in sample.astype(float)
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def _positive(rng, shape, low=0.5, high=2.0):
    return rng.uniform(low, high, shape)


GRADIENT_INPUTS = {
    "uniform": lambda r: [r.uniform(-1, 1, (2, 3)), r.uniform(-3, -2, 2), r.uniform(2, 3, 2)],
    "normal": lambda r: [r.standard_normal((2, 3)), r.standard_normal(2), _positive(r, 2)],
    "gamma": lambda r: [_positive(r, (2, 2, 2)), _positive(r, (2, 2)), _positive(r, (2, 2))],
    "exponential": lambda r: [_positive(r, (3, 2)), _positive(r, 3)],
    "poisson": lambda r: [r.integers(0, 6, (2, 3)).astype(float), _positive(r, 2, 1, 4)],
    "negative_binomial": lambda r: [
        r.integers(0, 6, (2, 3)).astype(float),
        _positive(r, 2, 1, 4),
        r.uniform(0.3, 0.7, 2),
    ],
    "generalized_negative_binomial": lambda r: [
        r.integers(0, 6, (2, 3)).astype(float),
        _positive(r, 2, 1, 3),
        r.uniform(0.2, 1.0, 2),
    ],
    "dirichlet": lambda r: [r.dirichlet([1.0, 2.0, 3.0], (2, 2)), _positive(r, (2, 3))],
}
# MXNet's gradient with respect to a discrete (or uniform) sample is zero, not the derivative
ZERO_SAMPLE_GRADIENT = {"uniform", "poisson", "negative_binomial", "generalized_negative_binomial"}


@pytest.mark.parametrize("is_log", ["False", "True"])
@pytest.mark.parametrize("name", sorted(GRADIENT_INPUTS))
def test_numeric_gradient(ctx, name, is_log):
    rng = np.random.default_rng(len(name))
    inputs = GRADIENT_INPUTS[name](rng)
    first = 1 if name in ZERO_SAMPLE_GRADIENT else 0
    grad_args = list(range(first, len(inputs)))
    check_numeric_gradient(
        f"_random_pdf_{name}", {"is_log": is_log}, inputs, ctx, grad_args=grad_args, rtol=1e-5
    )


def test_discrete_sample_gradient_is_zero(ctx):
    op = opdef("_random_pdf_poisson")
    params = op.parse({})
    op_ctx = OpContext(True, ctx.backend, ctx.device_id)
    sample, lam = np.array([[1.0, 2.0]], np.float32), np.array([2.0], np.float32)
    arrays = [ctx.backend.asarray(a, a.dtype, ctx.device_id) for a in (sample, lam)]
    outs, saved = op.forward(op_ctx, params, arrays, [])
    grads = op.backward(op_ctx, params, saved, [ctx.backend.xp.ones_like(outs[0])], [True, True])
    np.testing.assert_array_equal(ctx.backend.to_host(grads[0]), np.zeros((1, 2)))


# -- shapes ----------------------------------------------------------------------------------


def test_shapes():
    assert infer("_random_pdf_normal", {}, [(2, 3, 4), (2,), (2,)])[1] == [(2, 3, 4)]
    assert infer("_random_pdf_normal", {}, [(2, 3), (2, 3), (2, 3)])[1] == [(2, 3)]
    assert infer("_random_pdf_dirichlet", {}, [(2, 5, 3), (2, 3)])[1] == [(2, 5)]
    assert infer("_random_pdf_dirichlet", {}, [(3,), (3,)])[1] == [(1,)]
    # nothing is inferred until every input is known
    assert infer("_random_pdf_exponential", {}, [(2, 3), None])[1] == [None]


@pytest.mark.parametrize(
    "op, shapes, argument",
    [
        ("_random_pdf_normal", [(2, 3), (3,), (3,)], "mu"),
        ("_random_pdf_normal", [(2, 3), (2,), (3,)], "sigma"),
        ("_random_pdf_exponential", [(2,), (2, 3)], "lam"),
        ("_random_pdf_dirichlet", [(2, 4), (2, 3)], "alpha"),
    ],
)
def test_bad_shapes_name_the_argument(op, shapes, argument):
    with pytest.raises(ShapeError, match=f"'{argument}'"):
        infer(op, {}, shapes)
