"""Checks that samples fit a distribution, with tolerances derived from the sample size.

Each statistic is compared with its expectation within ``SIGMAS`` standard
errors: the mean (standard error sigma / sqrt(n)) and the sample variance
(standard error sqrt((mu4 - sigma**4) / n)). Bounds are exact.
"""

import math

import numpy as np

SIGMAS = 6.0


def _check_moments(values, variance, fourth_moment, what):
    values = np.asarray(values, dtype=np.float64).ravel()
    n = values.size
    mean_error = SIGMAS * math.sqrt(variance / n)
    assert abs(values.mean()) <= mean_error, (
        f"{what}: mean {values.mean():.5g} is more than {SIGMAS} standard errors "
        f"({mean_error:.3g}) from 0 over {n} samples"
    )
    var_error = SIGMAS * math.sqrt((fourth_moment - variance**2) / n)
    sample_var = float(np.mean(values**2))  # the mean is known to be 0
    assert abs(sample_var - variance) <= var_error, (
        f"{what}: variance {sample_var:.5g}, expected {variance:.5g} +- {var_error:.3g} "
        f"over {n} samples"
    )


def assert_uniform(values, bound, what="samples", rtol=1e-6):
    """``values`` look drawn from U(-bound, bound): inside the bounds, with the right moments.

    ``rtol`` allows for rounding to the array's dtype at the bounds.
    """
    values = np.asarray(values, dtype=np.float64)
    assert np.abs(values).max() <= bound * (1 + rtol), (
        f"{what}: max |value| {np.abs(values).max():.6g} exceeds the bound {bound:.6g}"
    )
    # the largest |value| of n uniform draws falls below (1 - t) * bound with probability
    # (1 - t)**n; t is chosen so that this is one in a million
    slack = 1 - 1e-6 ** (1 / values.size)
    assert np.abs(values).max() >= bound * (1 - slack), (
        f"{what}: max |value| {np.abs(values).max():.6g} is too far below the bound {bound:.6g}"
    )
    _check_moments(values, bound**2 / 3, bound**4 / 5, what)


def assert_normal(values, sigma, what="samples"):
    """``values`` look drawn from N(0, sigma**2): mean and variance (fourth moment 3 sigma**4)."""
    _check_moments(values, sigma**2, 3 * sigma**4, what)
