"""Several weights' SGD steps in one CuPy launch (MXNet's aggregated updates, on the GPU).

``Module.update`` hands the optimizer every weight of a step at once
(``Optimizer.update_many``). On the GPU each weight's SGD step is one fused
kernel (``cupy_kernels.sgd_step``), but every launch also costs CuPy's host
work (argument checks, type resolution, the kernel cache), tens of
microseconds, and a small model's step is mostly such costs. MXNet 1.9
aggregates the same way (``multi_sgd_mom_update``, up to
``MXNET_OPTIMIZER_AGGREGATION_SIZE`` weights per call).

Here up to ``GROUP`` weights that share a dtype, a rate, a decay and whether
they carry a momentum are updated by one kernel over all their elements:
each position finds its weight by a binary search over the weights' start
offsets, then runs ``cupy_kernels``' own SGD body on that weight's element,
so the arithmetic and its order are the single kernel's.

The weights', gradients' and momenta's device addresses and the offsets are
the kernel's scalar arguments, as MXNet's multi-tensor kernels take them:
nothing is copied to the device and nothing is kept between calls. (A table
in device memory would have to be uploaded whenever an address changes, and
the executor's gradients are new arrays at every step; a copy from pageable
host memory waits for the device.) The first weight is also passed as an
array, which gives the kernel its element type.

Kernels are compiled on first use; importing this module does not import CuPy.
"""

from .cupy_kernels import _SGD_BODY, _SGD_MOMENTUM_BODY

__all__ = ["GROUP", "address", "sgd_steps"]

# the most weights per launch (a kernel is compiled per group size up to this)
GROUP = 16

_KERNELS = {}

# finds, for position i of the concatenated weights, the weight t holding it and the
# element j within it: the last start <= i (start[0] is 0, starts ascend; an empty
# weight shares its start with the next one and is never chosen)
_LOCATE = """
    int lo = 0, hi = count - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (start[mid] <= i) { lo = mid; } else { hi = mid - 1; }
    }
    const int t = lo;
    const long long j = i - start[t];
"""


def _table(name, kind, count):
    """A local array ``name[count]`` gathered from the scalar parameters name0, name1, ..."""
    values = ", ".join(f"{name}{k}" for k in range(count))
    return f"    const {kind} {name}[{count}] = {{{values}}};\n"


def _kernel(cupy, count, with_momentum):
    key = (count, with_momentum)
    kernel = _KERNELS.get(key)
    if kernel is None:
        tables = ["weight_at", "grad_at"] + (["mom_at"] if with_momentum else [])
        params = [f"uint64 {name}{k}" for name in tables for k in range(count)]
        params += [f"int64 start{k}" for k in range(count)]
        params += (["T momentum"] if with_momentum else []) + ["T decay", "T rate"]
        body = "".join(_table(name, "unsigned long long", count) for name in tables)
        body += _table("start", "long long", count) + f"    const int count = {count};\n"
        body += _LOCATE
        body += "    T& weight = reinterpret_cast<T*>(weight_at[t])[j];\n"
        body += "    const T grad = reinterpret_cast<const T*>(grad_at[t])[j];\n"
        if with_momentum:
            body += "    T& mom = reinterpret_cast<T*>(mom_at[t])[j];\n"
        body += "    {" + (_SGD_MOMENTUM_BODY if with_momentum else _SGD_BODY) + "    }\n"
        kind = "momentum" if with_momentum else "plain"
        kernel = _KERNELS[key] = cupy.ElementwiseKernel(
            ", ".join(params),
            "raw T first",  # the first weight: the element type (written through weight_at)
            body,
            f"rebind_multi_sgd_{kind}_{count}",
        )
    return kernel


def address(array):
    """The address of an array's first element: a CuPy array's device pointer.

    (A NumPy array's own address where the kernels are built for the host in tests.)
    """
    pointer = getattr(array.data, "ptr", None)
    return array.ctypes.data if pointer is None else pointer


def sgd_steps(cupy, weights, grads, moms, decay, rate, momentum):
    """``cupy_kernels.sgd_step`` on every weight given, one launch per ``GROUP`` weights.

    ``weights``, ``grads`` and ``moms`` (None without momentum) are lists of
    C-contiguous CuPy arrays of one dtype (float32 or float64) on the current
    device, each gradient and momentum of its weight's shape; the scalars are
    in that dtype, shared by all.
    """
    for first in range(0, len(weights), GROUP):
        part = slice(first, first + GROUP)
        _launch(
            cupy,
            weights[part],
            grads[part],
            None if moms is None else moms[part],
            decay,
            rate,
            momentum,
        )


def _launch(cupy, weights, grads, moms, decay, rate, momentum):
    starts, total = [], 0
    for weight in weights:
        starts.append(total)
        total += weight.size
    if not total:
        return
    arguments = [address(w) for w in weights] + [address(g) for g in grads]
    if moms is not None:
        arguments += [address(m) for m in moms]
    arguments += starts
    arguments += ([momentum] if moms is not None else []) + [decay, rate]
    kernel = _kernel(cupy, len(weights), moms is not None)
    kernel(*arguments, weights[0], size=total)
