"""BatchNorm's passes over NumPy arrays: fewer of them, into reused buffers, channels split.

The generic kernel (``norm.py``) makes a new array per operation: x - mean,
its square, x̂, x̂ scaled, the output; backward as many again. On NumPy each
fresh array of a large activation costs its page faults on top of the pass.
Here forward writes x̂ and the output into two buffers, the square into the
output's buffer before it is written; backward reads the sums of the
gradient and of grad * x̂ once, in float64, for the parameters' gradients
and the input gradient's means alike. Every channel's passes are independent,
so channels are cut in parts that run on the CPUs' threads (``parallel``).
Channels-last data (oneDNN's convolutions hand such views over, ``conv_dnnl``)
is worked on as (N, spatial, C) rows instead: items cut in parts, the sums
over channels one BLAS product per item, results in the same layout.
The operations are those of the generic kernel, in float32 for float32
data; only the input gradient's means come from the float64 sums (the
generic kernel takes float32 means), a difference of float rounding.
"""

import numpy as np

from rebind.backends.cupy_kernels import fusable

from . import parallel

__all__ = ["applies", "batchnorm_forward", "batchnorm_backward"]


def applies(xp, *arrays):
    """Whether these kernels take the arrays: NumPy, one float32 or float64 dtype.

    Not arrays the GPU kernels claim (``fusable``: the host tests of the GPU
    branches make it claim NumPy arrays).
    """
    dtype = arrays[0].dtype
    return (
        xp is np
        and dtype in (np.float32, np.float64)
        and all(isinstance(a, np.ndarray) and a.dtype == dtype for a in arrays)
        and not fusable(*arrays)
    )


def _split_channels(work, axis, channels, elements):
    """Run ``work(select, start, stop)`` over parts of the channels on the pool's threads."""
    before = (slice(None),) * axis

    def task(start, stop):
        work((*before, slice(start, stop)), start, stop)

    parallel.split(task, channels, elements)


def _channel_sums(a, b=None):
    """Per channel, the float64 sum of ``a`` (times ``b``) over a (N, C, *spatial) part.

    Each (item, channel) row is a contiguous run: its sum is a BLAS dot product
    (with ones, or with ``b``'s row), one read of the data and no product array;
    the rows' sums are added in float64.
    """
    rows = a.reshape(a.shape[0], a.shape[1], 1, -1)
    other = _ones(rows.shape[-1], a.dtype) if b is None else b.reshape(rows.shape)
    dots = np.matmul(rows, other.reshape(*other.shape[:-2], -1, 1))
    return dots.reshape(a.shape[0], a.shape[1]).sum(axis=0, dtype=np.float64)


def _ones(size, dtype, kept={}):  # noqa: B006 (a cache of ones vectors, by size and dtype)
    key = (size, np.dtype(dtype))
    if key not in kept:
        kept[key] = np.ones((size, 1), dtype)
    return kept[key]


def _rows_contiguous(x, axis):
    """Whether every (item, channel) block of ``x`` is one contiguous run (``_channel_sums``)."""
    return axis == 1 and x.ndim >= 3 and x.flags.c_contiguous


def _along(vector, ndim, axis):
    shape = [1] * ndim
    shape[axis] = -1
    return vector.reshape(shape)


def batchnorm_forward(x, axis, scale, beta, eps, stats=None):
    """``(out, xhat, mean, var, invstd)`` of BatchNorm over every axis of ``x`` but ``axis``.

    ``stats`` (mean, var) are the moving statistics to use; None: the batch's.
    """
    if axis == 1 and _channels_last(x):
        return _rows_forward(x, scale, beta, eps, stats)
    ndim, channels = x.ndim, x.shape[axis]
    axes = tuple(i for i in range(ndim) if i != axis)
    xhat, out = np.empty_like(x), np.empty_like(x)
    mean = np.empty(channels, x.dtype) if stats is None else stats[0]
    var = np.empty(channels, x.dtype) if stats is None else stats[1]
    invstd = np.empty(channels, x.dtype)
    scale = scale.astype(x.dtype, copy=False)
    beta = beta.astype(x.dtype, copy=False)

    dots = _rows_contiguous(x, axis)
    count = x.size // max(channels, 1)

    def work(select, start, stop):
        part, centered, result = x[select], xhat[select], out[select]
        if stats is None:
            mean[start:stop] = _channel_sums(part) / count if dots else part.mean(axis=axes)
        np.subtract(part, _along(mean[start:stop].astype(x.dtype), ndim, axis), out=centered)
        if stats is None and dots:
            var[start:stop] = _channel_sums(centered, centered) / count
        elif stats is None:  # the square goes where the output will be
            np.multiply(centered, centered, out=result)
            var[start:stop] = result.mean(axis=axes)
        part_invstd = 1 / np.sqrt(var[start:stop] + eps)
        invstd[start:stop] = part_invstd
        np.multiply(centered, _along(part_invstd.astype(x.dtype), ndim, axis), out=centered)
        np.multiply(centered, _along(scale[start:stop], ndim, axis), out=result)
        result += _along(beta[start:stop], ndim, axis)

    _split_channels(work, axis, channels, 6 * x.size)
    return out, xhat, mean, var, invstd


def batchnorm_backward(grad, xhat, axis, factor, batch_stats, need):
    """``(dx, gamma_sum, beta_sum)``: the input gradient and the float64 sums over channels.

    ``factor`` is scale * invstd per channel; ``need`` is (dx, sum of grad * x̂,
    sum of grad); what is not needed is None. With ``batch_stats`` the
    statistics depend on the input (the full derivative), else they are constants.
    """
    if axis == 1 and _channels_last(xhat):
        return _rows_backward(grad, xhat, factor, batch_stats, need)
    ndim, channels = grad.ndim, grad.shape[axis]
    axes = tuple(i for i in range(ndim) if i != axis)
    count = grad.size // max(channels, 1)
    need_dx = need[0]
    need_product = need[1] or (need_dx and batch_stats)
    need_sum = need[2] or (need_dx and batch_stats)
    dx = np.empty_like(xhat) if need_dx or need_product else None
    product_sum = np.empty(channels, np.float64) if need_product else None
    grad_sum = np.empty(channels, np.float64) if need_sum else None
    factor = factor.astype(grad.dtype, copy=False)

    dots = _rows_contiguous(grad, axis) and xhat.flags.c_contiguous

    def work(select, start, stop):
        g, xh = grad[select], xhat[select]
        d = dx[select] if dx is not None else None
        if need_product and dots:
            product_sum[start:stop] = _channel_sums(g, xh)
        elif need_product:  # grad * x̂, in the input gradient's buffer until it is written
            np.multiply(g, xh, out=d)
            product_sum[start:stop] = d.sum(axis=axes, dtype=np.float64)
        if need_sum:
            grad_sum[start:stop] = _channel_sums(g) if dots else g.sum(axis=axes, dtype=np.float64)
        if not need_dx:
            return
        f = _along(factor[start:stop], ndim, axis)
        if not batch_stats:
            np.multiply(g, f, out=d)
            return
        mean_grad = (grad_sum[start:stop] / count).astype(grad.dtype)
        mean_product = (product_sum[start:stop] / count).astype(grad.dtype)
        # factor * (grad - mean(grad) - x̂ * mean(grad * x̂)), in d
        np.multiply(xh, _along(mean_product, ndim, axis), out=d)
        np.subtract(g, d, out=d)
        d -= _along(mean_grad, ndim, axis)
        d *= f

    _split_channels(work, axis, channels, 6 * grad.size)
    return (dx if need_dx else None), product_sum, grad_sum


# -- channels-last data: (N, spatial, C) rows ---------------------------------------


def _channels_last(x):
    """Whether ``x`` (N, C, *spatial), at least 3-D, lies in memory as (N, *spatial, C)."""
    return x.ndim >= 3 and x.shape[1] > 1 and np.moveaxis(x, 1, -1).flags.c_contiguous


def _rows(x):
    """(N, S, C) C-contiguous rows of ``x``: a view when it is channels-last, else a copy."""
    moved = np.moveaxis(x, 1, -1)
    return np.ascontiguousarray(moved).reshape(x.shape[0], -1, x.shape[1])


def _as_input(rows, like):
    """(N, S, C) ``rows`` as a view with ``like``'s (N, C, *spatial) shape."""
    return np.moveaxis(rows.reshape(like.shape[0], *like.shape[2:], like.shape[1]), -1, 1)


def _column_sums(rows, other=None, block=64):
    """Per channel, the float64 sum over (n, S, C) ``rows`` (times ``other``): float32 runs.

    The products with ``other`` are summed as they are made (``einsum``), not
    written out first: one pass over memory less.

    float32 sums of 64 rows at a time, then float64: as exact as the BLAS dots
    of the MXNet-layout path (a batch whose mean is many standard deviations
    needs that: one float32 sum over all rows moved ResNet-18 v2's SGD step
    2.6e-4 away from MXNet's). ``einsum``'s loop, not a BLAS product with ones:
    after oneDNN's OpenMP team ran, OpenBLAS's threads took 20x longer for those.
    """
    n, size, channels = rows.shape
    whole = size // block * block
    operands = (rows,) if other is None else (rows, other)
    total = np.zeros(channels, np.float64)
    if whole:
        runs = [a[:, :whole].reshape(n, whole // block, block, channels) for a in operands]
        spec = ",".join(["nkbc"] * len(runs)) + "->nkc"
        total += np.einsum(spec, *runs).sum(axis=(0, 1), dtype=np.float64)
    if whole < size:
        rest = [a[:, whole:] for a in operands]
        spec = ",".join(["nsc"] * len(rest)) + "->nc"
        total += np.einsum(spec, *rest).sum(axis=0, dtype=np.float64)
    return total


def _rows_forward(x, scale, beta, eps, stats):
    # the element-wise passes run in parts on the pool's threads, the sums once over all
    rows = _rows(x)
    count = rows.shape[0] * rows.shape[1]
    xhat, out = np.empty_like(rows), np.empty_like(rows)
    dtype = x.dtype
    if stats is None:
        mean = (_column_sums(rows) / count).astype(dtype)
    else:
        mean = stats[0].astype(dtype, copy=False)

    def centre(start, stop):  # x - mean, into xhat
        np.subtract(rows[start:stop], mean, out=xhat[start:stop])

    parallel.split(centre, len(rows), 2 * rows.size)
    var = (_column_sums(xhat, xhat) / count).astype(dtype) if stats is None else stats[1]
    invstd = (1 / np.sqrt(var + eps)).astype(dtype)
    weight, shift = (invstd * scale).astype(dtype), beta.astype(dtype, copy=False)

    def scale_rows(start, stop):
        np.multiply(xhat[start:stop], weight, out=out[start:stop])
        out[start:stop] += shift
        xhat[start:stop] *= invstd

    parallel.split(scale_rows, len(rows), 3 * rows.size)
    if stats is not None:
        mean, var = stats
    return _as_input(out, x), _as_input(xhat, x), mean, var, invstd


def _rows_backward(grad, xhat, factor, batch_stats, need):
    g, xh = _rows(grad), _rows(xhat)
    count = g.shape[0] * g.shape[1]
    need_dx = need[0]
    need_product = need[1] or (need_dx and batch_stats)
    need_sum = need[2] or (need_dx and batch_stats)
    product_sum = _column_sums(g, xh) if need_product else None
    grad_sum = None
    if need_sum:
        grad_sum = _column_sums(g)
    if not need_dx:
        return None, product_sum, grad_sum
    factor = factor.astype(g.dtype, copy=False)
    dx = np.empty_like(g)
    if batch_stats:
        mean_grad = (grad_sum / count).astype(g.dtype)
        mean_product = (product_sum / count).astype(g.dtype)

    def input_grad(start, stop):
        d = dx[start:stop]
        if not batch_stats:
            np.multiply(g[start:stop], factor, out=d)
            return
        # factor * (grad - mean(grad) - x̂ * mean(grad * x̂)), in d
        np.multiply(xh[start:stop], mean_product, out=d)
        np.subtract(g[start:stop], d, out=d)
        d -= mean_grad
        d *= factor

    parallel.split(input_grad, len(g), 4 * g.size)
    return _as_input(dx, grad), product_sum, grad_sum
