"""``mx.nd.random``: random arrays drawn from each backend's own streams.

As MXNet's ``python/mxnet/ndarray/random.py``: scalar parameters run the
``_random_<distribution>`` operator (one distribution, ``shape`` samples,
placed on ``ctx``); NDArray parameters run ``_sample_<distribution>`` (one
distribution per element, ``shape`` samples each, on the parameters' context).
The ``*_like`` samplers take their shape and dtype from an array.
"""

import numbers

import numpy as np

from ..context import current_context
from ..sampling import SAMPLER_FUNCTIONS, same_kind
from .imperative import invoke
from .ndarray import NDArray

__all__ = list(SAMPLER_FUNCTIONS)


def _shape(shape):
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def _keywords(shape, dtype, out, kwargs):
    """The operator's keywords; an ``out=`` array supplies what is not given."""
    keywords = dict(kwargs)
    if shape is not None:
        keywords["shape"] = _shape(shape)
    if dtype is not None:
        keywords["dtype"] = dtype
    elif out is not None:
        keywords["dtype"] = out.dtype
    return keywords


def _empty(shape, dtype, ctx, out):
    """MXNet draws nothing for a shape with a zero dimension: an empty array."""
    values = ctx.backend.empty(shape, np.dtype(dtype), ctx.device_id)
    result = NDArray(values, ctx)
    if out is not None:
        out[:] = result
        return out
    return result


def _helper(random_op, sample_op, params, shape, dtype, ctx, out, kwargs, default="float32"):
    if isinstance(params[0], NDArray):
        same_kind(params, NDArray, "NDArray")
        if sample_op is None:
            raise TypeError(
                f"{random_op}: parameters must be numbers; there is no sampler that takes "
                "NDArray parameters (as in MXNet)"
            )
        return invoke(sample_op, params, {**_keywords(shape, dtype, out, kwargs), "out": out})
    if isinstance(params[0], numbers.Number):
        same_kind(params, numbers.Number, "numbers")
        ctx = (out.context if out is not None else current_context()) if ctx is None else ctx
        if shape is None:
            shape = 1 if out is None else out.shape
        if 0 in _shape(shape):
            return _empty(
                _shape(shape), dtype or (out.dtype if out is not None else default), ctx, out
            )
        keywords = _keywords(shape, dtype, out, kwargs)
        return invoke(random_op, params, {**keywords, "ctx": ctx, "out": out})
    raise ValueError(
        f"Distribution parameters must be either NDArray or numbers, but got {type(params[0])}."
    )


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from U[low, high)."""
    params = [low, high]
    return _helper("_random_uniform", "_sample_uniform", params, shape, dtype, ctx, out, kwargs)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale**2)."""
    params = [loc, scale]
    return _helper("_random_normal", "_sample_normal", params, shape, dtype, ctx, out, kwargs)


def randn(*shape, **kwargs):
    """Normal samples of the shape given positionally (``randn(2, 3)``)."""
    loc, scale = kwargs.pop("loc", 0), kwargs.pop("scale", 1)
    dtype, ctx, out = kwargs.pop("dtype", None), kwargs.pop("ctx", None), kwargs.pop("out", None)
    shape = shape or None
    return normal(loc, scale, shape, dtype, ctx, out, **kwargs)


def poisson(lam=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Poisson samples of rate ``lam``, as floats."""
    params = [lam]
    return _helper("_random_poisson", "_sample_poisson", params, shape, dtype, ctx, out, kwargs)


def exponential(scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Exponential samples of mean ``scale`` (rate ``1 / scale``)."""
    params = [1.0 / scale]
    return _helper(
        "_random_exponential", "_sample_exponential", params, shape, dtype, ctx, out, kwargs
    )


def gamma(alpha=1, beta=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Gamma samples of shape ``alpha`` and scale ``beta``."""
    params = [alpha, beta]
    return _helper("_random_gamma", "_sample_gamma", params, shape, dtype, ctx, out, kwargs)


def negative_binomial(k=1, p=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Failures before the ``k``-th success, ``p`` the success probability, as floats."""
    return _helper(
        "_random_negative_binomial",
        "_sample_negative_binomial",
        [k, p],
        shape,
        dtype,
        ctx,
        out,
        kwargs,
    )


def generalized_negative_binomial(
    mu=1, alpha=1, shape=None, dtype=None, ctx=None, out=None, **kwargs
):
    """Negative binomial samples of mean ``mu`` and dispersion ``alpha``, as floats."""
    return _helper(
        "_random_generalized_negative_binomial",
        "_sample_generalized_negative_binomial",
        [mu, alpha],
        shape,
        dtype,
        ctx,
        out,
        kwargs,
    )


def multinomial(data, shape=None, get_prob=False, out=None, dtype="int32", **kwargs):
    """Category indices drawn from the distributions on ``data``'s last axis.

    With ``get_prob`` also the log-probability of each draw (a second array).
    """
    keywords = {"get_prob": get_prob, "dtype": dtype, "out": out, **kwargs}
    if shape is not None:
        keywords["shape"] = _shape(shape)
    return invoke("_sample_multinomial", (data,), keywords)


def shuffle(data, **kwargs):
    """A copy of ``data`` with its first axis randomly permuted."""
    return invoke("_shuffle", (data,), kwargs)


_INTEGER_DTYPES = ("int32", "int64")


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Integers drawn uniformly from [low, high); int32 unless ``dtype`` says otherwise.

    Where MXNet takes only int32 and int64, rebind also gives other integer
    dtypes (drawn as int64 and converted).
    """
    wanted = np.dtype(dtype or (out.dtype if out is not None else np.int32))
    if wanted.name in _INTEGER_DTYPES:
        params = [low, high]
        return _helper("_random_randint", None, params, shape, wanted, ctx, out, kwargs, "int32")
    if shape is None and out is not None:
        shape = out.shape
    drawn = randint(low, high, shape=shape, dtype="int64", ctx=ctx, **kwargs)
    result = drawn.astype(wanted)
    if out is not None:
        out[:] = result
        return out
    return result


def _like(op_name, doc):
    def sampler(data=None, out=None, name=None, **kwargs):
        return invoke(op_name, (data,), {**kwargs, "out": out})

    short = op_name[len("_random_") :]
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
