"""Every CuPy kernel of the GPU backend, as CuPy would build it, compiles with nvcc.

The host-kernel tests (``test_*_on_host.py``) call each kernel through
``HostCupy``, which records every call. These tests run after them (see
conftest.py) and turn the calls into the CUDA source CuPy generates
(``cuda_source``), compiled for the H100 in one nvcc run: a kernel that is
not valid CUDA, that CUDA compiles with a warning, or that keeps per-thread
data in local memory, fails here, without a GPU. They skip where CuPy or
nvcc is missing, saying which.
"""

import re
from pathlib import Path

import pytest

from . import cuda_source

BACKENDS = Path(__file__).resolve().parents[2] / "backends"


def _recorded_or_skip(host_cupy):
    reason = cuda_source.unavailable()
    if reason:
        pytest.skip(reason)
    if not host_cupy.calls:
        pytest.skip("no kernel call was recorded: run with the host-kernel tests (tests/backends)")
    return host_cupy.calls


def test_every_recorded_kernel_call_compiles_for_the_gpu(host_cupy, tmp_path):
    calls = _recorded_or_skip(host_cupy)
    done, count = cuda_source.compile_calls(calls, tmp_path)
    assert done.returncode == 0, f"nvcc failed on {count} kernels:\n{done.stderr[-6000:]}"
    assert cuda_source.diagnostics(done.stderr) == []
    assert count >= len(calls)
    assert "Function properties for rebind_" in done.stderr  # the resource report came
    # no kernel keeps per-thread data in local memory (stack frames or spills)
    assert cuda_source.stack_memory(done.stderr) == {}


def test_the_host_tests_call_every_kernel_the_backend_names(host_cupy):
    # a kernel named in backends/ but never called by a host test would go unchecked
    calls = _recorded_or_skip(host_cupy)
    called = {name for _, _, _, name in calls}
    named = set()
    for path in BACKENDS.glob("cupy_*.py"):
        named |= set(re.findall(r'"(rebind_[a-z0-9_]+)"', path.read_text()))
    assert named - called == set()
    assert len(called) >= 40  # the kernels with computed names (activations, multi-SGD) too


def test_aligned_multi_weight_steps_read_and_write_16_byte_words(host_cupy, tmp_path):
    # each array's four elements of a lane are one vector load (and store): the
    # optimizer step of a large model is bound by memory, and 4-byte accesses of
    # one element a thread left it at a fraction of the bandwidth
    calls = _recorded_or_skip(host_cupy)
    multi = {d: s for d, s in calls.items() if d[3].startswith("rebind_multi_")}
    done, _ = cuda_source.compile_calls(multi, tmp_path, ptx=True)
    assert done.returncode == 0, done.stderr[-3000:]
    functions = cuda_source.ptx_functions(Path(tmp_path, "rebind_kernels.ptx").read_text())
    # arrays read, and written, by each rule
    expected = {"sgd": (2, 1), "sgd_momentum": (3, 2), "adam": (4, 3)}
    seen = set()
    for name, body in functions.items():
        rule = re.match(r"rebind_multi_([a-z_]+?)_\d+", name).group(1)
        vectors = (body.count("ld.v4.f32"), body.count("st.v4.f32"))
        if "_unaligned" in name:
            assert vectors == (0, 0), name
        elif ".f32" in body and ".f64" not in body:
            assert vectors == expected[rule], name
            seen.add(rule)
    assert seen == set(expected)


def test_a_kernel_that_is_not_cuda_fails_to_compile(host_cupy, tmp_path):
    # the check itself: a host-only call in a body is refused by nvcc
    _recorded_or_skip(host_cupy)
    calls = {
        ("T x", "T y", "y = std::vector<T>(1, x)[0];", "rebind_not_cuda"): {
            ((("array", "<f4", 1, True), ("array", "<f4", 1, True)), False): None
        }
    }
    done, count = cuda_source.compile_calls(calls, tmp_path)
    assert count == 1
    assert done.returncode != 0
    assert "rebind_not_cuda" in Path(tmp_path, "rebind_kernels.cu").read_text()
