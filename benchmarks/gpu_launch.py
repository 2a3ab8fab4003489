"""What one call costs the host on a GPU: the pieces a small network's step is made of.

    python3 benchmarks/gpu_launch.py [--calls 2000] [--device gpu]

A step of the MLP, LeNet or the LSTM LM on a GPU is bound by the host: its
time is the sum of the calls that queue work, each a few to tens of
microseconds. This times, per call (median of five runs of ``--calls`` calls,
the device synchronised only between runs), the kinds of call rebind's GPU
path makes, on small arrays whose device time is far below the host's:

- an ElementwiseKernel over raw arrays (rebind's kernels' form), and the
  same body as a RawKernel (the lower-level launch CuPy offers);
- an ElementwiseKernel over plain (non-raw) arrays, and a CuPy ufunc (``+=``);
- ``cupy.empty`` and ``cupy.ndarray`` (allocation from CuPy's pool), a view
  (``a[t]``);
- a cuBLAS product through ``backends/cupy_gemm`` and through ``cupy.matmul``;
- a CuPy reduction (``sum(axis=0)``).

Nothing is compared with anything else: the figures say which calls to avoid
or replace next. ``--device cpu`` prints that there is nothing to time.
"""

import argparse
import statistics
import sys
import time

_RAW_SOURCE = r"""
extern "C" __global__ void rebind_probe_raw(const float* x, float* y, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        y[i] = x[i] * 2.0f + 1.0f;
    }
}
"""


def _per_call_us(function, calls, synchronize):
    runs = []
    for _ in range(5):
        synchronize()
        started = time.perf_counter()
        for _ in range(calls):
            function()
        runs.append((time.perf_counter() - started) / calls * 1e6)
    synchronize()
    return statistics.median(runs)


def _cases(cupy):
    from rebind.backends import cupy_gemm

    x = cupy.arange(32 * 200, dtype=cupy.float32).reshape(32, 200)
    y = cupy.empty_like(x)
    w = cupy.ones((200, 200), dtype=cupy.float32)
    stack = cupy.zeros((36, 32, 200), dtype=cupy.float32)
    bias = cupy.ones(200, dtype=cupy.float32)
    raw_elementwise = cupy.ElementwiseKernel(
        "raw T x, int64 width", "raw T y", "y[i] = x[i] * T(2) + T(1);", "rebind_probe_ew_raw"
    )
    plain_elementwise = cupy.ElementwiseKernel(
        "T x", "T y", "y = x * T(2) + T(1);", "rebind_probe_ew"
    )
    raw = cupy.RawKernel(_RAW_SOURCE, "rebind_probe_raw")
    size = x.size
    blocks = (size + 255) // 256
    return {
        "ElementwiseKernel, raw arrays": lambda: raw_elementwise(x, 200, y, size=size),
        "RawKernel": lambda: raw((blocks,), (256,), (x, y, size)),
        "ElementwiseKernel, plain arrays": lambda: plain_elementwise(x, y),
        "CuPy ufunc x += bias": lambda: x.__iadd__(bias),
        "cupy.empty (32, 200)": lambda: cupy.empty((32, 200), dtype=cupy.float32),
        "cupy.ndarray (32, 200)": lambda: cupy.ndarray((32, 200), dtype=cupy.float32),
        "a view, stack[7]": lambda: stack[7],
        "cuBLAS product, cupy_gemm": lambda: cupy_gemm.matmul(cupy, x, w),
        "cuBLAS product, cupy.matmul": lambda: cupy.matmul(x, w),
        "CuPy sum(axis=0)": lambda: x.sum(axis=0),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--device", choices=["gpu", "cpu"], default="gpu")
    args = parser.parse_args(argv)
    if args.device == "cpu":
        print("nothing to time on the CPU: these are the costs of CuPy's calls on a GPU")
        return 0
    import rebind as mx

    reason = mx.registry.lookup("backends", "cupy").unavailable_reason()
    if reason is not None:
        print(f"no GPU to time on: {reason}")
        return 1
    import cupy

    synchronize = cupy.cuda.Device().synchronize
    cases = _cases(cupy)
    for function in cases.values():  # compile and warm every kernel first
        function()
    print(f"host time a call, median of 5 runs of {args.calls} calls (device: {cupy.__version__})")
    for name, function in cases.items():
        print(f"  {name:<34} {_per_call_us(function, args.calls, synchronize):8.2f} us", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
