"""Statistical checks of random generators: mean, variance and chi-square tests.

As in MXNet 1.9.1's ``test_utils``, a generator is any ``generator(n)`` that
returns ``n`` samples. MXNet computes the chi-square p-value with SciPy; rebind
computes it itself (the regularized upper incomplete gamma function), so these
checks need no SciPy and accept MXNet's expected frequencies, which are
truncated to integers and so need not sum to the sample count.
"""

import math

import numpy as np

__all__ = [
    "chi_square_check",
    "gen_buckets_probs_with_ppf",
    "mean_check",
    "var_check",
    "verify_generator",
]


def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """``nbuckets`` equally likely buckets from a quantile function, and their probabilities."""
    if nbuckets <= 0:
        raise ValueError(f"gen_buckets_probs_with_ppf: nbuckets must be positive, got {nbuckets}")
    probs = [1.0 / nbuckets] * nbuckets
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets))) for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the sample mean lies within ``mu +- 3 sigma / sqrt(n)``."""
    mean = np.array(generator(nsamples)).mean()
    bound = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - bound < mean < mu + bound)


def var_check(generator, sigma, nsamples=1000000):
    """Whether the sample variance lies within ``sigma^2 +- 3 sqrt(2 sigma^4 / (n - 1))``."""
    variance = np.array(generator(nsamples)).var(ddof=1)
    bound = 3 * np.sqrt(2 * sigma**4 / (nsamples - 1))
    return bool(sigma**2 - bound < variance < sigma**2 + bound)


def _upper_gamma_regularized(a, x):
    """Q(a, x) = Gamma(a, x) / Gamma(a), by its series below a + 1, else a continued fraction."""
    if x <= 0:
        return 1.0
    log_prefix = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        for n in range(1, 10000):
            term *= x / (a + n)
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_prefix))
    # Lentz's method for the continued fraction of Gamma(a, x)
    tiny = 1e-300
    b = x + 1.0 - a
    c, d = 1.0 / tiny, 1.0 / b
    fraction = d
    for n in range(1, 10000):
        an = -n * (n - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        step = d * c
        fraction *= step
        if abs(step - 1.0) < 1e-15:
            break
    return math.exp(log_prefix) * fraction


def chi_square_pvalue(observed, expected):
    """Pearson's chi-square p-value, with ``len(observed) - 1`` degrees of freedom."""
    observed = np.asarray(observed, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    statistic = float(((observed - expected) ** 2 / expected).sum())
    return _upper_gamma_regularized((len(observed) - 1) / 2.0, statistic / 2.0)


def _bucket_counts(samples, buckets):
    samples = np.asarray(samples)
    if isinstance(buckets[0], (list, tuple)):
        edges = np.zeros(len(buckets) * 2, dtype=np.float32)
        for i, (low, high) in enumerate(buckets):
            if low > high or (i + 1 < len(buckets) and high > buckets[i + 1][0]):
                raise ValueError(
                    "chi_square_check: buckets must be ascending, non-overlapping ranges; "
                    f"bucket {i} is {buckets[i]!r}"
                )
            edges[2 * i], edges[2 * i + 1] = low, high
        ids = np.searchsorted(edges, samples, side="right") // 2
        return np.array([(ids == i).sum() for i in range(len(buckets))], dtype=np.int64)
    return np.array([(samples == value).sum() for value in buckets], dtype=np.int64)


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Chi-square test of ``generator`` against bucket probabilities.

    ``buckets`` holds ``(low, high)`` ranges for a continuous distribution, or
    the possible values of a discrete one. Returns ``(p, observed, expected)``;
    a p-value above 0.05 is the usual pass.
    """
    if not isinstance(buckets, list):
        raise TypeError(f"chi_square_check: buckets must be a list, got {type(buckets).__name__}")
    if len(probs) != len(buckets):
        raise ValueError(f"chi_square_check: {len(probs)} probabilities for {len(buckets)} buckets")
    observed = _bucket_counts(generator(nsamples), buckets)
    expected = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    return chi_square_pvalue(observed, expected), observed, expected


def verify_generator(
    generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2, alpha=0.05
):
    """Repeat ``chi_square_check``; fail unless at least ``success_rate`` of runs have p > alpha."""
    results = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    pvalues = [p for p, _, _ in results]
    if (np.array(pvalues) > alpha).sum() < nrepeat * success_rate:
        observed = [list(o) for _, o, _ in results]
        expected = [list(e) for _, _, e in results]
        raise AssertionError(
            f"Generator test fails, Chi-square p={pvalues}, obs_freq={observed}, "
            f"expected_freq={expected}.\nbuckets={buckets}, probs={probs}"
        )
    return pvalues
