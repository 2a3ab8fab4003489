"""CuPy kernels the GPU backend uses where CuPy's own operations fall short.

``ordered_scatter_add``: ``target[rows[i]] += values[i]`` with the additions of
each row in ascending ``i``, as ``numpy.add.at`` makes them. CuPy's ``add.at``
adds with atomics, in whatever order the threads arrive, so float sums change
from run to run in their last bits (the gradient of Embedding and take, and so
a resumed fit, were not reproducible on the GPU). Here the indices are sorted
stably (CuPy's argsort is stable), and one thread per (row, column) adds its
row's values in that order: the same sum as NumPy's, bit for bit, every run,
with no host synchronisation.

Kernels are compiled on first use; importing this module does not import CuPy.
"""

__all__ = ["ordered_scatter_add"]

_KERNELS = {}

# the body runs inside CuPy's grid-stride loop over i: no early return, a thread may
# handle several positions
_SEGMENT_ADD_BODY = """
    const long long j = i / width;
    const long long col = i % width;
    const long long row = sorted_rows[j];
    if (j == 0 || sorted_rows[j - 1] != row) {  // the first of its row adds the whole run
        T acc = target[row * width + col];
        for (long long k = j; k < n && sorted_rows[k] == row; ++k) {
            acc += values[order[k] * width + col];
        }
        target[row * width + col] = acc;
    }
"""


def _segment_add(cupy):
    kernel = _KERNELS.get("segment_add")
    if kernel is None:
        kernel = _KERNELS["segment_add"] = cupy.ElementwiseKernel(
            "raw T values, raw int64 order, raw int64 sorted_rows, int64 n, int64 width",
            "raw T target",
            _SEGMENT_ADD_BODY,
            "rebind_ordered_segment_add",
        )
    return kernel


def ordered_scatter_add(cupy, target, rows, values):
    """``target[rows[i]] += values[i]`` along the first axis, in NumPy's order (see above).

    ``target`` is a C-contiguous CuPy array changed in place; ``rows`` holds
    ``n`` row indices (any shape, non-negative); ``values`` holds ``n`` slices
    of ``target[0]``'s shape (or broadcasts to them).
    """
    if not target.flags.c_contiguous:
        raise ValueError("ordered_scatter_add: target must be C-contiguous (it is written)")
    rows = rows.reshape(-1).astype(cupy.int64, copy=False)
    n = rows.size
    if n == 0:
        return
    width = target.size // target.shape[0] if target.shape[0] else 0
    values = cupy.broadcast_to(values, (n, *target.shape[1:])).astype(target.dtype, copy=False)
    values = cupy.ascontiguousarray(values).reshape(n, width)
    order = cupy.argsort(rows).astype(cupy.int64, copy=False)
    sorted_rows = rows[order]
    _segment_add(cupy)(values, order, sorted_rows, n, width, target, size=n * width)
