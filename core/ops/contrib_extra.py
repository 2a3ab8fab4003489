"""Signal and point-process helpers of mx.contrib: count_sketch, fft, ifft and hawkesll.

* ``count_sketch`` (MXNet 1.9.1: GPU only) projects each row of ``data`` to
  ``out_dim`` buckets: ``out[n, h[i]] += s[i] * data[n, i]``; ``h`` and ``s``
  are (1, in_dim) hash and sign rows. Its gradient reaches ``data`` only.
* ``fft`` / ``ifft`` (MXNet 1.9.1: GPU only, cuFFT) transform the last axis of
  2-D or 4-D data. Complex numbers are interleaved: ``fft`` turns d reals into
  d (real, imaginary) pairs (2 d values) and ``ifft`` turns such pairs back
  into the d real parts. Both are unnormalised (ifft(fft(x)) = d * x, as
  cuFFT's inverse); each one's gradient is the other's transform.
* ``hawkesll`` is the log likelihood of marked self-exciting (Hawkes)
  processes with exponential decay, one per row, and their final states; the
  recursion runs over time steps, vectorised over rows.

Difference from MXNet: count_sketch, fft and ifft run on every backend; on a
CPU MXNet 1.9.1 aborts ("only available for GPU").
"""

import attrs
import numpy as np

from .base import OpDef, merge_shape, mismatch
from .conv_utils import work_dtype
from .params import param, positive

__all__ = ["OPS"]


def _check_2d_or_4d(name, shape):
    if shape is not None and len(shape) not in (2, 4):
        raise mismatch(name, shape, "2-D (batch, length) or 4-D data", "the last axis is used")


# -- count_sketch ----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class CountSketchParams:
    out_dim: int = param("int", validator=positive)
    processing_batch_size: int = param("int", 32)


def _sketch_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    data = in_shapes[0]
    _check_2d_or_4d("data", data)
    if data is None:
        return in_shapes, out_shapes, aux_shapes
    for index, name in ((1, "h"), (2, "s")):
        in_shapes[index] = merge_shape((1, data[-1]), in_shapes[index], name)
    out = merge_shape((*data[:-1], p.out_dim), out_shapes[0], "output")
    return in_shapes, [out], aux_shapes


def _sketch_forward(ctx, p, inputs, aux):
    xp, (data, h, s) = ctx.xp, inputs
    buckets = h.reshape(-1).astype(np.int64)
    if buckets.size and bool(((buckets < 0) | (buckets >= p.out_dim)).any()):
        raise ValueError(f"count_sketch: h must hold buckets in [0, out_dim={p.out_dim})")
    rows = data.reshape(-1, data.shape[-1]) * s.reshape(-1).astype(data.dtype)
    # a (in_dim, out_dim) 0/1 matrix: one product adds every input column to its bucket
    spread = (buckets[:, None] == xp.arange(p.out_dim)).astype(data.dtype)
    out = (rows @ spread).reshape(*data.shape[:-1], p.out_dim)
    return [out], (spread, s, h)


def _sketch_backward(ctx, p, saved, out_grads, need_grad):
    spread, s, h = saved
    head = out_grads[0]
    grads = [None, None, None]
    if need_grad[0]:
        rows = head.reshape(-1, p.out_dim) @ spread.T * s.reshape(-1).astype(head.dtype)
        grads[0] = rows.reshape(*head.shape[:-1], spread.shape[0])
    for index, array in ((1, h), (2, s)):  # MXNet computes no gradient for the hashes
        if need_grad[index]:
            grads[index] = ctx.xp.zeros_like(array)
    return grads


# -- fft / ifft ------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class FFTParams:
    compute_size: int = param("int", 128)


def _fft_infer_shape(factor):
    def infer(p, in_shapes, out_shapes, aux_shapes):
        data = in_shapes[0]
        _check_2d_or_4d("data", data)
        if data is None:
            return in_shapes, out_shapes, aux_shapes
        last = data[-1] * 2 if factor > 1 else data[-1] // 2
        out = merge_shape((*data[:-1], last), out_shapes[0], "output")
        return in_shapes, [out], aux_shapes

    return infer


def _interleave(xp, values, dtype):
    """Complex (..., d) as (..., 2 d) reals: (real, imaginary) pairs."""
    return (
        xp.stack([values.real, values.imag], axis=-1).reshape(*values.shape[:-1], -1).astype(dtype)
    )


def _complex(data):
    pairs = data.reshape(*data.shape[:-1], -1, 2)
    return pairs[..., 0] + 1j * pairs[..., 1]


def _fft_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    spectrum = xp.fft.fft(data.astype(work_dtype(data.dtype)), axis=-1)
    return [_interleave(xp, spectrum, data.dtype)], None


def _fft_backward(ctx, p, saved, out_grads, need_grad):
    xp, head = ctx.xp, out_grads[0]
    if not need_grad[0]:
        return [None]
    length = head.shape[-1] // 2  # numpy's ifft divides by the length; cuFFT's does not
    grad = xp.fft.ifft(_complex(head.astype(work_dtype(head.dtype))), axis=-1) * length
    return [grad.real.astype(head.dtype)]


def _ifft_forward(ctx, p, inputs, aux):
    xp, data = ctx.xp, inputs[0]
    if data.shape[-1] % 2:
        raise ValueError(
            f"ifft: the last axis holds (real, imaginary) pairs; {data.shape[-1]} values is odd"
        )
    length = data.shape[-1] // 2
    signal = xp.fft.ifft(_complex(data.astype(work_dtype(data.dtype))), axis=-1) * length
    return [signal.real.astype(data.dtype)], None


def _ifft_backward(ctx, p, saved, out_grads, need_grad):
    xp, head = ctx.xp, out_grads[0]
    if not need_grad[0]:
        return [None]
    spectrum = xp.fft.fft(head.astype(work_dtype(head.dtype)), axis=-1)
    return [_interleave(xp, spectrum, head.dtype)]


# -- hawkesll --------------------------------------------------------------------------

_HAWKES_INPUTS = ("lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time")


def _hawkes_infer_shape(p, in_shapes, out_shapes, aux_shapes):
    lags, mu = in_shapes[4], in_shapes[0]
    if lags is None or mu is None:
        return in_shapes, out_shapes, aux_shapes
    if len(lags) != 2 or len(mu) != 2:
        bad, shape = ("lags", lags) if len(lags) != 2 else ("lda", mu)
        raise mismatch(bad, shape, "a 2-D shape", "lda is (N, K), lags (N, T)")
    n, t, k = lags[0], lags[1], mu[1]
    expected = [(n, k), (k,), (k,), (n, k), (n, t), (n, t), (n,), (n,)]
    for index, (name, want) in enumerate(zip(_HAWKES_INPUTS, expected, strict=True)):
        in_shapes[index] = merge_shape(want, in_shapes[index], name)
    outs = [
        merge_shape((n,), out_shapes[0], "output"),
        merge_shape((n, k), out_shapes[1], "out_state"),
    ]
    return in_shapes, outs, aux_shapes


def _hawkes_infer_type(p, in_types, out_types, aux_types):
    dtype = next((t for i, t in enumerate(in_types) if t is not None and i != 5), out_types[0])
    types = [dtype] * 8
    types[5] = "int32"  # the marks are process ids
    return types, [dtype, dtype], aux_types


def _hawkes_steps(xp, inputs, dtype, with_slopes):
    """Run the recursion over time; yields nothing, returns the per-step terms it summed."""
    mu, alpha, beta, state, lags, marks, valid, _ = (a.astype(dtype, copy=False) for a in inputs)
    n, k = mu.shape
    rows = xp.arange(n)
    marks = inputs[5].astype(np.int64)
    last = xp.zeros((n, k), dtype)
    state = state.copy()
    slope = xp.zeros((n, k), dtype)  # d state / d beta
    terms = {name: xp.zeros((n, k), dtype) for name in ("mu", "alpha", "beta")}
    ll, t = xp.zeros(n, dtype), xp.zeros(n, dtype)
    for j in range(lags.shape[1]):
        active = j < valid  # MXNet: while j < valid_length (a float)
        ci = xp.where(active, marks[:, j], 0)
        t = t + xp.where(active, lags[:, j], 0)
        a, b, phi, dphi = alpha[ci], beta[ci], state[rows, ci], slope[rows, ci]
        d = t - last[rows, ci]
        ed = xp.exp(-b * d)
        lda = mu[rows, ci] + a * b * phi * ed
        ll = ll + xp.where(active, xp.log(lda) - (mu[rows, ci] * d + a * phi * (1 - ed)), 0)
        if with_slopes:
            steps = {
                "mu": 1 / lda - d,
                "alpha": b * phi * ed / lda - phi * (1 - ed),
                "beta": a * ed * (phi * (1 - b * d) + b * dphi) / lda
                - a * (dphi * (1 - ed) + phi * d * ed),
            }
            for name, step in steps.items():
                terms[name][rows, ci] += xp.where(active, step, 0)
            slope[rows, ci] = xp.where(active, ed * (dphi - d * phi), dphi)
        state[rows, ci] = xp.where(active, 1 + phi * ed, phi)
        last[rows, ci] = xp.where(active, t, last[rows, ci])
    return ll, state, slope, last, terms


def _hawkes_forward(ctx, p, inputs, aux):
    xp = ctx.xp
    dtype = np.dtype(work_dtype(inputs[0].dtype))
    mu, alpha, beta, max_time = (inputs[i].astype(dtype) for i in (0, 1, 2, 7))
    ll, state, _, last, _ = _hawkes_steps(xp, inputs, dtype, with_slopes=False)
    d = max_time[:, None] - last
    ed = xp.exp(-beta * d)
    ll = ll - (mu * d + alpha * state * (1 - ed)).sum(axis=1)
    out_dtype = inputs[0].dtype
    return [ll.astype(out_dtype), (state * ed).astype(out_dtype)], inputs


def _hawkes_backward(ctx, p, inputs, out_grads, need_grad):
    xp = ctx.xp
    unsupported = [name for i, name in enumerate(_HAWKES_INPUTS) if i >= 4 and need_grad[i]]
    if unsupported:
        raise ValueError(
            f"hawkesll: no gradient for {', '.join(unsupported)} (MXNet 1.9.1 requires "
            "grad_req='null' there): bind them with grad_req 'null'"
        )
    dtype = np.dtype(work_dtype(inputs[0].dtype))
    alpha, beta, max_time = (inputs[i].astype(dtype) for i in (1, 2, 7))
    _, state, slope, last, terms = _hawkes_steps(xp, inputs, dtype, with_slopes=True)
    d = max_time[:, None] - last
    ed = xp.exp(-beta * d)
    head = out_grads[0].astype(dtype)[:, None]  # the states' gradient is not used, as MXNet
    mu_grad = (terms["mu"] - d) * head
    alpha_grad = ((terms["alpha"] - state * (1 - ed)) * head).sum(axis=0)
    beta_grad = ((terms["beta"] - alpha * (slope * (1 - ed) + state * d * ed)) * head).sum(axis=0)
    grads = [mu_grad, alpha_grad, beta_grad, xp.zeros_like(inputs[3])] + [None] * 4
    return [
        g.astype(inputs[0].dtype) if g is not None and need else None
        for g, need in zip(grads, need_grad, strict=True)
    ]


OPS = [
    OpDef(
        name="_contrib_count_sketch",
        params=CountSketchParams,
        arguments=("data", "h", "s"),
        infer_shape=_sketch_infer_shape,
        forward=_sketch_forward,
        backward=_sketch_backward,
        doc="Count sketch of each row: signed sums into out_dim hashed buckets.",
    ),
    OpDef(
        name="_contrib_fft",
        params=FFTParams,
        infer_shape=_fft_infer_shape(2),
        forward=_fft_forward,
        backward=_fft_backward,
        doc="FFT of the last axis; the output interleaves real and imaginary parts.",
    ),
    OpDef(
        name="_contrib_ifft",
        params=FFTParams,
        infer_shape=_fft_infer_shape(0),
        forward=_ifft_forward,
        backward=_ifft_backward,
        doc="Unnormalised inverse FFT of interleaved complex input; the real parts.",
    ),
    OpDef(
        name="_contrib_hawkesll",
        arguments=_HAWKES_INPUTS,
        outputs=("output", "out_state"),
        infer_shape=_hawkes_infer_shape,
        infer_type=_hawkes_infer_type,
        forward=_hawkes_forward,
        backward=_hawkes_backward,
        doc="Log likelihood of marked Hawkes processes with exponential decay.",
    ),
]
