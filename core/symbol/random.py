"""``mx.sym.random``: symbols that draw samples when the graph runs.

As MXNet's ``python/mxnet/symbol/random.py``: number parameters compose the
``_random_<distribution>`` operator, Symbol parameters the
``_sample_<distribution>`` operator (one distribution per element). The
attributes are written as given (``shape=3`` stays ``"3"``), so the JSON is
MXNet's.
"""

import numbers

from ..sampling import SAMPLER_FUNCTIONS, same_kind
from .compose import create
from .symbol import Symbol

__all__ = ["Symbol", *SAMPLER_FUNCTIONS]


def _compose(op_name, args, kwargs):
    return create(op_name, op_name, tuple(args), kwargs)


def _helper(random_op, sample_op, params, shape, dtype, kwargs):
    keywords = dict(kwargs)
    if shape is not None:
        keywords["shape"] = shape
    if dtype is not None:
        keywords["dtype"] = dtype
    if isinstance(params[0], Symbol):
        same_kind(params, Symbol, "Symbol")
        if sample_op is None:
            raise TypeError(
                f"{random_op}: parameters must be numbers; there is no sampler that takes "
                "Symbol parameters (as in MXNet)"
            )
        return _compose(sample_op, params, keywords)
    if isinstance(params[0], numbers.Number):
        same_kind(params, numbers.Number, "numbers")
        return _compose(random_op, params, keywords)
    raise ValueError(
        f"Distribution parameters must be either Symbol or numbers, but got {type(params[0])}."
    )


def uniform(low=0, high=1, shape=None, dtype=None, **kwargs):
    """Samples from U[low, high)."""
    return _helper("_random_uniform", "_sample_uniform", [low, high], shape, dtype, kwargs)


def normal(loc=0, scale=1, shape=None, dtype=None, **kwargs):
    """Samples from N(loc, scale**2)."""
    return _helper("_random_normal", "_sample_normal", [loc, scale], shape, dtype, kwargs)


def randn(*shape, **kwargs):
    """Normal samples of the shape given positionally (``randn(2, 3)``)."""
    loc, scale, dtype = kwargs.pop("loc", 0), kwargs.pop("scale", 1), kwargs.pop("dtype", None)
    return normal(loc, scale, shape, dtype, **kwargs)


def poisson(lam=1, shape=None, dtype=None, **kwargs):
    """Poisson samples of rate ``lam``, as floats."""
    return _helper("_random_poisson", "_sample_poisson", [lam], shape, dtype, kwargs)


def exponential(scale=1, shape=None, dtype=None, **kwargs):
    """Exponential samples of mean ``scale`` (rate ``1 / scale``)."""
    rate = 1.0 / scale
    return _helper("_random_exponential", "_sample_exponential", [rate], shape, dtype, kwargs)


def gamma(alpha=1, beta=1, shape=None, dtype=None, **kwargs):
    """Gamma samples of shape ``alpha`` and scale ``beta``."""
    return _helper("_random_gamma", "_sample_gamma", [alpha, beta], shape, dtype, kwargs)


def negative_binomial(k=1, p=1, shape=None, dtype=None, **kwargs):
    """Failures before the ``k``-th success, ``p`` the success probability, as floats."""
    return _helper(
        "_random_negative_binomial", "_sample_negative_binomial", [k, p], shape, dtype, kwargs
    )


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, **kwargs):
    """Negative binomial samples of mean ``mu`` and dispersion ``alpha``, as floats."""
    return _helper(
        "_random_generalized_negative_binomial",
        "_sample_generalized_negative_binomial",
        [mu, alpha],
        shape,
        dtype,
        kwargs,
    )


def multinomial(data, shape=None, get_prob=True, dtype="int32", **kwargs):
    """Category indices drawn from ``data``'s last axis, and (by default, as MXNet's
    symbolic version) their log-probabilities."""
    keywords = {"get_prob": get_prob, "dtype": dtype, **kwargs}
    if shape is not None:
        keywords["shape"] = shape
    return _compose("_sample_multinomial", [data], keywords)


def shuffle(data, **kwargs):
    """``data`` with its first axis randomly permuted."""
    return _compose("_shuffle", [data], kwargs)


def randint(low, high, shape=None, dtype=None, **kwargs):
    """Integers drawn uniformly from [low, high)."""
    return _helper("_random_randint", None, [low, high], shape, dtype, kwargs)


def _like(op_name, doc):
    short = op_name[len("_random_") :]

    def sampler(data=None, **kwargs):
        args = [] if data is None else [data]
        return create(op_name, short, tuple(args), kwargs)

    sampler.__name__ = sampler.__qualname__ = short
    sampler.__doc__ = doc
    return sampler


uniform_like = _like("_random_uniform_like", "Uniform samples shaped like ``data``.")
normal_like = _like("_random_normal_like", "Normal samples shaped like ``data``.")
gamma_like = _like("_random_gamma_like", "Gamma samples shaped like ``data``.")
exponential_like = _like("_random_exponential_like", "Exponential samples shaped like ``data``.")
poisson_like = _like("_random_poisson_like", "Poisson samples shaped like ``data``.")
negative_binomial_like = _like(
    "_random_negative_binomial_like", "Negative binomial samples shaped like ``data``."
)
generalized_negative_binomial_like = _like(
    "_random_generalized_negative_binomial_like",
    "Generalized negative binomial samples shaped like ``data``.",
)
