"""Chi-square, mean and variance checks of random generators."""

import math

import numpy as np
import pytest

from rebind import test_utils as tu


@pytest.mark.parametrize("x", [0.1, 1.0, 3.7, 12.0, 40.0])
def test_chi2_sf_closed_forms(x):
    assert tu.chi2_sf(x, 2) == pytest.approx(math.exp(-x / 2), rel=1e-12)
    assert tu.chi2_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-10)
    assert tu.chi2_sf(x, 4) == pytest.approx(math.exp(-x / 2) * (1 + x / 2), rel=1e-10)


def test_chi_square_uniform_continuous():
    np.random.seed(0)
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: q, 5)
    assert buckets[1] == (0.2, 0.4) and probs == [0.2] * 5
    p, obs, exp = tu.chi_square_check(lambda n: np.random.uniform(size=n), buckets, probs,
                                      nsamples=20000)
    assert obs.sum() == 20000 and exp.tolist() == [4000] * 5
    assert p > 0.001
    # a skewed generator against the same buckets is rejected
    p_bad, _, _ = tu.chi_square_check(lambda n: np.random.uniform(size=n) ** 2, buckets, probs,
                                      nsamples=20000)
    assert p_bad < 1e-10


def test_chi_square_discrete_and_verify_generator():
    np.random.seed(1)
    gen = lambda n: np.random.randint(0, 3, size=n)  # noqa: E731
    p, obs, _ = tu.chi_square_check(gen, [0, 1, 2], [1 / 3] * 3, nsamples=9000)
    assert obs.sum() == 9000 and p > 0.001
    assert len(tu.verify_generator(gen, [0, 1, 2], [1 / 3] * 3, nsamples=3000, nrepeat=3)) == 3
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(gen, [0, 1, 2], [0.6, 0.2, 0.2], nsamples=3000, nrepeat=3)


def test_mean_and_var_checks():
    np.random.seed(2)
    normal = lambda n: np.random.normal(1.0, 2.0, size=n)  # noqa: E731
    assert tu.mean_check(normal, 1.0, 2.0, nsamples=100000)
    assert not tu.mean_check(normal, 1.5, 2.0, nsamples=100000)
    assert tu.var_check(normal, 2.0, nsamples=100000)
    assert not tu.var_check(normal, 2.5, nsamples=100000)
