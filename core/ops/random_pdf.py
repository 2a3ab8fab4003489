"""Densities of samples: ``_random_pdf_<distribution>`` (``is_log`` for the log-density).

The parameters of shape ``[s]`` describe one distribution per element; the
sample has shape ``[s] x [t]`` and the output gives the density of each of its
elements (of each vector, for the Dirichlet, whose parameters and samples end
in the k categories). Gradients follow MXNet's kernels: with respect to the
parameters (summed over the samples of each distribution) and to the sample,
which MXNet sets to zero for the discrete distributions and the uniform.

Everything is computed in float64 and cast to the inputs' dtype.
"""

import math

import attrs

from .base import OpDef, merge_shape, mismatch, same_type
from .params import param
from .special import digamma, lgamma

__all__ = ["OPS"]


@attrs.frozen
class PdfParams:
    is_log: bool = param("bool", False)


@attrs.frozen
class Density:
    """One density: its parameter names, log-density and partial derivatives.

    ``log_pdf(xp, x, *params)`` and ``partials(xp, x, *params) -> (d/dx or None,
    d/dparam, ...)`` of the log-density take float64 arrays broadcast together.
    """

    name: str
    params: tuple
    log_pdf: object
    partials: object
    vector: bool = False


# -- the log-densities and their derivatives -------------------------------------------


def _uniform_log(xp, x, low, high):
    return xp.broadcast_to(-xp.log(high - low), x.shape)


def _uniform_partials(xp, x, low, high):
    width = xp.broadcast_to(high - low, x.shape)
    return None, 1.0 / width, -1.0 / width


def _normal_log(xp, x, mu, sigma):
    return -0.5 * (x - mu) ** 2 / sigma**2 - xp.log(math.sqrt(2.0 * math.pi) * sigma)


def _normal_partials(xp, x, mu, sigma):
    square = sigma * sigma
    return (mu - x) / square, (x - mu) / square, ((x - mu) ** 2 - square) / (square * sigma)


def _gamma_log(xp, x, alpha, beta):
    # MXNet's density takes beta as the rate here (its sampler takes a scale)
    return alpha * xp.log(beta) + (alpha - 1) * xp.log(x) - beta * x - lgamma(xp, alpha)


def _gamma_partials(xp, x, alpha, beta):
    return (
        (alpha - 1) / x - beta,
        xp.log(beta) + xp.log(x) - digamma(xp, alpha),
        alpha / beta - x,
    )


def _exponential_log(xp, x, lam):
    return xp.log(lam) - lam * x


def _exponential_partials(xp, x, lam):
    return -xp.broadcast_to(lam, x.shape), 1.0 / lam - x


def _poisson_log(xp, x, lam):
    return x * xp.log(lam) - lgamma(xp, x + 1) - lam


def _poisson_partials(xp, x, lam):
    return None, x / lam - 1.0


def _negative_binomial_log(xp, x, k, p):
    # p is the failure probability, as in MXNet
    return lgamma(xp, x + k) - lgamma(xp, x + 1) - lgamma(xp, k) + k * xp.log(p) + x * xp.log(1 - p)


def _negative_binomial_partials(xp, x, k, p):
    return None, digamma(xp, x + k) - digamma(xp, k) + xp.log(p), k / p - x / (1 - p)


def _as_negative_binomial(mu, alpha):
    """MXNet's reparameterisation: k = 1 / alpha, p = 1 / (mu alpha + 1)."""
    return 1.0 / alpha, 1.0 / (mu * alpha + 1.0)


def _gnb_log(xp, x, mu, alpha):
    return _negative_binomial_log(xp, x, *_as_negative_binomial(mu, alpha))


def _gnb_partials(xp, x, mu, alpha):
    _, d_k, d_p = _negative_binomial_partials(xp, x, *_as_negative_binomial(mu, alpha))
    denominator = (mu * alpha + 1.0) ** 2
    return None, -d_p * alpha / denominator, -d_k / alpha**2 - d_p * mu / denominator


def _dirichlet_log(xp, x, alpha):
    total = alpha.sum(axis=-1)
    terms = ((alpha - 1) * xp.log(x)).sum(axis=-1)
    return terms + lgamma(xp, total) - lgamma(xp, alpha).sum(axis=-1)


def _dirichlet_partials(xp, x, alpha):
    total = xp.broadcast_to(alpha.sum(axis=-1, keepdims=True), x.shape)
    d_alpha = xp.log(x) + digamma(xp, total) - digamma(xp, xp.broadcast_to(alpha, x.shape))
    return (alpha - 1) / x, d_alpha


DENSITIES = (
    Density("uniform", ("low", "high"), _uniform_log, _uniform_partials),
    Density("normal", ("mu", "sigma"), _normal_log, _normal_partials),
    Density("gamma", ("alpha", "beta"), _gamma_log, _gamma_partials),
    Density("exponential", ("lam",), _exponential_log, _exponential_partials),
    Density("poisson", ("lam",), _poisson_log, _poisson_partials),
    Density("negative_binomial", ("k", "p"), _negative_binomial_log, _negative_binomial_partials),
    Density("generalized_negative_binomial", ("mu", "alpha"), _gnb_log, _gnb_partials),
    Density("dirichlet", ("alpha",), _dirichlet_log, _dirichlet_partials, vector=True),
)


# -- shapes ---------------------------------------------------------------------------------


def _pdf_shape(density):
    names = ("sample", *density.params)

    def infer(p, in_shapes, out_shapes, aux_shapes):
        if any(s is None or len(s) == 0 for s in in_shapes):
            return in_shapes, out_shapes, aux_shapes
        sample = tuple(in_shapes[0])
        params = in_shapes[1]
        for name, shape in zip(names[2:], in_shapes[2:], strict=True):
            params = merge_shape(params, shape, name)
        if len(params) > len(sample):
            raise mismatch(
                names[1],
                tuple(params),
                sample,
                f"dimension of input samples ({len(sample)}) must be at least dimension of "
                f"distribution parameters ({len(params)})",
            )
        expected = sample[: len(params)]
        if density.vector:
            expected = expected[:-1] + sample[-1:]
        for name, shape in zip(names[1:], in_shapes[1:], strict=True):
            merge_shape(expected, shape, name)
        if density.vector:
            out = (1,) if len(sample) == 1 else sample[:-1]
        else:
            out = sample
        out = merge_shape(out, out_shapes[0], "output")
        return [sample] + [expected] * len(density.params), [out], aux_shapes

    return infer


def _layout(density, sample, param):
    """(shape the parameters broadcast as, axes their gradients are summed over)."""
    lead = param.ndim - (1 if density.vector else 0)
    extra = sample.ndim - param.ndim
    tail = param.shape[lead:]
    return param.shape[:lead] + (1,) * extra + tail, tuple(range(lead, lead + extra))


# -- kernels --------------------------------------------------------------------------------


def _pdf_forward(density):
    def forward(ctx, p, inputs, aux):
        xp, sample = ctx.xp, inputs[0]
        shape, _ = _layout(density, sample, inputs[1])
        x = sample.astype("float64")
        params = [a.astype("float64").reshape(shape) for a in inputs[1:]]
        log_pdf = density.log_pdf(xp, x, *params)
        if density.vector and sample.ndim == 1:
            log_pdf = log_pdf.reshape(1)
        out = log_pdf if p.is_log else xp.exp(log_pdf)
        return [out.astype(sample.dtype)], (inputs, out)

    return forward


def _pdf_backward(density):
    def backward(ctx, p, saved, out_grads, need_grad):
        xp, (inputs, out) = ctx.xp, saved
        sample = inputs[0]
        shape, axes = _layout(density, sample, inputs[1])
        x = sample.astype("float64")
        params = [a.astype("float64").reshape(shape) for a in inputs[1:]]
        scaling = out_grads[0].astype("float64") * (1.0 if p.is_log else out)
        scaling = scaling.reshape(sample.shape[:-1] + (1,) if density.vector else sample.shape)
        partials = density.partials(xp, x, *params)
        grads = []
        d_sample = xp.zeros(x.shape) if partials[0] is None else scaling * partials[0]
        grads.append(d_sample.astype(sample.dtype) if need_grad[0] else None)
        for array, partial, needed in zip(inputs[1:], partials[1:], need_grad[1:], strict=True):
            if not needed:
                grads.append(None)
                continue
            total = xp.broadcast_to(scaling * partial, x.shape).sum(axis=axes)
            grads.append(total.reshape(array.shape).astype(array.dtype))
        return grads

    return backward


def _pdf_op(density):
    return OpDef(
        name=f"_random_pdf_{density.name}",
        params=PdfParams,
        arguments=("sample", *density.params),
        infer_shape=_pdf_shape(density),
        infer_type=same_type,
        forward=_pdf_forward(density),
        backward=_pdf_backward(density),
        aliases=(f"random_pdf_{density.name}",),
        doc=f"The {density.name} density (log-density with is_log) of each sample.",
    )


OPS = [_pdf_op(d) for d in DENSITIES]
