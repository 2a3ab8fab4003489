"""Several weights' optimizer steps in one CuPy launch (MXNet's aggregated updates, on the GPU).

``Module.update`` hands the optimizer every weight of a step at once
(``Optimizer.update_many``). On the GPU each weight's step is one fused
kernel (``cupy_kernels``), but every launch also costs CuPy's host work
(argument checks, type resolution, the kernel cache), tens of microseconds,
and a small model's step is mostly such costs. MXNet 1.9 aggregates the same
way (``multi_sgd_mom_update``, up to ``MXNET_OPTIMIZER_AGGREGATION_SIZE``
weights per call).

Here up to ``GROUP`` weights that share a dtype are updated by one kernel.
Each thread takes one lane of a weight: ``WIDTH`` (4) consecutive elements
when every array of the group starts on a 16-byte word (CuPy's allocations
all do), read and written as whole words, for the step of a large model is
bound by memory (one element a thread, in 4-byte accesses, left it at a
fraction of the bandwidth); else one element. A lane finds its weight by
comparing itself with the weights' first lanes, then runs the single
kernel's body on each of its elements, so the arithmetic and its order are
the single kernel's. SGD's rate and decay are chosen per weight the same
way (MXNet gives biases no weight decay: weights and biases still share one
launch); Adam's scalars are shared by a launch's weights.

Rules: SGD with and without momentum (``cupy_kernels.sgd_step``'s body),
and Adam from the raw gradient (the rescaling, decay and clipping ``Adam``
applies first, then ``cupy_kernels.adam_step``'s body): one launch where
Adam took four or five per weight.

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

__all__ = ["GROUP", "WIDTH", "adam_steps", "address", "sgd_steps"]

# the most weights per launch (a kernel is compiled per rule and group size up to this)
GROUP = 16
# elements a thread updates: four floats (or doubles) are one 16-byte word (or two)
WIDTH = 4

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


def _select(names, count, scalars, sized):
    """Code choosing each ``<name>_at<t>`` address, ``<scalar><t>``, ``first`` (and ``size``).

    Lane i of the concatenated weights belongs to the last weight whose
    start is <= i (start0 is 0, starts ascend; an empty weight shares its
    start with the next and is never chosen): one comparison per weight, each
    choosing among scalar parameters, so everything stays in registers (a
    local array indexed by a computed weight number would live in each
    thread's stack memory). ``first`` is the chosen weight's first lane,
    ``size`` its number of elements (where lanes are wider than one).
    """
    lines = [f"    unsigned long long {n}_at = {n}_at0;\n" for n in names]
    lines += [f"    T {n} = {n}0;\n" for n in scalars]
    lines.append("    long long first = 0;\n")
    lines += ["    long long size = size0;\n"] if sized else []
    for k in range(1, count):
        chosen = [f"{n}_at = {n}_at{k};" for n in names] + [f"{n} = {n}{k};" for n in scalars]
        chosen += [f"first = start{k};"] + ([f"size = size{k};"] if sized else [])
        lines.append(f"    if (i >= start{k}) {{ {' '.join(chosen)} }}\n")
    return "".join(lines)


def _lane(arrays, element, width):
    """Code running ``element`` on the ``width`` elements of lane i of its weight.

    Each element is read into a local first and written back after the
    arithmetic, so no store can alias a later load. In a group whose arrays
    all start on 16-byte words, a whole lane is read and written as whole
    words (``width`` 4: the pointers are declared 16-byte aligned, and each
    array's four loads, and its four stores, run one after another, so the
    compiler merges them); a weight's last, shorter lane goes element by
    element.
    """
    writable = [name for name in arrays if name not in _READ_ONLY]

    def const(name):
        return "const " if name in _READ_ONLY else ""

    def pointer(name, aligned):
        at = f"reinterpret_cast<{const(name)}T*>({name}_at) + at"
        if aligned:
            at = f"static_cast<{const(name)}T*>(__builtin_assume_aligned({at}, 16))"
        return f"        {const(name)}T* const {name}_p = {at};\n"

    def each(name, statement):
        return f"        for (int e = 0; e < {width}; ++e) {{ {statement} }}\n"

    def one(source, indent):  # the element's arithmetic on locals read from source[e]
        reads = [f"{indent}{const(n)}T {n} = {source.format(n)}[e];\n" for n in arrays]
        return "".join([*reads, f"{indent}{{{element}{indent}}}\n"])

    code = [f"    const long long at = (i - first) * {width};\n"]
    if width == 1:
        code += ["    {\n", *(pointer(n, False) for n in arrays), "        const int e = 0;\n"]
        code += [one("{}_p", "        ")]
        code += [f"        {n}_p[0] = {n};\n" for n in writable]
        return "".join([*code, "    }\n"])
    code.append(f"    if (at + {width} <= size) {{\n")
    code += [pointer(n, True) for n in arrays]
    code += [f"        T {n}_v[{width}];\n" for n in arrays]
    code += [each(n, f"{n}_v[e] = {n}_p[e];") for n in arrays]
    code.append(f"        for (int e = 0; e < {width}; ++e) {{\n")
    code.append(one("{}_v", "            "))
    code += [f"            {n}_v[e] = {n};\n" for n in writable]
    code.append("        }\n")
    code += [each(n, f"{n}_p[e] = {n}_v[e];") for n in writable]
    code.append("    } else {\n")
    code += [pointer(n, False) for n in arrays]
    code.append("        for (int e = 0; at + e < size; ++e) {\n")
    code.append(one("{}_p", "            "))
    code += [f"            {n}_p[e] = {n};\n" for n in writable]
    code.append("        }\n    }\n")
    return "".join(code)


def _kernel(cupy, rule, count, width):
    key = (rule, count, width)
    kernel = _KERNELS.get(key)
    if kernel is None:
        arrays, own, shared, element = _RULES[rule]
        params = [f"uint64 {name}_at{k}" for name in arrays for k in range(count)]
        params += [f"int64 start{k}" for k in range(count)]
        params += [f"int64 size{k}" for k in range(count)] if width > 1 else []
        params += [f"T {name}{k}" for name in own for k in range(count)]
        params += [f"T {name}" for name in shared]
        body = _select(arrays, count, own, width > 1) + _lane(arrays, element, width)
        aligned = "" if width == WIDTH else "_unaligned"
        kernel = _KERNELS[key] = cupy.ElementwiseKernel(
            ", ".join(params),
            "raw T first_weight",  # its element type (the weights are written through addresses)
            body,
            f"rebind_multi_{rule}_{count}{aligned}",
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
    arguments = [address(array) for column in arrays for array in column]
    # 16-byte words where every array starts on one (CuPy's allocations do; a view may not)
    width = WIDTH if all(at % 16 == 0 for at in arguments) else 1
    starts, sizes, total = [], [], 0
    for weight in arrays[0]:
        starts.append(total)
        sizes.append(weight.size)
        total += -(-weight.size // width)
    if not total:
        return
    kernel = _kernel(cupy, rule, len(arrays[0]), width)
    per_weight = [value for values in own for value in values]
    sizes = sizes if width > 1 else []
    kernel(*arguments, *starts, *sizes, *per_weight, *shared, arrays[0][0], size=total)
