"""Several weights' optimizer steps in one CuPy launch (MXNet's aggregated updates, on the GPU).

``Module.update`` hands the optimizer every weight of a step at once
(``Optimizer.update_many``). On the GPU each weight's step is one fused
kernel (``cupy_kernels``), but every launch also costs CuPy's host work
(argument checks, type resolution, the kernel cache), tens of microseconds,
and a small model's step is mostly such costs. MXNet 1.9 aggregates the same
way (``multi_sgd_mom_update``, up to ``MXNET_OPTIMIZER_AGGREGATION_SIZE``
weights per call).

Here up to ``GROUP`` weights that share a dtype are updated by one kernel
over all their elements: each position finds its weight by comparing itself
with the weights' start offsets, then runs the single kernel's body on that
weight's element, so the arithmetic and its order are the single kernel's.
SGD's rate and decay are chosen per weight the same way (MXNet gives biases
no weight decay: weights and biases still share one launch); Adam's scalars
are shared by a launch's weights. Rules: SGD with and without momentum
(``cupy_kernels.sgd_step``'s body), and Adam from the raw gradient (the
rescaling, decay and clipping ``Adam`` applies first, then
``cupy_kernels.adam_step``'s body): one launch where Adam took four or five
per weight.

The weights', gradients' and states' device addresses and the offsets are
the kernel's scalar arguments, as MXNet's multi-tensor kernels take them:
nothing is copied to the device and nothing is kept between calls. (A table
in device memory would have to be uploaded whenever an address changes, and
the executor's gradients are new arrays at every step; a copy from pageable
host memory waits for the device.) The first weight is also passed as an
array, which gives the kernel its element type.

Kernels are compiled on first use; importing this module does not import CuPy.
"""

from .cupy_kernels import _ADAM_BODY, _SGD_BODY, _SGD_MOMENTUM_BODY

__all__ = ["GROUP", "adam_steps", "address", "sgd_steps"]

# the most weights per launch (a kernel is compiled per rule and group size up to this)
GROUP = 16

_KERNELS = {}

# Adam's gradient as the optimizer makes it: rescaled, the decay added, then clipped
# when the bound is positive (clip keeps a NaN, as NumPy's does)
_ADAM_GRADIENT = """
    T grad = given * rescale + weight * wd;
    if (bound > T(0)) {
        grad = grad < -bound ? -bound : (grad > bound ? bound : grad);
    }
"""

# rule -> (the arrays of each weight, of which _READ_ONLY ones are read only; the scalars
# of each weight; the scalars shared by the launch; the body run on one element)
_RULES = {
    "sgd": (("weight", "grad"), ("decay", "rate"), (), _SGD_BODY),
    "sgd_momentum": (
        ("weight", "grad", "mom"),
        ("decay", "rate"),
        ("momentum",),
        _SGD_MOMENTUM_BODY,
    ),
    "adam": (
        ("weight", "given", "mean", "var"),
        (),
        ("rescale", "wd", "bound", "lr", "beta1", "beta2", "epsilon"),
        _ADAM_GRADIENT + _ADAM_BODY,
    ),
}
_READ_ONLY = ("grad", "given")


def _select(names, count, scalars=()):
    """Code choosing each ``<name>_at<t>`` address and ``<scalar><t>``, and ``first``.

    Position i of the concatenated weights belongs to the last weight whose
    start is <= i (start0 is 0, starts ascend; an empty weight shares its
    start with the next and is never chosen): one comparison per weight, each
    choosing among scalar parameters, so everything stays in registers (a
    local array indexed by a computed weight number would live in each
    thread's stack memory). ``first`` is the chosen weight's start.
    """
    lines = [f"    unsigned long long {n}_at = {n}_at0;\n" for n in names]
    lines += [f"    T {n} = {n}0;\n" for n in scalars]
    lines.append("    long long first = 0;\n")
    for k in range(1, count):
        chosen = " ".join(
            [f"{n}_at = {n}_at{k};" for n in names] + [f"{n} = {n}{k};" for n in scalars]
        )
        lines.append(f"    if (i >= start{k}) {{ {chosen} first = start{k}; }}\n")
    lines.append("    const long long j = i - first;\n")
    return "".join(lines)


def _kernel(cupy, rule, count):
    key = (rule, count)
    kernel = _KERNELS.get(key)
    if kernel is None:
        arrays, own, shared, element = _RULES[rule]
        params = [f"uint64 {name}_at{k}" for name in arrays for k in range(count)]
        params += [f"int64 start{k}" for k in range(count)]
        params += [f"T {name}{k}" for name in own for k in range(count)]
        params += [f"T {name}" for name in shared]
        body = _select(arrays, count, own)
        for name in arrays:
            if name in _READ_ONLY:
                body += f"    const T {name} = reinterpret_cast<const T*>({name}_at)[j];\n"
            else:
                body += f"    T& {name} = reinterpret_cast<T*>({name}_at)[j];\n"
        body += "    {" + element + "    }\n"
        kernel = _KERNELS[key] = cupy.ElementwiseKernel(
            ", ".join(params),
            "raw T first_weight",  # its element type (the weights are written through addresses)
            body,
            f"rebind_multi_{rule}_{count}",
        )
    return kernel


def address(array):
    """The address of an array's first element: a CuPy array's device pointer.

    (A NumPy array's own address where the kernels are built for the host in tests.)
    """
    pointer = getattr(array.data, "ptr", None)
    return array.ctypes.data if pointer is None else pointer


def sgd_steps(cupy, weights, grads, moms, decays, rates, momentum):
    """``cupy_kernels.sgd_step`` on every weight given, one launch per ``GROUP`` weights.

    ``weights``, ``grads`` and ``moms`` (None without momentum) are lists of
    C-contiguous CuPy arrays of one dtype (float32 or float64) on the current
    device, each gradient and momentum of its weight's shape; ``decays`` and
    ``rates`` are lists, each weight's, ``momentum`` is shared; all scalars in
    the weights' dtype.
    """
    own = (decays, rates)
    if moms is None:
        _launch(cupy, "sgd", (weights, grads), own, ())
    else:
        _launch(cupy, "sgd_momentum", (weights, grads, moms), own, (momentum,))


def adam_steps(cupy, weights, grads, means, variances, scalars):
    """Adam on every weight given, from the raw gradients, one launch per ``GROUP`` weights.

    Each element's gradient is made as ``Adam`` makes it (``grad * rescale +
    weight * wd``, clipped into ``[-bound, bound]`` when ``bound > 0``), then
    ``cupy_kernels.adam_step``'s arithmetic runs on it. ``scalars`` are
    ``(rescale, wd, bound, lr, beta1, beta2, epsilon)`` in the weights' dtype,
    ``lr`` with the bias correction folded in. Arrays as for ``sgd_steps``.
    """
    _launch(cupy, "adam", (weights, grads, means, variances), (), scalars)


def _launch(cupy, rule, arrays, own, shared):
    """One launch per ``GROUP`` weights: ``arrays`` and ``own`` scalars are lists, one a weight."""
    weights = arrays[0]
    for first in range(0, len(weights), GROUP):
        part = slice(first, first + GROUP)
        columns = [column[part] for column in arrays]
        _launch_group(cupy, rule, columns, [values[part] for values in own], shared)


def _launch_group(cupy, rule, arrays, own, shared):
    starts, total = [], 0
    for weight in arrays[0]:
        starts.append(total)
        total += weight.size
    if not total:
        return
    arguments = [address(array) for column in arrays for array in column]
    kernel = _kernel(cupy, rule, len(arrays[0]))
    per_weight = [value for values in own for value in values]
    kernel(*arguments, *starts, *per_weight, *shared, arrays[0][0], size=total)
