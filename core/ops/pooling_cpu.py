"""Max pooling over NumPy arrays: unit-stride taps, channels split over the CPUs' threads.

A strided window (ResNet's 3x3, stride 2) reads every tap with a stride of 2
along the last axis, where NumPy's comparisons and maxima run about twice as
slow as on contiguous runs. Here the padded input is cut once into its
``stride`` phases along that axis (columns 0, s, 2s, ... ; 1, s + 1, ... ;
each a contiguous copy), so every tap is a unit-stride slice of one phase;
backward sums into phases the same way and interleaves them back once. The
operations are those of the generic kernel (``pooling.py``): each window's
gradient goes to its first maximum in row-major order, as MXNet does.
"""

import attrs
import numpy as np

from rebind.backends.cupy_kernels import fusable

from . import parallel

__all__ = ["Phases", "applies", "max_backward", "max_forward"]


def applies(xp, padded, window):
    """Whether these kernels take ``padded``: NumPy, C-contiguous, strided along its last axis."""
    # not an array the GPU kernels claim (the host tests of the GPU branches, ``fusable``)
    return xp is np and padded.flags.c_contiguous and window.stride[-1] > 1 and not fusable(padded)


@attrs.frozen
class Phases:
    """A padded input cut in ``stride`` phases along its last axis (what backward reads)."""

    arrays: dict  # phase r -> contiguous padded[..., r::s]
    shape: tuple  # the padded input's
    dtype: object


def _phase_of(window, offset):
    """(phase, first column in it) of kernel offset ``offset`` along the last axis."""
    column = offset * window.dilate[-1]
    return column % window.stride[-1], column // window.stride[-1]


def _taps(window):
    """Per kernel offset: (phase, index into that phase's array) of every window's element."""
    taps = []
    for position in window.positions():
        index = window.taps(position, 2)
        phase, first = _phase_of(window, position[-1])
        taps.append((phase, (*index[:-1], slice(first, first + window.out[-1]))))
    return taps


def _channels(start, stop):
    return (slice(None), slice(start, stop))


def max_forward(padded, window):
    """``(out, phases)``: max pooling of ``padded`` and its phases, for backward."""
    stride = window.stride[-1]
    taps = _taps(window)
    used = sorted({phase for phase, _ in taps})
    arrays = {r: np.empty((*padded.shape[:-1], len(range(r, padded.shape[-1], stride))),
                          padded.dtype) for r in used}  # fmt: skip
    out = np.empty((*padded.shape[:2], *window.out), padded.dtype)

    def part(start, stop):
        select = _channels(start, stop)
        for r, array in arrays.items():
            array[select] = padded[select][..., r::stride]
        result = out[select]
        first = arrays[taps[0][0]][select][taps[0][1]]
        if len(taps) == 1:
            result[...] = first
        for i, (phase, index) in enumerate(taps[1:]):
            np.maximum(first if i == 0 else result, arrays[phase][select][index], out=result)

    parallel.split(part, padded.shape[1], padded.size * 2 + out.size * len(taps))
    return out, Phases(arrays, padded.shape, padded.dtype)


def max_backward(phases, out, grad, window, dtype):
    """The input gradient (unpadded, C order) of max pooling with ``phases`` saved."""
    taps = _taps(window)
    grads = {r: np.empty(array.shape, dtype) for r, array in phases.arrays.items()}
    dx = np.empty((*out.shape[:2], *window.size), dtype)

    def part(start, stop):
        select = _channels(start, stop)
        for array in grads.values():
            array[select] = 0
        _sum_to_maxima(
            {r: a[select] for r, a in phases.arrays.items()},
            {r: a[select] for r, a in grads.items()},
            out[select],
            grad[select],
            taps,
        )
        _interleave(window, {r: a[select] for r, a in grads.items()}, dx[select])

    parallel.split(part, out.shape[1], 4 * phases.arrays[taps[0][0]].size * len(taps))
    return dx


def _sum_to_maxima(arrays, grads, out, grad, taps):
    """Each window's gradient added at its first maximum, in row-major order."""
    taken = np.empty(out.shape, bool)
    hit = np.empty(out.shape, bool)
    product = np.empty(out.shape, grad.dtype)
    for i, (phase, index) in enumerate(taps):
        mask = taken if i == 0 else hit
        np.equal(arrays[phase][index], out, out=mask)
        if i:
            np.greater(mask, taken, out=mask)  # hit and not taken
        np.multiply(grad, mask, out=product)
        target = grads[phase][index]
        target += product
        if i and i < len(taps) - 1:
            taken |= mask


def _interleave(window, grads, dx):
    """The phases' sums, cropped to the unpadded input, into ``dx``'s columns."""
    stride, pad, width = window.stride[-1], window.pad[-1], window.size[-1]
    rows = tuple(slice(p, p + n) for p, n in zip(window.pad[:-1], window.size[:-1], strict=True))
    for first in range(min(stride, width)):
        phase, start = (first + pad) % stride, (first + pad) // stride
        count = len(range(first, width, stride))
        target = dx[..., first::stride]
        if phase in grads:
            target[...] = grads[phase][
                (slice(None), slice(None), *rows, slice(start, start + count))
            ]
        else:  # no kernel offset reads these columns
            target[...] = 0
