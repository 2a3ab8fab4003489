"""What ``mx.nd.random`` and ``mx.sym.random`` share: their function names and a check.

Both follow MXNet's Python wrappers: number parameters run the
``_random_<distribution>`` operator, array (or Symbol) parameters the
``_sample_<distribution>`` one, and the parameters of one call must be all of
one kind.
"""

__all__ = ["SAMPLER_FUNCTIONS", "same_kind"]

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
