"""Convolution's data gradient on NumPy as a convolution of the output's gradient.

For a stride-1 convolution the data gradient is itself a convolution: of the
output's gradient, padded by ``dilate * (kernel - 1) - pad``, with the
filters flipped along every spatial axis and their two channel axes
exchanged. The generic path (``conv.py``) multiplies the filters' transpose
into columns and sums them back with ``col2im``: a product whose inner size
is only the filter count (64 in ResNet's first stage, where OpenBLAS ran at
59 GFLOP/s against 73 here), then kernel-size strided additions over the
result. Here, columns of the gradient (``im2col``, copies) and one product
with an inner size of filters times kernel, written in the input's working
layout: 6-10% less time for ResNet's 3x3 convolutions at 56x56 and 32x32 (one
thread). The sums are the same terms in another order (float rounding).
"""

import math

from . import workspace
from .conv_utils import Window, im2col

__all__ = ["MIN_CHANNELS", "applies", "data_gradient"]

MIN_CHANNELS = 16


def applies(xp, window, groups, channels):
    """Whether ``data_gradient`` takes this convolution (and pays).

    NumPy, one group, stride 1 and 'same' padding (``2 pad = dilate (kernel -
    1)``), so the gradient's columns are as many as the input's; and at least
    ``MIN_CHANNELS`` input channels, the rows of the product. Elsewhere the
    padded gradient's columns or a product of few rows cost more than they
    save (LeNet's 5x5 convolutions without padding: 17 against 8 ms).
    """
    import numpy  # noqa: PLC0415 (a NumPy path only)

    return (
        xp is numpy
        and groups == 1
        and channels >= MIN_CHANNELS
        and not window.pointwise
        and all(s == 1 for s in window.stride)
        and all(
            2 * p == d * (k - 1)
            for p, d, k in zip(window.pad, window.dilate, window.kernel, strict=True)
        )
    )


def data_gradient(xp, weight, grad, window, batch_last, scratch=False):
    """The data gradient in the working layout, from ``grad`` (filters, *work_shape).

    ``weight`` is (filters, channels * prod(kernel)); with ``scratch`` the result
    is a ``workspace`` array (the caller copies it out).
    """
    filters, channels = weight.shape[0], weight.shape[1] // math.prod(window.kernel)
    flipped = weight.reshape(filters, channels, *window.kernel)
    spatial = tuple(range(2, 2 + len(window.kernel)))
    flipped = xp.flip(flipped, axis=spatial).swapaxes(0, 1)
    flipped = xp.ascontiguousarray(flipped).reshape(channels, -1)
    pad = tuple(
        d * (k - 1) - p for p, d, k in zip(window.pad, window.dilate, window.kernel, strict=True)
    )
    back = Window(window.kernel, window.stride, window.dilate, pad, window.out, window.size)
    cols = im2col(xp, grad, back, batch_last)
    out = workspace.take((channels, cols.shape[1]), cols.dtype) if scratch else None
    dx = xp.matmul(flipped, cols, out=out)
    batch = grad.shape[-1 if batch_last else 1]
    size = (*window.size, batch) if batch_last else (batch, *window.size)
    return dx.reshape(channels, *size)
