"""Sliding-window geometry and the im2col/col2im kernels shared by conv and pooling.

A ``Window`` describes a kernel sliding over the spatial axes of an array:
kernel, stride, dilation and padding per axis, the unpadded spatial size and
the number of positions per axis. Everything here works on any number of
spatial axes (1-D, 2-D, 3-D) and on NumPy and CuPy alike.

The convolution kernels work channel-first with the batch moved: "batch last"
(C, *spatial, N) for small images, (C, N, *spatial) when output rows are long
(``batch_last_for``). Every slice taken at one kernel offset is then made of
long contiguous runs (rows times the batch, or whole rows), so im2col and
col2im are a few large copies and adds instead of millions of short ones.
``to_work`` / ``from_work`` convert from and to MXNet's (N, C, *spatial).
"""

import functools
import importlib
import itertools
import math

import attrs
import numpy

from rebind.backends.cupy_kernels import fusable

from . import parallel, workspace

__all__ = [
    "Window",
    "conv_out_size",
    "to_batch_last",
    "from_batch_last",
    "batch_last_for",
    "to_work",
    "from_work",
    "empty_in_layout",
    "pad_spatial",
    "crop_spatial",
    "im2col",
    "col2im",
    "work_dtype",
    "CHANNEL_FIRST",
    "SPATIAL_NAMES",
    "check_window_params",
    "check_layout",
    "fill_window_params",
]

# NumPy copies a transposed array in the order of the destination, which is
# slow when the source rows are long; copying in bands of rows keeps both sides
# in cache (3-10x faster for activation-sized arrays).
_TRANSPOSE_BAND = 128
# Output rows at least this long make (C, N, *spatial) the better working layout.
_LONG_ROW = 16


def conv_out_size(size, kernel, stride, dilate, pad):
    """Window positions along one axis: floor((size + 2 pad - dilated kernel) / stride) + 1."""
    return (size + 2 * pad - dilate * (kernel - 1) - 1) // stride + 1


def work_dtype(dtype):
    """The dtype kernels compute in: float32 for float16 (no fast float16 BLAS), else dtype."""
    return numpy.dtype(numpy.float32) if numpy.dtype(dtype) == numpy.float16 else dtype


@attrs.frozen
class Window:
    """A kernel sliding over ``len(kernel)`` spatial axes.

    Attributes:
        kernel, stride, dilate, pad: per spatial axis.
        size: the unpadded spatial size of the input.
        out: the number of window positions along each axis.
    """

    kernel: tuple
    stride: tuple
    dilate: tuple
    pad: tuple
    size: tuple
    out: tuple
    # worked out once (a GPU step reads them several times per window): the span of
    # one (dilated) window along each axis; the spatial size of the padded input
    # (windows of 'full' pooling may run past the pad)
    extent: tuple = attrs.field(init=False, eq=False, repr=False)
    padded: tuple = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self):
        extent = tuple(d * (k - 1) + 1 for k, d in zip(self.kernel, self.dilate, strict=True))
        padded = tuple(
            max(n + 2 * p, (o - 1) * s + e)
            for n, p, o, s, e in zip(
                self.size, self.pad, self.out, self.stride, extent, strict=True
            )
        )
        object.__setattr__(self, "extent", extent)
        object.__setattr__(self, "padded", padded)

    @property
    def overlapping(self):
        """Whether some input element lies in more than one window."""
        return any(s < e for s, e in zip(self.stride, self.extent, strict=True))

    @property
    def pointwise(self):
        """A 1x1 kernel, stride 1, no padding: the columns are the input itself."""
        return (
            all(k == 1 for k in self.kernel)
            and all(s == 1 for s in self.stride)
            and not any(self.pad)
        )

    def positions(self):
        """Every kernel offset, in row-major order (the order MXNet scans a window)."""
        return itertools.product(*(range(k) for k in self.kernel))

    def taps(self, position, first_axis):
        """Index selecting, at kernel ``position``, the input under every window.

        ``first_axis`` is the axis of the padded array where the spatial axes start.
        """
        spatial = tuple(
            slice(i * d, i * d + s * (o - 1) + 1, s)
            for i, d, s, o in zip(position, self.dilate, self.stride, self.out, strict=True)
        )
        return (slice(None),) * first_axis + spatial


def _new(shape, dtype, scratch):
    """A new NumPy array; with ``scratch`` one kept from the last step (``workspace``)."""
    return workspace.take(shape, dtype) if scratch else numpy.empty(shape, dtype)


def _transpose2d(xp, a, scratch=False):
    """A C-contiguous copy of ``a.T`` for a 2-D array."""
    rows, cols = a.shape
    if xp is not numpy or rows <= cols or rows * cols < 1 << 16:
        return xp.ascontiguousarray(a.T)
    out = _new((cols, rows), a.dtype, scratch)

    def bands(first, last):  # bands first..last-1 of the rows
        for start in range(
            first * _TRANSPOSE_BAND, min(last * _TRANSPOSE_BAND, rows), _TRANSPOSE_BAND
        ):
            out[:, start : start + _TRANSPOSE_BAND] = a[start : start + _TRANSPOSE_BAND].T

    parallel.split(bands, -(-rows // _TRANSPOSE_BAND), 2 * a.size)
    return out


def to_batch_last(xp, x, scratch=False):
    """(N, C, *spatial) -> contiguous (C, *spatial, N)."""
    batch = x.shape[0]
    return _transpose2d(xp, x.reshape(batch, -1), scratch).reshape(*x.shape[1:], batch)


def from_batch_last(xp, y):
    """(C, *spatial, N) -> contiguous (N, C, *spatial)."""
    batch = y.shape[-1]
    return _transpose2d(xp, y.reshape(-1, batch)).reshape(batch, *y.shape[:-1])


def batch_last_for(window):
    """Which working layout suits ``window``: batch last unless output rows are long.

    Copies and adds over one kernel offset run along the innermost axis; with
    the batch innermost that run is the batch (times the row for stride 1),
    with (C, N, *spatial) it is one output row, which is better only when rows
    are long and saves the costlier batch-last transposes.
    """
    return window.out[-1] < _LONG_ROW


def to_work(xp, x, batch_last, scratch=False):
    """(N, C, *spatial) -> contiguous (C, *spatial, N) or (C, N, *spatial).

    An ``x`` that is already a view of such an array (``from_work(...,
    view=True)``) gives that array back, without a copy. ``scratch``: the copy
    lives for one step only (a gradient), its memory is reused (``workspace``).
    """
    if not batch_last:
        return _swap_first_axes(xp, x, scratch)
    moved = x.transpose(*range(1, x.ndim), 0)
    if moved.flags.c_contiguous:
        return moved
    return to_batch_last(xp, x, scratch)


def from_work(xp, y, batch_last, view=False):
    """The inverse of ``to_work``: a contiguous (N, C, *spatial) array.

    With ``view``, a batch-last ``y`` is returned as a transposed view of
    itself: the same (N, C, *spatial) values with the batch innermost in
    memory, for readers that take any layout (``OpContext.batch_last_out``).
    """
    if batch_last and view:
        return y.transpose(y.ndim - 1, *range(y.ndim - 1))
    return from_batch_last(xp, y) if batch_last else _swap_first_axes(xp, y)


def _swap_first_axes(xp, x, scratch=False):
    """A contiguous copy of ``x`` with its first two axes exchanged."""
    swapped = x.swapaxes(0, 1)
    if xp is not numpy or swapped.flags.c_contiguous:
        return xp.ascontiguousarray(swapped)
    out = _new(swapped.shape, x.dtype, scratch)

    def part(start, stop):
        out[start:stop] = swapped[start:stop]

    parallel.split(part, out.shape[0], 2 * x.size)
    return out


def empty_in_layout(xp, like, shape, dtype=None, fill=None):
    """A new array of ``shape`` whose axes lie in memory in the order of ``like``'s.

    NumPy only (another module, or a C-contiguous ``like``: C order). Element-wise
    work between the two then runs along the same contiguous axis. ``dtype``
    defaults to ``like``'s; ``fill`` fills it.
    """
    dtype = like.dtype if dtype is None else dtype
    if xp is not numpy or like.flags.c_contiguous or like.ndim != len(shape):
        return xp.empty(shape, dtype) if fill is None else xp.full(shape, fill, dtype)
    order = sorted(range(like.ndim), key=lambda axis: -like.strides[axis])
    physical = numpy.empty([shape[axis] for axis in order], dtype)
    if fill is not None:
        physical.fill(fill)
    return physical.transpose(numpy.argsort(order))


def _interior(window, first_axis):
    return (slice(None),) * first_axis + tuple(
        slice(p, p + n) for p, n in zip(window.pad, window.size, strict=True)
    )


def pad_spatial(xp, a, window, first_axis, fill=0):
    """``a`` with its spatial axes (from ``first_axis``) padded to ``window.padded``.

    Returns ``a`` itself when no padding is needed.
    """
    if window.padded == window.size:
        return a
    shape = list(a.shape)
    shape[first_axis : first_axis + len(window.kernel)] = window.padded
    if xp is not numpy:
        padded = empty_in_layout(xp, a, shape, fill=fill)
        padded[_interior(window, first_axis)] = a
        return padded
    padded = (
        workspace.take(shape, a.dtype) if a.flags.c_contiguous else empty_in_layout(xp, a, shape)
    )
    interior = _interior(window, first_axis)
    # the parts along the longest axis before the spatial ones (channels or the batch)
    along = max(range(first_axis), key=lambda axis: a.shape[axis])

    def fill_part(start, stop):
        select = (slice(None),) * along + (slice(start, stop),)
        part = padded[select]
        # the border slabs and the interior: every element written once (corners twice)
        for axis, (p, n) in enumerate(zip(window.pad, window.size, strict=True)):
            before = (slice(None),) * (first_axis + axis)
            part[(*before, slice(0, p))] = fill
            part[(*before, slice(p + n, None))] = fill
        part[interior] = a[select]

    parallel.split(fill_part, a.shape[along], padded.size)
    return padded


def crop_spatial(a, window, first_axis):
    """The unpadded part of a padded array (a view)."""
    if window.padded == window.size:
        return a
    return a[_interior(window, first_axis)]


@functools.cache
def _stride_tricks(xp):
    try:
        return importlib.import_module(f"{xp.__name__}.lib.stride_tricks")
    except ImportError:
        return None


def _column_shape(window, channels, batch, batch_last):
    """Columns as (C, *kernel, *out, N) or (C, *kernel, N, *out)."""
    if batch_last:
        return (channels, *window.kernel, *window.out, batch)
    return (channels, *window.kernel, batch, *window.out)


def _window_view(xp, padded, window, batch_last):
    """The columns as a strided view of the padded input, or None without stride tricks."""
    tricks = _stride_tricks(xp)
    if tricks is None or not hasattr(tricks, "as_strided"):
        return None
    nd = len(window.kernel)
    spatial = padded.strides[1 : 1 + nd] if batch_last else padded.strides[2:]
    batch = padded.strides[-1] if batch_last else padded.strides[1]
    kernel = tuple(st * d for st, d in zip(spatial, window.dilate, strict=True))
    out = tuple(st * s for st, s in zip(spatial, window.stride, strict=True))
    strides = (padded.strides[0], *kernel, *((*out, batch) if batch_last else (batch, *out)))
    shape = _column_shape(
        window, padded.shape[0], padded.shape[-1 if batch_last else 1], batch_last
    )
    return tricks.as_strided(padded, shape, strides)


def im2col(xp, xt, window, batch_last, use_view=True):
    """Columns (C * prod(kernel), N * prod(out)) of a working-layout input.

    Row ``(c, k...)`` holds, for every window position and batch item, the
    input element under kernel offset ``k`` of channel ``c``; the columns run
    over (out..., N) or (N, out...) as the layout does. The result is a new
    array (callers may write over it) except for a pointwise window, where it
    is ``xt`` reshaped.
    """
    channels, batch = xt.shape[0], xt.shape[-1 if batch_last else 1]
    rows, columns = channels * math.prod(window.kernel), math.prod(window.out) * batch
    if window.pointwise:
        return xt.reshape(rows, columns)
    first = 1 if batch_last else 2
    padded = pad_spatial(xp, xt, window, first)
    shape = _column_shape(window, channels, batch, batch_last)
    cols = workspace.take(shape, xt.dtype) if xp is numpy else xp.empty(shape, dtype=xt.dtype)
    view = _window_view(xp, padded, window, batch_last) if use_view else None

    def copy(start, stop):
        if view is not None:
            cols[start:stop] = view[start:stop]
            return
        # without stride tricks: one strided copy per kernel offset
        for position in window.positions():
            cols[(slice(start, stop), *position)] = padded[window.taps(position, first)][start:stop]

    if xp is numpy:  # channels on every thread (the same copies)
        parallel.split(copy, channels, cols.size)
    else:
        copy(0, channels)
    return cols.reshape(rows, columns)


def _padded_shape(window, channels, batch, batch_last):
    if batch_last:
        return (channels, *window.padded, batch)
    return (channels, batch, *window.padded)


def col2im(xp, cols, window, channels, batch, batch_last, kernel_major=False):
    """The adjoint of ``im2col``: sums columns back onto a working-layout array.

    ``kernel_major`` (NumPy): the rows of ``cols`` are ordered (*kernel, C)
    instead of (C, *kernel), so each kernel offset's rows are one contiguous
    block, which NumPy adds faster; the sums are the same, in the same order.
    """
    first, nd = (1 if batch_last else 2), len(window.kernel)
    shape = _column_shape(window, channels, batch, batch_last)
    if window.pointwise:
        return cols.reshape(_padded_shape(window, channels, batch, batch_last))
    if kernel_major:
        cols = cols.reshape(*window.kernel, channels, *shape[1 + nd :])
    else:
        cols = cols.reshape(shape)
        if fusable(cols) and nd <= 3:  # one kernel on the GPU, the same sums
            from rebind.backends import cupy_window_kernels

            padded = cupy_window_kernels.col2im(xp, cols, window, channels, batch, batch_last)
            return crop_spatial(padded, window, first)
    shape = _padded_shape(window, channels, batch, batch_last)
    if xp is numpy:  # zeroed by the parts below, on their threads
        padded = workspace.take(shape, cols.dtype)
    else:
        padded = xp.zeros(shape, dtype=cols.dtype)

    def add(start, stop):
        part = slice(start, stop)
        if xp is numpy:
            padded[part] = 0
        for position in window.positions():
            target = padded[window.taps(position, first)][part]
            # in place on the view, no write-back copy
            target += cols[position][part] if kernel_major else cols[(part, *position)]

    if xp is numpy:  # channels on every thread (the same sums, in the same order)
        parallel.split(add, channels, cols.size)
    else:
        add(0, channels)
    return crop_spatial(padded, window, first)


# -- parameters shared by Convolution, Deconvolution and Pooling ---------------

CHANNEL_FIRST = ("NCW", "NCHW", "NCDHW")
SPATIAL_NAMES = ("width", "height, width", "depth, height, width")


def check_window_params(op_name, params, positive=(), non_negative=()):
    """Validate kernel and the per-axis tuples named in ``positive``/``non_negative``.

    Raises ValueError (reported as ParamError) for bad values, NotImplementedError
    for a channel-last layout.
    """
    kernel = params.kernel
    if not 1 <= len(kernel) <= 3 or any(k <= 0 for k in kernel):
        raise ValueError(f"parameter kernel={kernel} is invalid: expected 1 to 3 positive sizes")
    for name in (*positive, *non_negative):
        value = getattr(params, name)
        if value and len(value) != len(kernel):
            raise ValueError(
                f"parameter {name}={value} is invalid: it has {len(value)} "
                f"dimension(s) but kernel={kernel} has {len(kernel)}"
            )
        floor = 1 if name in positive else 0
        if value and any(v < floor for v in value):
            raise ValueError(f"parameter {name}={value} is invalid: values must be >= {floor}")
    check_layout(op_name, params.layout, len(kernel))


def check_layout(op_name, layout, spatial_axes):
    """Accept None or the channel-first layout with ``spatial_axes`` spatial axes."""
    if layout is None or spatial_axes is None:
        return
    wanted = CHANNEL_FIRST[spatial_axes - 1]
    if len(layout) != spatial_axes + 2:
        raise ValueError(
            f"parameter layout={layout!r} is invalid: a {spatial_axes}-D kernel "
            f"works on {wanted} data"
        )
    if layout != wanted:
        raise NotImplementedError(
            f"{op_name}: layout={layout!r} is not supported; only channel-first layouts "
            f"({', '.join(CHANNEL_FIRST)}) are implemented: transpose the data to {wanted}"
        )


def fill_window_params(params):
    """(kernel, stride, dilate, pad) with MXNet's defaults (1, 1, 0) where not given."""
    ones, zeros = (1,) * len(params.kernel), (0,) * len(params.kernel)
    dilate = getattr(params, "dilate", ()) or ones
    return params.kernel, params.stride or ones, dilate, params.pad or zeros
