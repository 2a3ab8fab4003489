"""Several weights' SGD steps in one CuPy launch (MXNet's aggregated updates, on the GPU).

``Module.update`` hands the optimizer every weight of a step at once
(``Optimizer.update_many``). On the GPU each weight's SGD step is one fused
kernel (``cupy_kernels.sgd_step``), but every launch also costs CuPy's host
work (argument checks, type resolution, the kernel cache), tens of
microseconds, and a small model's step is mostly such costs. MXNet 1.9
aggregates the same way (``multi_sgd_mom_update``, up to
``MXNET_OPTIMIZER_AGGREGATION_SIZE`` weights per call).

Here the weights that share a dtype, a rate, a decay and whether they carry a
momentum are updated by one kernel over all their elements: each position
finds its weight in a table of start offsets (a binary search), then runs
``cupy_kernels``' own SGD body on that weight's element, so the arithmetic
and its order are the single kernel's. The tables (device addresses of the
weights, gradients and momenta, and the offsets) are uploaded once per set
of arrays and kept: an executor's parameter and gradient arrays live as long
as its binding, so in ``fit`` every step after the first reuses them.

Kernels are compiled on first use; importing this module does not import CuPy.
"""

from .cupy_kernels import _SGD_BODY, _SGD_MOMENTUM_BODY

__all__ = ["sgd_steps"]

_KERNELS = {}
_TABLES = {}
# tables kept (a few executors, or a BucketingModule's buckets, update in turn)
_TABLES_KEPT = 16
_C_TYPES = {"float32": "float", "float64": "double"}

# finds, for position i of the concatenated weights, the weight t holding it and
# the element j within it: the last start <= i (starts[0] is 0, starts ascend;
# an empty weight shares its start with the next and is never chosen)
_LOCATE = """
    long long lo = 0, hi = count - 1;
    while (lo < hi) {
        const long long mid = (lo + hi + 1) / 2;
        if (starts[mid] <= i) { lo = mid; } else { hi = mid - 1; }
    }
    const long long t = lo;
    const long long j = i - starts[t];
"""


def _body(c_type, with_momentum):
    lines = [
        f"    typedef {c_type} T;",
        _LOCATE,
        "    T& weight = reinterpret_cast<T*>(weights[t])[j];",
        "    const T grad = reinterpret_cast<const T*>(grads[t])[j];",
    ]
    if with_momentum:
        lines.append("    T& mom = reinterpret_cast<T*>(moms[t])[j];")
    lines += ["    {", _SGD_MOMENTUM_BODY if with_momentum else _SGD_BODY, "    }"]
    return "\n".join(lines)


def _kernel(cupy, dtype, with_momentum):
    key = (dtype, with_momentum)
    kernel = _KERNELS.get(key)
    if kernel is None:
        scalar = dtype  # the scalars in the weights' dtype, as the single kernel takes them
        inputs = "raw uint64 grads, raw int64 starts, int64 count, " + (
            f"raw uint64 moms, {scalar} momentum, " if with_momentum else ""
        )
        inputs += f"{scalar} decay, {scalar} rate"
        kind = "momentum" if with_momentum else "plain"
        kernel = _KERNELS[key] = cupy.ElementwiseKernel(
            inputs,
            "raw uint64 weights",  # the table through which the weights are written
            _body(_C_TYPES[dtype], with_momentum),
            f"rebind_multi_sgd_{kind}_{dtype}",
        )
    return kernel


def address(array):
    """The address of an array's first element: a CuPy array's device pointer.

    (A NumPy array's own address where the kernels are built for the host in tests.)
    """
    data = array.data
    pointer = getattr(data, "ptr", None)
    return array.ctypes.data if pointer is None else pointer


def _tables(cupy, weights, grads, moms):
    """Device tables of the arrays' addresses and the weights' start offsets, kept by key."""
    sizes = tuple(w.size for w in weights)
    key = (
        tuple(address(w) for w in weights),
        tuple(address(g) for g in grads),
        None if moms is None else tuple(address(m) for m in moms),
        sizes,
    )
    tables = _TABLES.get(key)
    if tables is None:
        import numpy

        starts = numpy.cumsum((0, *sizes[:-1]), dtype=numpy.int64)
        upload = [numpy.array(addresses, dtype=numpy.uint64) for addresses in key[:2]]
        if moms is not None:
            upload.append(numpy.array(key[2], dtype=numpy.uint64))
        tables = tuple(cupy.asarray(t) for t in (*upload, starts)), sum(sizes)
        if len(_TABLES) >= _TABLES_KEPT:
            _TABLES.pop(next(iter(_TABLES)))
        _TABLES[key] = tables
    return tables


def sgd_steps(cupy, weights, grads, moms, decay, rate, momentum):
    """``cupy_kernels.sgd_step`` on every weight of a group, in one launch.

    ``weights``, ``grads`` and ``moms`` (None without momentum) are lists of
    C-contiguous CuPy arrays of one dtype (float32 or float64) on the current
    device, each gradient and momentum of its weight's shape; the scalars are
    in that dtype, shared by the group.
    """
    (weight_table, grad_table, *rest), total = _tables(cupy, weights, grads, moms)
    if not total:
        return
    starts = rest[-1]
    dtype = weights[0].dtype.name
    if moms is None:
        kernel = _kernel(cupy, dtype, False)
        kernel(grad_table, starts, len(weights), decay, rate, weight_table, size=total)
        return
    kernel = _kernel(cupy, dtype, True)
    kernel(
        grad_table, starts, len(weights), rest[0], momentum, decay, rate, weight_table, size=total
    )
