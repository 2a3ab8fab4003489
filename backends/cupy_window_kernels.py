"""CuPy kernels of the sliding-window operators: col2im and max pooling, one launch each.

On the CPU, ``conv_utils.col2im`` adds one strided slice per kernel offset and
max pooling takes one maximum (forward) and four array operations (backward)
per offset: a 5x5 convolution's data gradient is 25 additions, a 2x2 pool's
backward 16 operations. On a GPU each is a kernel launch over a small array,
and launches dominate a small network's step. Here each is one kernel with
one thread per output element, which gathers what the CPU's loop scatters:

- ``col2im``: each element of the padded input sums the columns of the
  kernel offsets that cover it, in the CPU's row-major offset order, starting
  from zero (the CPU adds into zeros): the same sums, bit for bit.
- ``max_pool_forward``: each window's maximum over its offsets in row-major
  order; a NaN anywhere gives NaN (``maximum`` propagates it).
- ``max_pool_backward``: each padded input element takes, for every window
  that covers it (in row-major offset order), ``grad * hit``, where ``hit``
  says whether it is that window's first element equal to the maximum (MXNet's
  choice on ties). Overlapping windows add into zero, as the CPU does;
  otherwise the single term is written.

Geometry (kernel, stride, dilate, window positions, padded size) is passed as
15 scalars, three per quantity, a missing axis being size 1. Kernel code avoids ``n``,
``i`` as names of its own and leading underscores (CuPy reserves them) and
never returns early (bodies run in a grid-stride loop). Importing this module
does not import CuPy.
"""

import functools

from .cupy_kernels import _kernel

__all__ = ["col2im", "max_pool_backward", "max_pool_forward", "window_geometry"]

_AXES = 3


@functools.lru_cache(maxsize=256)
def window_geometry(window):
    """The window's geometry as 5 x 3 ints for the kernels (kernel, stride, dilate, out, padded)."""
    spatial = len(window.kernel)
    if spatial > _AXES:
        raise ValueError(f"window kernels take up to {_AXES} spatial axes, got {spatial}")
    fill = (1,) * (_AXES - spatial)
    return tuple(
        int(v)
        for values in (window.kernel, window.stride, window.dilate, window.out, window.padded)
        for v in (*values, *fill)
    )


# the geometry arrives as 15 scalars (no array to copy to the device per call) and is
# gathered into g at the top of every body
_GEOMETRY_PARAMS = ", ".join(f"int64 g{k}" for k in range(15))
_GEOMETRY = "    const long long g[15] = {" + ", ".join(f"g{k}" for k in range(15)) + "};\n"


# geometry g: kernel g[0..2], stride g[3..5], dilate g[6..8], out g[9..11], padded g[12..14]
_SPATIAL_INDEX = """
    const long long p1 = g[13], p2 = g[14];  // the padded size (its first axis is not needed)
    const long long q2 = rest % p2;
    const long long q1 = (rest / p2) % p1;
    const long long q0 = rest / (p2 * p1);
"""

# for each kernel offset k (row-major) whose window position o covers element q of the
# padded input, the body that follows runs with k0..k2 and o[3]; it sums into acc
_COVERING_OFFSETS = """
    const long long q[3] = {q0, q1, q2};
    T acc = T(0);
    for (long long k0 = 0; k0 < g[0]; ++k0)
    for (long long k1 = 0; k1 < g[1]; ++k1)
    for (long long k2 = 0; k2 < g[2]; ++k2) {
        const long long k[3] = {k0, k1, k2};
        long long o[3];
        bool covered = true;
        for (int a = 0; a < 3; ++a) {
            const long long t = q[a] - k[a] * g[6 + a];
            if (t < 0 || t % g[3 + a] != 0 || t / g[3 + a] >= g[9 + a]) {
                covered = false;
            } else {
                o[a] = t / g[3 + a];
            }
        }
        if (covered) {
"""

_COL2IM_BODY = (
    _GEOMETRY
    + """
    long long rest, chan, item;
    if (batch_last) {  // padded (C, P0, P1, P2, N)
        item = i % batch;
        rest = (i / batch) % (g[12] * g[13] * g[14]);
        chan = i / (batch * g[12] * g[13] * g[14]);
    } else {  // padded (C, N, P0, P1, P2)
        rest = i % (g[12] * g[13] * g[14]);
        item = (i / (g[12] * g[13] * g[14])) % batch;
        chan = i / (batch * g[12] * g[13] * g[14]);
    }
"""
    + _SPATIAL_INDEX
    + _COVERING_OFFSETS
    + """
            long long at = ((chan * g[0] + k0) * g[1] + k1) * g[2] + k2;
            if (batch_last) {
                at = ((at * g[9] + o[0]) * g[10] + o[1]) * g[11] + o[2];
                at = at * batch + item;
            } else {
                at = at * batch + item;
                at = ((at * g[9] + o[0]) * g[10] + o[1]) * g[11] + o[2];
            }
            acc += cols[at];
        }
    }
    padded[i] = acc;
"""
)


def col2im(cupy, cols, window, channels, batch, batch_last):
    """``conv_utils.col2im`` before cropping: the padded working-layout array, one kernel."""
    cols = cupy.ascontiguousarray(cols)
    shape = (channels, *window.padded, batch) if batch_last else (channels, batch, *window.padded)
    padded = cupy.empty(shape, dtype=cols.dtype)
    kernel = _kernel(
        cupy,
        "rebind_col2im",
        f"raw T cols, {_GEOMETRY_PARAMS}, int64 batch, bool batch_last",
        "raw T padded",
        _COL2IM_BODY,
    )
    kernel(cols, *window_geometry(window), batch, batch_last, padded, size=padded.size)
    return padded


# pooling arrays are (N, C, *spatial): a thread's plane is i / (spatial size)

_POOL_FORWARD_BODY = (
    _GEOMETRY
    + """
    const long long o2 = i % g[11];
    const long long o1 = (i / g[11]) % g[10];
    const long long o0 = (i / (g[11] * g[10])) % g[9];
    const long long plane = i / (g[11] * g[10] * g[9]);
    const long long base = plane * g[12] * g[13] * g[14];
    T best = T(0);
    bool first = true;
    for (long long k0 = 0; k0 < g[0]; ++k0)
    for (long long k1 = 0; k1 < g[1]; ++k1)
    for (long long k2 = 0; k2 < g[2]; ++k2) {
        const long long q0 = o0 * g[3] + k0 * g[6];
        const long long q1 = o1 * g[4] + k1 * g[7];
        const long long q2 = o2 * g[5] + k2 * g[8];
        const T value = x[base + (q0 * g[13] + q1) * g[14] + q2];
        if (first) {
            best = value;
            first = false;
        } else if (best == best && (value > best || value != value)) {
            best = value;
        }
    }
    out[i] = best;
"""
)


def max_pool_forward(cupy, padded, window):
    """Each window's maximum of the padded ``(N, C, *spatial)`` input (C-contiguous)."""
    shape = (*padded.shape[:2], *window.out)
    out = cupy.empty(shape, dtype=padded.dtype)
    kernel = _kernel(
        cupy,
        "rebind_max_pool_forward",
        f"raw T x, {_GEOMETRY_PARAMS}",
        "raw T out",
        _POOL_FORWARD_BODY,
    )
    kernel(padded, *window_geometry(window), out, size=out.size)
    return out


_POOL_BACKWARD_BODY = (
    _GEOMETRY
    + """
    const long long rest = i % (g[12] * g[13] * g[14]);
    const long long plane = i / (g[12] * g[13] * g[14]);
    const long long base = plane * g[12] * g[13] * g[14];
    const long long windows = plane * g[9] * g[10] * g[11];
    const T mine = x[i];
"""
    + _SPATIAL_INDEX
    + _COVERING_OFFSETS
    + """
            const long long at = windows + (o[0] * g[10] + o[1]) * g[11] + o[2];
            const T best = out[at];
            bool hit = mine == best;
            // only the window's first element equal to its maximum, in offset order
            const long long mine_offset = (k0 * g[1] + k1) * g[2] + k2;
            for (long long e = 0; hit && e < mine_offset; ++e) {
                const long long e0 = e / (g[1] * g[2]), e1 = (e / g[2]) % g[1], e2 = e % g[2];
                const long long r0 = o[0] * g[3] + e0 * g[6];
                const long long r1 = o[1] * g[4] + e1 * g[7];
                const long long r2 = o[2] * g[5] + e2 * g[8];
                if (x[base + (r0 * g[13] + r1) * g[14] + r2] == best) {
                    hit = false;
                }
            }
            const T term = grad[at] * (hit ? T(1) : T(0));
            if (overlapping) {
                acc += term;
            } else {
                acc = term;
            }
        }
    }
    dx[i] = acc;
"""
)


def max_pool_backward(cupy, padded, out, grad, window):
    """The padded input's gradient of max pooling (``pooling._max_backward``), one kernel."""
    grad = cupy.ascontiguousarray(grad)
    dx = cupy.empty(padded.shape, dtype=padded.dtype)
    kernel = _kernel(
        cupy,
        "rebind_max_pool_backward",
        f"raw T x, raw T out, raw T grad, {_GEOMETRY_PARAMS}, bool overlapping",
        "raw T dx",
        _POOL_BACKWARD_BODY,
    )
    kernel(padded, out, grad, *window_geometry(window), window.overlapping, dx, size=dx.size)
    return dx
