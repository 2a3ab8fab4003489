"""Samplers with scalar parameters: ``_random_<distribution>``, their ``_like``
variants, ``_random_randint`` and ``_shuffle``.

Every draw comes from the random stream of the device the kernel runs on
(``backend.uniform``, ``gamma``, ``poisson``, ... seeded by ``mx.random.seed``),
so the numbers differ from MXNet's while the distributions are the same. The
``DISTRIBUTIONS`` table is shared with ``random_sample.py``, whose
``_sample_<distribution>`` operators take the parameters as arrays.
"""

import attrs
import numpy as np

from ..errors import DTypeMismatchError
from .base import OpDef, elementwise_shape, same_type
from .creation import _creator_shape, _settled_shape, _shape_param
from .params import ParamError, param

__all__ = ["OPS", "DISTRIBUTIONS", "Distribution", "sampler_type"]

FLOAT_DTYPES = ("float32", "float64", "float16")


# -- the distributions ---------------------------------------------------------
# A draw takes (backend, device_id, shape, dtype, *parameters); the parameters
# are float64 device arrays broadcastable to ``shape``.


def _uniform(backend, device, shape, dtype, low, high):
    # low + (high - low) * u, as MXNet's kernel: array parameters with low > high
    # (which MXNet does not check) draw from [high, low]
    unit = backend.uniform(0.0, 1.0, shape, "float64", device)
    return (low + (high - low) * unit).astype(dtype)


def _normal(backend, device, shape, dtype, loc, scale):
    # MXNet's loc + scale * z: a negative array scale is N(loc, scale**2) too
    return backend.normal(loc, backend.xp.abs(scale), shape, dtype, device)


def _gamma(backend, device, shape, dtype, alpha, beta):
    return backend.gamma(alpha, beta, shape, dtype, device)


def _exponential(backend, device, shape, dtype, lam):
    if bool(backend.xp.any(lam < 0)):
        # MXNet's _sample_exponential draws negative numbers there
        raise ParamError(
            "_sample_exponential: lam must be non-negative (the rate of the exponential "
            f"distribution), got {backend.to_host(lam).ravel().min()}; pass positive rates"
        )
    return backend.exponential(1.0 / lam, shape, dtype, device)


# above this rate numpy refuses a Poisson draw; N(lam, lam) is exact to float64 there
_HUGE_RATE = 1e15


def _poisson(backend, device, shape, dtype, lam):
    # a negative array rate draws 0 as in MXNet (its scalar operator refuses it)
    xp = backend.xp
    lam = xp.maximum(lam, 0.0)
    huge = lam > _HUGE_RATE
    if not bool(xp.any(huge)):
        return backend.poisson(lam, shape, dtype, device)
    # MXNet's draws are -2**31 there; the normal limit keeps the distribution
    small = backend.poisson(xp.where(huge, 0.0, lam), shape, "float64", device)
    spread = xp.sqrt(xp.where(huge, lam, 0.0))
    large = xp.round(backend.normal(xp.where(huge, lam, 0.0), spread, shape, "float64", device))
    return xp.where(huge, large, small).astype(dtype)


def _negative_binomial(backend, device, shape, dtype, k, p):
    # MXNet's mixture: a Poisson whose rate is Gamma(k, (1 - p) / p). MXNet
    # accepts any p >= 0: p >= 1 makes every draw 0 (as MXNet's), and p == 0
    # (no success ever) makes the draws infinite where MXNet's are -2**31
    xp = backend.xp
    never = (p == 0) & (k > 0)
    certain = p >= 1
    odds = xp.where(never | certain, 0.0, (1.0 - p) / xp.where(p == 0, 1.0, p))
    rate = backend.gamma(k, odds, shape, "float64", device)
    draws = _poisson(backend, device, shape, dtype, rate)
    return xp.where(never, xp.asarray(np.inf, dtype=draws.dtype), draws)


def _generalized_negative_binomial(backend, device, shape, dtype, mu, alpha):
    # Gamma(1 / alpha, alpha * mu) rates; alpha == 0 is the Poisson of mean mu
    xp = backend.xp
    dispersed = alpha != 0
    safe = xp.where(dispersed, alpha, 1.0)
    rate = backend.gamma(1.0 / safe, safe * mu, shape, "float64", device)
    rate = xp.where(dispersed, rate, xp.broadcast_to(mu, rate.shape))
    return _poisson(backend, device, shape, dtype, rate)


def _positive(name, what):
    return lambda v: None if v > 0 else f"{name} parameter in {what} has to be positive"


def _non_negative(name, what):
    return lambda v: None if v >= 0 else f"{name} parameter in {what} has to be non-negative"


@attrs.frozen
class Distribution:
    """One distribution: its op parameters, its ``_sample_`` input names, its draw.

    ``fields`` are (op parameter, kind, default); ``checks`` map a parameter to a
    function returning MXNet's complaint about a bad scalar value, or None.
    """

    name: str
    fields: tuple
    inputs: tuple
    draw: object
    checks: dict = attrs.field(factory=dict)
    pair_check: object = None


def _ordered(low, high):
    return None if high >= low else "low must be less or equal to high in uniform distribution"


DISTRIBUTIONS = {
    d.name: d
    for d in (
        Distribution(
            "uniform",
            (("low", "float", 0.0), ("high", "float", 1.0)),
            ("low", "high"),
            _uniform,
            pair_check=_ordered,
        ),
        Distribution(
            "normal",
            (("loc", "float", 0.0), ("scale", "float", 1.0)),
            ("mu", "sigma"),
            _normal,
            {
                "scale": lambda v: (
                    None if v > 0 else "scale parameter in gaussian has to be positive"
                )
            },
        ),
        Distribution(
            "gamma",
            (("alpha", "float", 1.0), ("beta", "float", 1.0)),
            ("alpha", "beta"),
            _gamma,
            {
                "alpha": _positive("alpha", "gamma distribution"),
                "beta": _positive("beta", "gamma distribution"),
            },
        ),
        Distribution(
            "exponential",
            (("lam", "float", 1.0),),
            ("lam",),
            _exponential,
            {"lam": _positive("lambda", "exponential distribution")},
        ),
        Distribution(
            "poisson",
            (("lam", "float", 1.0),),
            ("lam",),
            _poisson,
            {"lam": _non_negative("lambda", "poisson distribution")},
        ),
        Distribution(
            "negative_binomial",
            (("k", "int", 1), ("p", "float", 1.0)),
            ("k", "p"),
            _negative_binomial,
            {
                "k": _non_negative("k", "negative binomial distribution"),
                "p": _non_negative("p", "negative binomial distribution"),
            },
        ),
        Distribution(
            "generalized_negative_binomial",
            (("mu", "float", 1.0), ("alpha", "float", 1.0)),
            ("mu", "alpha"),
            _generalized_negative_binomial,
            {
                "mu": _non_negative("mu", "generalized negative binomial distribution"),
                "alpha": _non_negative("alpha", "generalized negative binomial distribution"),
            },
        ),
    )
}


# -- parameters and inference ----------------------------------------------------


def _params_class(class_name, distribution, creator):
    fields = {name: param(kind, default) for name, kind, default in distribution.fields}
    if creator:
        fields["shape"] = param("shape", ())
        fields["ctx"] = param("str", "")  # placement is the caller's; the value is not used
        fields["dtype"] = param("dtype", None, optional=True, choices=FLOAT_DTYPES)
    return attrs.make_class(class_name, fields, frozen=True)


def sampler_type(default, allowed):
    """An ``infer_type``: the dtype parameter, else the known output type, else ``default``."""

    def infer(p, in_types, out_types, aux_types):
        known, wanted = out_types[0], p.dtype
        if known is not None and wanted is not None and known != wanted:
            raise DTypeMismatchError(
                f"output type does not match requested type: {known} vs {wanted}"
            )
        dtype = known or wanted or default
        if dtype not in allowed:
            raise DTypeMismatchError(f"output type must be one of {allowed}: dtype is {dtype}")
        return in_types, [dtype], aux_types

    return infer


def _check_scalars(op_name, distribution, p):
    values = {name: getattr(p, name) for name, _, _ in distribution.fields}
    complaints = [check(values[name]) for name, check in distribution.checks.items()]
    if distribution.pair_check is not None:
        complaints.append(distribution.pair_check(*values.values()))
    for complaint in complaints:
        if complaint:
            raise ParamError(f"{op_name}: {complaint}")


def _scalar_draw(ctx, op_name, distribution, p, shape, dtype):
    _check_scalars(op_name, distribution, p)
    values = [
        ctx.backend.asarray(np.float64(getattr(p, name)), "float64", ctx.device_id)
        for name, _, _ in distribution.fields
    ]
    return distribution.draw(ctx.backend, ctx.device_id, shape, dtype, *values)


# -- _random_<distribution> and _random_<distribution>_like -----------------------


def _creator_forward(op_name, distribution):
    def forward(ctx, p, inputs, aux):
        shape = _settled_shape(ctx, _shape_param(p.shape), op_name)
        dtype = p.dtype or "float32"
        return [_scalar_draw(ctx, op_name, distribution, p, shape, dtype)], None

    return forward


def _like_forward(op_name, distribution):
    def forward(ctx, p, inputs, aux):
        (data,) = inputs
        if data.dtype.name not in FLOAT_DTYPES:
            raise DTypeMismatchError(
                f"{op_name}: the data must have a floating point dtype (float16, float32 or "
                f"float64), got {data.dtype.name}; cast it with astype first"
            )
        drawn = _scalar_draw(ctx, op_name, distribution, p, data.shape, data.dtype)
        return [drawn], None

    return forward


def _zero_gradient(ctx, p, saved, out_grads, need_grad):
    return [ctx.xp.zeros_like(out_grads[0]) if need_grad[0] else None]


def _random_op(distribution):
    name = f"_random_{distribution.name}"
    aliases = (distribution.name,) if distribution.name in ("uniform", "normal") else ()
    return OpDef(
        name=name,
        params=_params_class(f"Random{distribution.name.title()}Params", distribution, True),
        arguments=(),
        infer_shape=_creator_shape,
        infer_type=sampler_type("float32", FLOAT_DTYPES),
        forward=_creator_forward(name, distribution),
        aliases=(*aliases, f"random_{distribution.name}"),
        doc=f"Samples of the {distribution.name} distribution with scalar parameters.",
    )


def _like_op(distribution):
    name = f"_random_{distribution.name}_like"
    return OpDef(
        name=name,
        params=_params_class(f"Random{distribution.name.title()}LikeParams", distribution, False),
        infer_shape=elementwise_shape,
        infer_type=same_type,
        forward=_like_forward(name, distribution),
        backward=_zero_gradient,
        doc=f"{distribution.name} samples with the shape and dtype of the input.",
    )


# -- _random_randint -----------------------------------------------------------------


@attrs.frozen
class RandIntParams:
    low: int = param("int")
    high: int = param("int")
    shape: tuple = param("shape", ())
    ctx: str = param("str", "")
    dtype: str = param("dtype", None, optional=True, choices=("int32", "int64"))


def _randint_forward(ctx, p, inputs, aux):
    if p.high <= p.low:
        # MXNet accepts high == low and then divides by zero; an empty range has no draws
        raise ParamError(f"_random_randint: high ({p.high}) must be greater than low ({p.low})")
    shape = _settled_shape(ctx, _shape_param(p.shape), "_random_randint")
    dtype = p.dtype or "int32"
    bounds = np.iinfo(dtype)
    if p.low < bounds.min or p.high > bounds.max + 1:
        # MXNet's int32 draws wrap around there
        raise ParamError(
            f"_random_randint: [{p.low}, {p.high}) does not fit in {dtype}; pass dtype='int64'"
        )
    return [ctx.backend.randint(p.low, p.high, shape, dtype, ctx.device_id)], None


RANDINT = OpDef(
    name="_random_randint",
    params=RandIntParams,
    arguments=(),
    infer_shape=_creator_shape,
    infer_type=sampler_type("int32", ("int32", "int64")),
    forward=_randint_forward,
    aliases=("random_randint",),
    doc="Integers drawn uniformly from [low, high).",
)


# -- _shuffle --------------------------------------------------------------------------


def _shuffle_forward(ctx, p, inputs, aux):
    (data,) = inputs
    if data.ndim == 0:
        raise ParamError("_shuffle: the data must have at least one axis")
    order = ctx.backend.permutation(data.shape[0], ctx.device_id)
    return [data[order]], None


SHUFFLE = OpDef(
    name="_shuffle",
    forward=_shuffle_forward,
    aliases=("shuffle",),
    doc="The data with its first axis randomly permuted (not differentiable).",
)


OPS = [
    *(_random_op(d) for d in DISTRIBUTIONS.values()),
    *(_like_op(d) for d in DISTRIBUTIONS.values()),
    RANDINT,
    SHUFFLE,
]
