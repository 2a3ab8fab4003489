"""mx.test_utils' statistical checks accept right generators and reject wrong ones."""

import math

import numpy as np
import pytest

from rebind import test_utils as tu
from rebind.test_utils.distributions import chi_square_pvalue


def _normal_ppf(p):
    """The standard normal quantile by bisection on erf (independent of the code under test)."""
    if p <= 0:
        return -np.inf
    if p >= 1:
        return np.inf
    low, high = -40.0, 40.0
    for _ in range(200):
        mid = (low + high) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2


@pytest.mark.parametrize(
    "statistic, dof, expected",
    # chi-square survival values from published tables (upper-tail probabilities)
    [(3.841458820694124, 1, 0.05), (9.487729036781154, 4, 0.05), (23.20925115895999, 10, 0.01)],
)
def test_pvalue_matches_chi_square_tables(statistic, dof, expected):
    # observed/expected chosen so that Pearson's statistic equals `statistic`
    expected_counts = np.full(dof + 1, 100.0)
    observed = expected_counts.copy()
    delta = math.sqrt(statistic * 100.0 / 2)
    observed[0] += delta
    observed[1] -= delta
    assert chi_square_pvalue(observed, expected_counts) == pytest.approx(expected, rel=1e-9)


def test_continuous_generator_passes_and_a_wrong_one_fails():
    np.random.seed(11)
    buckets, probs = tu.gen_buckets_probs_with_ppf(_normal_ppf, 5)
    good = lambda n: np.random.normal(0, 1.0, size=n)  # noqa: E731
    bad = lambda n: np.random.normal(0.2, 1.0, size=n)  # noqa: E731
    p, observed, expected = tu.chi_square_check(good, buckets, probs, nsamples=50000)
    assert p > 1e-3 and observed.sum() == 50000 and list(expected) == [10000] * 5
    assert tu.chi_square_check(bad, buckets, probs, nsamples=50000)[0] < 1e-6
    assert len(tu.verify_generator(good, buckets, probs, nsamples=20000, nrepeat=3)) == 3
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(bad, buckets, probs, nsamples=50000, nrepeat=3)


def test_discrete_generator_buckets_are_values():
    np.random.seed(5)
    values, probs = [0, 1, 2, 3], [0.1, 0.2, 0.3, 0.4]
    draw = lambda n: np.random.choice(values, size=n, p=probs)  # noqa: E731
    assert tu.chi_square_check(draw, values, probs, nsamples=40000)[0] > 1e-3
    uniform = lambda n: np.random.randint(0, 4, size=n)  # noqa: E731
    assert tu.chi_square_check(uniform, values, probs, nsamples=40000)[0] < 1e-6


def test_bucket_checks():
    with pytest.raises(ValueError, match="bucket 0"):
        tu.chi_square_check(np.random.rand, [(0.5, 0.2), (0.6, 1.0)], [0.5, 0.5], 10)
    with pytest.raises(ValueError, match="2 probabilities for 1 buckets"):
        tu.chi_square_check(np.random.rand, [(0.0, 1.0)], [0.5, 0.5], 10)


def test_mean_and_variance_checks():
    np.random.seed(2)
    normal = lambda n: np.random.normal(1.0, 2.0, size=n)  # noqa: E731
    assert tu.mean_check(normal, 1.0, 2.0, nsamples=100000)
    assert not tu.mean_check(normal, 1.1, 2.0, nsamples=100000)
    assert tu.var_check(normal, 2.0, nsamples=100000)
    assert not tu.var_check(normal, 2.2, nsamples=100000)
