"""Samplers with array parameters: ``_sample_<distribution>`` (one distribution
per element of the parameter arrays), ``_sample_multinomial`` and
``_sample_unique_zipfian``.

The distributions and their draws are those of ``random.py``; here the
parameters of shape ``[s]`` give an output of shape ``[s] x shape``, each
element's ``shape`` samples drawn from its own distribution.
"""

import math

import attrs
import numpy as np

from .base import OpDef, merge_shape
from .params import ParamError, param
from .random import DISTRIBUTIONS, FLOAT_DTYPES, sampler_type

__all__ = ["OPS"]


# -- _sample_<distribution> ------------------------------------------------------------


def _dims_positive(instance, attribute, value):
    if value is not None and any(d <= 0 for d in value):
        raise ValueError("shape parameter must be non-zero within each dimension")


@attrs.frozen
class MultiSampleParams:
    shape: tuple = param("shape", (), validator=_dims_positive)
    dtype: str = param("dtype", None, optional=True, choices=FLOAT_DTYPES)


def _multi_sample_shape(names):
    def infer(p, in_shapes, out_shapes, aux_shapes):
        drawn = tuple(p.shape or ())
        base, out = None, out_shapes[0]
        if out is not None and len(out) > len(drawn):
            base = tuple(out[: len(out) - len(drawn)])
        for name, shape in zip(names, in_shapes, strict=True):
            base = merge_shape(base, shape, name)
        if base is not None:
            out = merge_shape(base + drawn, out, "output")
        return [base] * len(in_shapes), [out], aux_shapes

    return infer


def _multi_sample_type(p, in_types, out_types, aux_types):
    in_dtype = next((t for t in in_types if t is not None), None)
    _, out, _ = sampler_type("float32", FLOAT_DTYPES)(p, in_types, out_types, aux_types)
    return [in_dtype] * len(in_types), out, aux_types


def _multi_sample_forward(distribution):
    def forward(ctx, p, inputs, aux):
        drawn = tuple(p.shape or ())
        base = inputs[0].shape
        shape = base + drawn
        if not all(a.size for a in inputs):
            raise ParamError(f"_sample_{distribution.name}: the parameter arrays are empty")
        values = [a.astype("float64").reshape(base + (1,) * len(drawn)) for a in inputs]
        dtype = p.dtype or "float32"
        return [distribution.draw(ctx.backend, ctx.device_id, shape, dtype, *values)], None

    return forward


def _zero_gradients(ctx, p, saved, out_grads, need_grad):
    shapes, dtypes = saved
    xp = ctx.xp
    return [
        xp.zeros(s, dtype=d) if need else None
        for s, d, need in zip(shapes, dtypes, need_grad, strict=True)
    ]


def _saving_shapes(forward):
    def run(ctx, p, inputs, aux):
        outputs, _ = forward(ctx, p, inputs, aux)
        return outputs, ([a.shape for a in inputs], [a.dtype for a in inputs])

    return run


def _sample_op(distribution):
    names = distribution.inputs
    return OpDef(
        name=f"_sample_{distribution.name}",
        params=MultiSampleParams,
        arguments=names,
        infer_shape=_multi_sample_shape(names),
        infer_type=_multi_sample_type,
        forward=_saving_shapes(_multi_sample_forward(distribution)),
        backward=_zero_gradients,
        aliases=(f"sample_{distribution.name}",),
        doc=f"Samples of {distribution.name} distributions whose parameters are arrays.",
    )


# -- _sample_multinomial ---------------------------------------------------------------


@attrs.frozen
class MultinomialParams:
    shape: tuple = param("shape", ())
    get_prob: bool = param("bool", False)
    dtype: str = param(
        "dtype", "int32", choices=("uint8", "int32", "float16", "float32", "float64")
    )


def _multinomial_outputs(p):
    return ("output0", "output1") if p.get_prob else ("output",)


def _multinomial_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    drawn = tuple(p.shape or ())
    if len(data) == 1:
        shape = drawn or (1,)
    else:
        shape = tuple(data[:-1]) + drawn
    outs = [merge_shape(shape, o, "output") for o in out_shapes]
    return in_shapes, outs, aux_shapes


def _multinomial_type(p, in_types, out_types, aux_types):
    outs = [p.dtype] + ([in_types[0]] if p.get_prob else [])
    return in_types, outs, aux_types


def _multinomial_forward(ctx, p, inputs, aux):
    xp, (data,) = ctx.xp, inputs
    _, out_shapes, _ = _multinomial_shape(p, [data.shape], [None] * (1 + p.get_prob), [])
    classes = data.shape[-1]
    rows = data.size // classes
    per_row = math.prod(out_shapes[0]) // rows
    dist = data.reshape(rows, classes)
    # the cumulative table in float32, as MXNet keeps it; rows are shifted apart
    # by 2 so that one sorted search finds every row's first entry >= u
    offsets = 2.0 * xp.arange(rows, dtype="float64")[:, None]
    cum = xp.cumsum(dist.astype("float64"), axis=1).astype("float32").astype("float64")
    draws = ctx.backend.uniform(0.0, 1.0, (rows, per_row), "float32", ctx.device_id)
    found = xp.searchsorted((cum + offsets).ravel(), (draws.astype("float64") + offsets).ravel())
    index = found.reshape(rows, per_row) - xp.arange(rows)[:, None] * classes
    # a row summing to a little less than 1 may leave u above its last entry
    index = xp.minimum(index, classes - 1)
    outputs = [index.reshape(out_shapes[0]).astype(p.dtype)]
    if p.get_prob:
        chosen = xp.take_along_axis(dist, index, axis=1)
        outputs.append(xp.log(chosen).reshape(out_shapes[1]).astype(data.dtype))
    return outputs, (dist, index, data.shape)


def _multinomial_backward(ctx, p, saved, out_grads, need_grad):
    if not need_grad[0]:
        return [None]
    xp, (dist, index, shape) = ctx.xp, saved
    if not p.get_prob:
        return [xp.zeros(shape, dtype=dist.dtype)]
    # d log(p[k]) / d p[k] = 1 / p[k], summed over the draws that chose k
    head = out_grads[1].reshape(index.shape).astype(dist.dtype)
    chosen = xp.take_along_axis(dist, index, axis=1)
    hits = index[:, :, None] == xp.arange(dist.shape[1])[None, None, :]
    grad = (hits * (head / chosen)[:, :, None]).sum(axis=1)
    return [grad.astype(dist.dtype).reshape(shape)]


MULTINOMIAL = OpDef(
    name="_sample_multinomial",
    params=MultinomialParams,
    outputs=_multinomial_outputs,
    infer_shape=_multinomial_shape,
    infer_type=_multinomial_type,
    forward=_multinomial_forward,
    backward=_multinomial_backward,
    aliases=("sample_multinomial",),
    doc="Draws from categorical distributions over the last axis; log-probabilities on request.",
)


# -- _sample_unique_zipfian -------------------------------------------------------------


@attrs.frozen
class UniqueZipfianParams:
    range_max: int = param("int")
    shape: tuple = param("shape", ())


def _zipfian_shape(p, in_shapes, out_shapes, aux_shapes):
    if not p.shape and out_shapes[0] is not None and len(out_shapes[0]) == 2:
        return in_shapes, [out_shapes[0], merge_shape((out_shapes[0][0],), out_shapes[1])], []
    if len(p.shape or ()) != 2:
        raise ParamError(f"_sample_unique_zipfian: shape must have 2 dimensions, got {p.shape}")
    outs = [merge_shape(tuple(p.shape), out_shapes[0]), merge_shape((p.shape[0],), out_shapes[1])]
    return in_shapes, outs, aux_shapes


def _zipfian_type(p, in_types, out_types, aux_types):
    return in_types, ["int64", "int64"], aux_types


def _unique_row(ctx, wanted, log_range):
    """``wanted`` distinct classes in order of first draw, and the number of draws taken."""
    taken, tries, chunk = np.empty(0, dtype=np.int64), 0, max(2 * wanted, 64)
    while True:
        drawn = ctx.backend.uniform(0.0, 1.0, (chunk,), "float64", ctx.device_id)
        values = np.floor(np.exp(ctx.backend.to_host(drawn) * log_range) + 0.5).astype(np.int64) - 1
        classes, first = np.unique(values, return_index=True)
        fresh = ~np.isin(classes, taken)
        order = np.argsort(first[fresh])
        classes, first = classes[fresh][order], first[fresh][order]
        need = wanted - taken.size
        if classes.size >= need:
            return np.concatenate([taken, classes[:need]]), tries + int(first[need - 1]) + 1
        taken, tries = np.concatenate([taken, classes]), tries + chunk


def _zipfian_forward(ctx, p, inputs, aux):
    _, (shape, _), _ = _zipfian_shape(p, [], [None, None], [])
    batch, wanted = shape
    if wanted > p.range_max:
        raise ParamError(
            "_sample_unique_zipfian: number of samples cannot exceed the number of possible "
            f"classes ({wanted} > {p.range_max})"
        )
    samples = np.zeros(shape, dtype=np.int64)
    tries = np.zeros((batch,), dtype=np.int64)
    if wanted > 0:
        for row in range(batch):  # rejection sampling: each row draws until it has enough
            samples[row], tries[row] = _unique_row(ctx, wanted, math.log(p.range_max))
    backend = ctx.backend
    return [
        backend.asarray(samples, "int64", ctx.device_id),
        backend.asarray(tries, "int64", ctx.device_id),
    ], None


UNIQUE_ZIPFIAN = OpDef(
    name="_sample_unique_zipfian",
    params=UniqueZipfianParams,
    arguments=(),
    outputs=("output0", "output1"),
    infer_shape=_zipfian_shape,
    infer_type=_zipfian_type,
    forward=_zipfian_forward,
    doc="Distinct classes from an approximately log-uniform distribution, and the draws taken.",
)


OPS = [
    *(_sample_op(d) for d in DISTRIBUTIONS.values()),
    MULTINOMIAL,
    UNIQUE_ZIPFIAN,
]
