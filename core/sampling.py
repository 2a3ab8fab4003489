"""What ``mx.nd.random`` and ``mx.sym.random`` share: their function names and a check.

Both follow MXNet's Python wrappers: number parameters run the
``_random_<distribution>`` operator, array (or Symbol) parameters the
``_sample_<distribution>`` one, and the parameters of one call must be all of
one kind.
"""

import math

__all__ = ["SAMPLER_FUNCTIONS", "same_kind", "zipfian"]

# the samplers of MXNet 1.9.1's mx.nd.random / mx.sym.random
SAMPLER_FUNCTIONS = (
    "uniform",
    "normal",
    "randn",
    "poisson",
    "exponential",
    "gamma",
    "multinomial",
    "negative_binomial",
    "generalized_negative_binomial",
    "shuffle",
    "randint",
    "uniform_like",
    "normal_like",
    "gamma_like",
    "exponential_like",
    "poisson_like",
    "negative_binomial_like",
    "generalized_negative_binomial_like",
)


def same_kind(params, kind, what):
    """Raise TypeError unless every parameter is a ``kind`` like the first (MXNet's message)."""
    for value in params[1:]:
        if not isinstance(value, kind):
            raise TypeError(
                f"Distribution parameters must all have the same type ({what}), but got "
                f"both {type(params[0])} and {type(value)}."
            )


def zipfian(uniform, true_classes, num_sampled, range_max):
    """``rand_zipfian`` of ``mx.nd.contrib`` and ``mx.sym.contrib`` alike (MXNet's formulas).

    ``uniform(high, n)`` draws float64 values in [0, high) as an NDArray or a
    Symbol; ``true_classes`` is of the same kind. Returns the samples (int64)
    and the expected counts of ``true_classes`` and of the samples (float64):
    P(class) = (log(class + 2) - log(class + 1)) / log(range_max + 1), times
    ``num_sampled``.
    """
    log_range = math.log(range_max + 1)
    # exp(u) - 1 is below range_max; the modulo keeps a rounding at the top inside
    sampled = (uniform(log_range, num_sampled).exp() - 1).astype("int64") % range_max

    def expected(classes):  # float64: no integer division
        classes = classes.astype("float64")
        return ((classes + 2.0) / (classes + 1.0)).log() / log_range * num_sampled

    return sampled, expected(true_classes), expected(sampled)
