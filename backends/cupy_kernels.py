"""CuPy kernels the GPU backend uses where CuPy's own operations fall short.

``ordered_scatter_add``: ``target[rows[i]] += values[i]`` with the additions of
each row in ascending ``i``, as ``numpy.add.at`` makes them. CuPy's ``add.at``
adds with atomics, in whatever order the threads arrive, so float sums change
from run to run in their last bits (the gradient of Embedding and take, and so
a resumed fit, were not reproducible on the GPU). Here the indices are sorted
stably (CuPy's argsort is stable), and one thread per (row, column) adds its
row's values in that order: the same sum as NumPy's, bit for bit, every run,
with no host synchronisation.

The recurrent cells' kernels are in ``cupy_rnn_kernels``.

``sgd_step`` and ``adam_step``: the update rules of ``rebind.optimizer.rules``
as one fused kernel each, reading and writing every array once, where CuPy's
operations would make several passes and temporaries (SGD with momentum: 4
kernels and 2 temporaries). The operations are the rules', in their order; the
GPU compiler may contract a product and a sum into one fused multiply-add, so
results can differ from the CPU's in the last bit.

Kernels are compiled on first use; importing this module does not import CuPy.
"""

import numpy as np

__all__ = ["adam_step", "fusable", "is_cupy_array", "ordered_scatter_add", "sgd_step"]

_KERNELS = {}

# the body runs inside CuPy's grid-stride loop over i: no early return, a thread may
# handle several positions
_SEGMENT_ADD_BODY = """
    const long long j = i / width;
    const long long col = i % width;
    const long long row = sorted_rows[j];
    if (j == 0 || sorted_rows[j - 1] != row) {  // the first of its row adds the whole run
        T acc = target[row * width + col];
        for (long long k = j; k < count && sorted_rows[k] == row; ++k) {
            acc += values[order[k] * width + col];
        }
        target[row * width + col] = acc;
    }
"""


def _segment_add(cupy):
    kernel = _KERNELS.get("segment_add")
    if kernel is None:
        kernel = _KERNELS["segment_add"] = cupy.ElementwiseKernel(
            "raw T values, raw int64 order, raw int64 sorted_rows, int64 count, int64 width",
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
    rest = target.shape[1:]
    if values.size == n * width:  # one slice per index, in the indices' shape
        values = values.reshape(n, *rest)
    else:  # a scalar or a slice broadcast to every index
        values = cupy.broadcast_to(values, (n, *rest))
    values = cupy.ascontiguousarray(values.astype(target.dtype, copy=False)).reshape(n, width)
    order = cupy.argsort(rows).astype(cupy.int64, copy=False)
    sorted_rows = rows[order]
    _segment_add(cupy)(values, order, sorted_rows, n, width, target, size=n * width)


# the CuPy array types seen (cupy.ndarray and its subclasses): a set lookup per call
# instead of reading the type's module name
_CUPY_TYPES = set()


def is_cupy_array(array):
    """Whether ``array`` is a CuPy array (checked without importing CuPy)."""
    kind = type(array)
    if kind in _CUPY_TYPES:
        return True
    if kind.__module__.startswith("cupy"):
        _CUPY_TYPES.add(kind)
        return True
    return False


# dtype objects, not names: ``dtype.name`` is computed in Python at every read
_FUSED_DTYPES = frozenset(np.dtype(name) for name in ("float32", "float64"))


def fusable(*arrays, same_shape=False, contiguous=False):
    """Whether these kernels take ``arrays``: CuPy float32/float64 arrays of one dtype.

    None entries (an absent state) are skipped; ``same_shape`` and
    ``contiguous`` ask for one shape and C-contiguous memory too. Anything
    else (float16, NumPy arrays, mixed dtypes) runs the array operations.
    Called for most operators of a GPU step, so written for speed.
    """
    first = None
    for array in arrays:  # the first array given; on the CPU the answer comes here
        if array is not None:
            first = array
            break
    if first is None or not (type(first) in _CUPY_TYPES or is_cupy_array(first)):
        return False
    dtype = first.dtype
    if dtype not in _FUSED_DTYPES:
        return False
    shape = first.shape
    for array in arrays:
        if array is None or array is first:
            continue
        if not (type(array) in _CUPY_TYPES or is_cupy_array(array)) or array.dtype != dtype:
            return False
        if same_shape and array.shape != shape:
            return False
    if contiguous:
        return all(a.flags.c_contiguous for a in arrays if a is not None)
    return True


def _kernel(cupy, name, in_params, out_params, body):
    kernel = _KERNELS.get(name)
    if kernel is None:
        kernel = _KERNELS[name] = cupy.ElementwiseKernel(in_params, out_params, body, name)
    return kernel


_SGD_MOMENTUM_BODY = """
    T step = mom * momentum;
    if (decay != T(0)) {
        step = step - decay * weight;
    }
    step = step - rate * grad;
    mom = step;
    weight = weight + step;
"""

_SGD_BODY = """
    T w = weight;
    if (decay != T(0)) {
        w = w * (T(1) - decay);
    }
    weight = w - rate * grad;
"""


def sgd_step(cupy, weight, grad, mom, decay, rate, momentum):
    """``rules.sgd_step`` in one kernel; scalars already in the weight's dtype."""
    if mom is None:
        kernel = _kernel(cupy, "rebind_sgd", "T grad, T decay, T rate", "T weight", _SGD_BODY)
        kernel(grad, decay, rate, weight)
        return
    kernel = _kernel(
        cupy,
        "rebind_sgd_momentum",
        "T grad, T momentum, T decay, T rate",
        "T weight, T mom",
        _SGD_MOMENTUM_BODY,
    )
    kernel(grad, momentum, decay, rate, weight, mom)


_ADAM_BODY = """
    const T one = T(1);
    T m = mean * beta1;
    m = m + (one - beta1) * grad;
    T v = var * beta2;
    v = v + (one - beta2) * grad * grad;
    mean = m;
    var = v;
    weight = weight - lr * m / (sqrt(v) + epsilon);
"""


def adam_step(cupy, weight, grad, mean, var, lr, beta1, beta2, epsilon):
    """``rules.adam_step`` in one kernel; scalars already in the weight's dtype."""
    kernel = _kernel(
        cupy,
        "rebind_adam",
        "T grad, T lr, T beta1, T beta2, T epsilon",
        "T weight, T mean, T var",
        _ADAM_BODY,
    )
    kernel(grad, lr, beta1, beta2, epsilon, weight, mean, var)
