"""Statistical checks of random generators: mean, variance and chi-square tests."""

import math

import numpy as np


def _upper_gamma_q(a, x):
    """Regularised upper incomplete gamma Q(a, x), by series below a+1, else continued fraction."""
    if x <= 0:
        return 1.0
    log_prefix = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        n = a
        while abs(term) > abs(total) * 1e-15:
            n += 1
            term *= x / n
            total += term
        return max(0.0, 1.0 - total * math.exp(log_prefix))
    # Lentz's method for the continued fraction of Q
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return math.exp(log_prefix) * h


def chi2_sf(statistic, dof):
    """P(chi-square with ``dof`` degrees of freedom > ``statistic``)."""
    return _upper_gamma_q(dof / 2.0, statistic / 2.0)


def _chisquare_p(observed, expected):
    """Pearson's chi-square p-value with len-1 degrees of freedom (as scipy.stats.chisquare)."""
    observed = np.asarray(observed, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    statistic = float(((observed - expected) ** 2 / expected).sum())
    return chi2_sf(statistic, len(observed) - 1)


def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """``nbuckets`` equal-probability intervals of a distribution from its inverse CDF."""
    assert nbuckets > 0
    probs = [1.0 / nbuckets for _ in range(nbuckets)]
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets)))
               for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000):
    """True when the sample mean lies within 3 standard errors of ``mu``."""
    sample_mean = np.array(generator(nsamples)).mean()
    bound = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - bound < sample_mean < mu + bound)


def var_check(generator, sigma, nsamples=1000000):
    """True when the unbiased sample variance lies within 3 standard errors of sigma**2."""
    sample_var = np.array(generator(nsamples)).var(ddof=1)
    bound = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - bound < sample_var < sigma ** 2 + bound)


def _bucket_counts(samples, buckets):
    if isinstance(buckets[0], (list, tuple)):
        edges = np.zeros(len(buckets) * 2, dtype=np.float32)
        for i, (low, high) in enumerate(buckets):
            assert low <= high
            if i < len(buckets) - 1:
                assert high <= buckets[i + 1][0]
            edges[2 * i], edges[2 * i + 1] = low, high
        # as MXNet: a sample's edge position // 2 is its bucket (a gap counts to the next)
        ids = np.searchsorted(edges, samples, side="right") // 2
        return np.array([(ids == i).sum() for i in range(len(buckets))])
    samples = np.array(samples)
    return np.array([(samples == b).sum() for b in buckets])


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Chi-square test of ``generator(nsamples)`` against bucket probabilities.

    ``buckets`` is a list of (low, high) intervals for continuous samples or of values for
    discrete ones. Returns (p-value, observed counts, expected counts).
    """
    assert isinstance(buckets, list)
    samples = generator(nsamples)
    assert len(probs) == len(buckets)
    expected = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    observed = _bucket_counts(samples, buckets)
    return _chisquare_p(observed, expected), observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5,
                     success_rate=0.2, alpha=0.05):
    """Raise AssertionError unless enough of ``nrepeat`` chi-square tests pass at ``alpha``."""
    results = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    p_values = [r[0] for r in results]
    if (np.array(p_values) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError(
            "Generator test fails, Chi-square p=%s, obs_freq=%s, expected_freq=%s."
            "\nbuckets=%s, probs=%s" % (str(p_values), str([r[1] for r in results]),
                                        str([r[2] for r in results]), str(buckets), str(probs)))
    return p_values
