"""The CUDA source CuPy would build for each kernel call ``HostCupy`` saw, and nvcc on it.

``HostCupy`` (host_kernels.py) runs the backend's kernel bodies on the host,
which checks their arithmetic but not that they are valid CUDA: a host-only
function, a type CUDA lacks, a clash with CuPy's own declarations would pass
there and fail on the first GPU. Here each recorded call becomes the source
CuPy itself generates for it (its ``ElementwiseKernel`` code generator, with
the argument kinds, dtypes and layouts of the call, dimensions reduced as
CuPy reduces them), behind the headers CuPy compiles with; all of them go into
one file, each in a namespace of its own, compiled by ``nvcc`` to the
H100's machine code, with each kernel's use of stack memory reported. CuPy
is imported for its generator only: no GPU or driver is needed.

The generator is CuPy's private API (checked against CuPy 14): where it is
not the one this module knows, ``unavailable()`` says so and the tests skip.
"""

import os
import re
import shutil
import subprocess

import numpy as np

__all__ = ["compile_calls", "kernel_source", "ptx_functions", "unavailable"]

# CuPy's argument kinds (its _ArgKind enum) and the headers it puts before every kernel
_NDARRAY, _INDEXER, _SCALAR = 1, 2, 3
_HEADERS = ("cupy/complex.cuh", "cupy/carray.cuh", "cupy/atomics.cuh", "cupy/math_constants.h")
ARCH = "sm_90"  # the H100


def _cupy_parts():
    import cupy
    import cupy._core._carray as carray
    import cupy._core._kernel as kernel
    import cupy._core._scalar as scalar

    return cupy, kernel, carray, scalar


def unavailable():
    """Why the CUDA sources cannot be built and compiled here, or None when they can."""
    if shutil.which("nvcc") is None:
        return "no nvcc on PATH (the CUDA toolkit's compiler)"
    try:
        cupy, kernel, carray, scalar = _cupy_parts()
    except ImportError as error:
        return f"CuPy is not installed ({error}): it generates the kernels' CUDA source"
    probe = cupy.ElementwiseKernel("T x, float32 s, raw int64 r", "T y", "y = x * s;", "probe")
    try:
        arrays = (("array", "<f4", 1, True), ("scalar", "<f4", 0, True), ("array", "<i8", 1, True))
        code = _code(probe, (*arrays, ("array", "<f4", 1, True)), False, 0)
    except Exception as error:  # noqa: BLE001 (any change of CuPy's private generator)
        version = cupy.__version__
        return f"CuPy {version}'s kernel generator is not the one this check knows: {error}"
    if "CIndexer<1" not in code or "CArray<float, 1" not in code:
        return f"CuPy {cupy.__version__} generates kernels in a form this check does not know"
    return None


def _code(kernel, described, sized, index):
    """CuPy's source for one call of ``kernel``, the function named ``<name>_<index>``."""
    cupy, generator, carray, scalar = _cupy_parts()
    params = kernel.params[:-1]  # the last is CuPy's own indexer
    types = {}
    for param, (kind, dtype, _, _) in zip(params, described, strict=True):
        if param.dtype is None and kind == "array":
            types.setdefault(param.ctype, np.dtype(dtype))
    elementwise = [
        d for p, d in zip(params, described, strict=True) if d[0] == "array" and not p.raw
    ]
    reduced = all(contiguous for _, _, _, contiguous in elementwise)  # CuPy's dimension merge
    infos = []
    for param, (kind, dtype, ndim, contiguous) in zip(params, described, strict=True):
        if kind == "scalar":
            infos.append(generator._ArgInfo(_SCALAR, scalar.CScalar, np.dtype(dtype), 0, 1, 1))
            continue
        if not param.raw and reduced:
            ndim, contiguous = min(ndim, 1), True
        dtype = np.dtype(dtype)
        infos.append(generator._ArgInfo(_NDARRAY, cupy.ndarray, dtype, ndim, contiguous, 1))
    indexer = 1 if sized or reduced else max((d[2] for d in elementwise), default=1)
    infos.append(generator._ArgInfo(_INDEXER, carray.Indexer, None, indexer, 1, 1))
    type_map = generator._TypeMap(tuple(sorted(types.items())))
    return generator._get_elementwise_kernel_code(
        tuple(infos),
        type_map,
        kernel.params,
        kernel.operation,
        f"{kernel.name}_{index}",
        kernel.preamble,
    )


def kernel_source(calls):
    """One CUDA file: every recorded call's kernel, each in a namespace of its own."""
    cupy = _cupy_parts()[0]
    parts = ["".join(f"#include <{header}>\n" for header in _HEADERS)]
    index = 0
    for (in_params, out_params, body, name), signatures in calls.items():
        kernel = cupy.ElementwiseKernel(in_params, out_params, body, name)
        for described, sized in signatures:
            code = _code(kernel, described, sized, index)
            parts.append(f"namespace call_{index} {{\n{code}\n}}  // {name}\n")
            index += 1
    return "".join(parts), index


def compile_calls(calls, folder, ptx=False):
    """nvcc over every recorded call; returns (the CompletedProcess, the number of kernels).

    To machine code (ptxas reports each kernel's registers and stack memory),
    or with ``ptx`` to PTX, written to ``folder``/rebind_kernels.ptx.
    """
    cupy = _cupy_parts()[0]
    source, count = kernel_source(calls)
    path = os.path.join(folder, "rebind_kernels.cu")
    with open(path, "w") as file:
        file.write(source)
    include = os.path.join(os.path.dirname(cupy.__file__), "_core", "include")
    command = ["nvcc", f"-arch={ARCH}", "-std=c++17", f"-I{include}"]
    if ptx:
        command += ["-ptx", "-o", os.path.join(folder, "rebind_kernels.ptx"), path]
    else:
        command += ["-cubin", "--resource-usage"]
        command += ["-o", os.path.join(folder, "rebind_kernels.cubin"), path]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return done, count


def ptx_functions(text):
    """Kernel name -> its PTX body, from a PTX file's text."""
    parts = re.split(r"\.visible \.entry (\w+)\(", text)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def stack_memory(stderr):
    """Kernel name -> bytes of stack frame and spills ptxas reported, for those with any.

    A local array indexed by a computed position, or too many live values,
    puts per-thread data in (slow) local memory; these kernels need none.
    """
    found, name = {}, None
    for line in stderr.splitlines():
        match = re.search(r"Function properties for (\w+)", line)
        if match:
            name = match.group(1)
            continue
        match = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores", line)
        if match and name is not None:
            frame, spills = int(match.group(1)), int(match.group(2))
            if frame or spills:
                found[name] = (frame, spills)
            name = None
    return found


def diagnostics(stderr):
    """nvcc's front-end warnings (an unused variable, a narrowing) in ``stderr``."""
    return [line for line in stderr.splitlines() if re.search(r"warning #\d+", line)]
