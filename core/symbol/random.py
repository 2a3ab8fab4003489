"""``mx.sym.random``: MXNet's symbolic samplers, which rebind does not have yet (issue #13).

Each sampler composes one of MXNet's ``_random_*``/``_sample_*`` operators;
they arrive with those operators. Until then, asking for one raises
NotImplementedError that says so.
"""

from .symbol import Symbol

__all__ = ["Symbol"]

# MXNet 1.9.1's mx.sym.random samplers (tests/namespaces/mxnet_operator_names.json)
SAMPLERS = frozenset(
    {
        "exponential",
        "exponential_like",
        "gamma",
        "gamma_like",
        "generalized_negative_binomial",
        "generalized_negative_binomial_like",
        "multinomial",
        "negative_binomial",
        "negative_binomial_like",
        "normal",
        "normal_like",
        "poisson",
        "poisson_like",
        "randint",
        "shuffle",
        "uniform",
        "uniform_like",
    }
)


def _refuse(name):
    def sampler(*args, **kwargs):
        raise NotImplementedError(
            f"mx.sym.random.{name}: the symbolic samplers arrive with the random sampling "
            "operators (issue #13); mx.nd.random draws arrays now"
        )

    sampler.__name__ = sampler.__qualname__ = name
    sampler.__doc__ = f"MXNet's symbolic ``{name}`` sampler; not in rebind yet (issue #13)."
    return sampler


def __getattr__(name):
    if name in SAMPLERS:
        return _refuse(name)
    raise AttributeError(f"module 'rebind.symbol.random' has no attribute {name!r}")
