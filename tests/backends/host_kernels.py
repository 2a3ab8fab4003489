"""CuPy's ElementwiseKernel on the host: the GPU kernels' code compiled with the C++ compiler.

The backend's CuPy kernels (``backends/cupy_kernels.py``,
``backends/cupy_rnn_kernels.py``) are CUDA C++ bodies run by
``cupy.ElementwiseKernel``. ``HostCupy`` stands in for the ``cupy`` module those
functions receive: its ``ElementwiseKernel`` wraps the same body in a C++
loop over ``i`` (the index CuPy gives each thread), compiles it with the
machine's C++ compiler and runs it on NumPy arrays; every other attribute is
NumPy's (``argsort`` stable, as CuPy's is); CUDA's ``atomicAdd`` is a plain
addition, the threads running one after another. So the kernels' indexing and
arithmetic are checked on any machine with a compiler, against the CPU's
kernels, before a GPU ever runs them.

What it models of CuPy: ``raw`` parameters are indexed by flat position in
C order (a strided raw input, which CuPy reads by unravelling the position
through its shape and strides, is read through a C-ordered copy; raw
outputs must be C-contiguous); other parameters are the
element at ``i`` (an input by value, an output by reference), broadcast like
NumPy's; a type placeholder (``T``, ``L``) is the dtype of the first array given for it;
``size=`` sets the loop length. What it does not: threads run one after
another here, so a kernel that relied on a particular interleaving would not
be caught; CUDA's fused multiply-adds and ``-ftz`` are not reproduced, so
results are compared with a float tolerance (indexing errors are not small).
"""

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["HostCupy", "compiler"]

_C_TYPES = {
    "int64": "long long",
    "uint64": "unsigned long long",
    "intp": "long long",
    "int32": "int",
    "float32": "float",
    "float64": "double",
    "bool": "bool",
}
_NUMPY_TYPES = {
    "int64": np.int64,
    "uint64": np.uint64,
    "int32": np.int32,
    "float32": np.float32,
    "float64": np.float64,
    "intp": np.intp,
    "bool": np.bool_,
}


# a warp's exchange: lanes are host threads, each exchange two barriers (all have written
# their values; all have read their partners'), values passed as bytes
_WARP_EXCHANGE = "__shfl_xor_sync"
_WARP_SOURCE = (
    "#include <atomic>",
    "#include <cstring>",
    "#include <thread>",
    "namespace host_warp {",
    # a barrier of the 32 lanes, used again and again: the last to arrive starts the next
    # phase, the others wait for it (lighter to compile than C++20's std::barrier)
    "struct gate {",
    "  std::atomic<int> count{0};",
    "  std::atomic<int> phase{0};",
    "  void arrive_and_wait() {",
    "    const int mine = phase.load(std::memory_order_acquire);",
    "    if (count.fetch_add(1, std::memory_order_acq_rel) == 31) {",
    "      count.store(0, std::memory_order_relaxed);",
    "      phase.fetch_add(1, std::memory_order_acq_rel);",
    "      return;",
    "    }",
    "    while (phase.load(std::memory_order_acquire) == mine) std::this_thread::yield();",
    "  }",
    "};",
    "thread_local int lane;",
    "thread_local gate* gate_of_warp;",
    "thread_local unsigned char (*slots)[8];",
    "}",
    "template <typename V> V __shfl_xor_sync(unsigned, V value, int mask) {",
    '  static_assert(sizeof(V) <= 8, "a lane\'s value is at most 8 bytes");',
    "  std::memcpy(host_warp::slots[host_warp::lane], &value, sizeof(V));",
    "  host_warp::gate_of_warp->arrive_and_wait();",
    "  V other;",
    "  std::memcpy(&other, host_warp::slots[host_warp::lane ^ mask], sizeof(V));",
    "  host_warp::gate_of_warp->arrive_and_wait();",
    "  return other;",
    "}",
)
# the 32 lanes are threads made once a launch; they run the warps one after another,
# all meeting at the end of each warp
_WARP_LOOP = (
    "  host_warp::gate gate;",
    "  unsigned char slots[32][8];",
    "  std::thread lanes[32];",
    "  for (int l = 0; l < 32; ++l) {",
    "   lanes[l] = std::thread([&, l]() {",
    "   host_warp::lane = l;",
    "   host_warp::gate_of_warp = &gate;",
    "   host_warp::slots = slots;",
    "   for (long long first = 0; first < size; first += 32) {",
    "    const long long i = first + l;",
)
_WARP_END = (
    "    gate.arrive_and_wait();",
    "   }",
    "   });",
    "  }",
    "  for (auto& lane : lanes) lane.join();",
)


def compiler():
    """The C++ compiler's path, or None."""
    return shutil.which("g++") or shutil.which("c++")


def _parse(params, output):
    parsed = []
    for part in params.split(","):
        words = part.split()
        raw = words[0] == "raw"
        kind, name = words[-2], words[-1]
        parsed.append((raw, kind, name, output))
    return parsed


class _Kernel:
    def __init__(self, host, in_params, out_params, body, name):
        self._host, self._body, self.name = host, body, name
        self._definition = (in_params, out_params, body, name)
        self._params = _parse(in_params, False) + _parse(out_params, True)
        self._compiled = {}

    def __call__(self, *args, size=None):
        inputs = [p for p in self._params if not p[3]]
        if len(args) not in (len(inputs), len(self._params)):
            raise TypeError(f"{self.name}: {len(self._params)} arguments, got {len(args)}")
        types = self._types_of(args)
        shape = np.broadcast_shapes(
            *(np.shape(a) for a, (raw, *_) in zip(args, self._params, strict=False) if not raw)
        )
        if len(args) == len(inputs):  # outputs made, as CuPy makes them: the inputs' shape
            args = (
                *args,
                *(self._new_output(kind, types, shape) for _, kind, _, out in self._params if out),
            )
        self._host.record(self._definition, self._signature(args, types, size))
        count = int(np.prod(shape)) if size is None else int(size)
        if _WARP_EXCHANGE in self._body and count % 32:
            raise ValueError(f"{self.name}: {count} positions are not whole warps of 32")
        pointers, strides, keep = [], [], []
        for value, (raw, kind, name, output) in zip(args, self._params, strict=True):
            array, stride = self._argument(value, raw, kind, name, output, types, shape)
            keep.append(array)
            pointers.append(array.ctypes.data)
            strides.append(stride)
        function = self._function(types)
        function(
            (ctypes.c_void_p * len(pointers))(*pointers),
            (ctypes.c_longlong * len(strides))(*strides),
            ctypes.c_longlong(count),
        )
        outputs = args[len(inputs) :]
        return outputs[0] if len(outputs) == 1 else outputs

    def _signature(self, args, types, size):
        """What CuPy would compile this call for: each argument's kind, dtype and layout."""
        described = []
        for value, (_, kind, _, _) in zip(args, self._params, strict=True):
            if isinstance(value, np.ndarray):
                described.append(("array", value.dtype.str, value.ndim, value.flags.c_contiguous))
            else:  # a scalar takes its parameter's type
                dtype = types[kind] if kind in types else np.dtype(_NUMPY_TYPES[kind])
                described.append(("scalar", np.dtype(dtype).str, 0, True))
        return tuple(described), size is not None

    @staticmethod
    def _new_output(kind, types, shape):
        return np.empty(shape, dtype=types[kind] if kind in types else _NUMPY_TYPES[kind])

    def _types_of(self, args):
        """Type placeholder (a name that is not a C type: T, L, ...) -> its dtype in this call."""
        types = {}
        for value, (_, kind, _, _) in zip(args, self._params, strict=False):
            if kind not in _NUMPY_TYPES and kind not in types and isinstance(value, np.ndarray):
                types[kind] = value.dtype
        missing = {k for _, k, _, _ in self._params if k not in _NUMPY_TYPES} - set(types)
        if missing:
            raise TypeError(f"{self.name}: no array gives the type of {sorted(missing)}")
        return types

    def _argument(self, value, raw, kind, name, output, types, shape):
        wanted = types[kind] if kind in types else np.dtype(_NUMPY_TYPES[kind])
        if raw:
            if not isinstance(value, np.ndarray):
                raise ValueError(f"{self.name}: raw {name!r} must be an array")
            if not value.flags.c_contiguous:
                if output:  # written through flat positions: CuPy's callers pass contiguous
                    raise ValueError(f"{self.name}: raw output {name!r} must be C-contiguous")
                # CuPy unravels a flat position through the shape and strides of a strided
                # raw input: the element it reads is the C-ordered copy's at that position
                value = np.ascontiguousarray(value)
            if value.dtype != wanted:
                raise TypeError(f"{self.name}: raw {name!r} is {value.dtype}, expected {wanted}")
            return value, 0
        if output:
            if not (isinstance(value, np.ndarray) and value.flags.c_contiguous):
                raise ValueError(f"{self.name}: output {name!r} must be a C-contiguous array")
            if value.shape != tuple(shape) or value.dtype != wanted:
                raise ValueError(f"{self.name}: output {name!r} is {value.shape} {value.dtype}")
            return value, 1
        array = np.asarray(value, dtype=wanted)
        if array.size == 1:
            return np.ascontiguousarray(array.reshape(1)), 0
        return np.ascontiguousarray(np.broadcast_to(array, shape)), 1

    def _function(self, types):
        key = tuple(sorted((k, v.str) for k, v in types.items()))
        function = self._compiled.get(key)
        if function is None:
            function = self._compiled[key] = self._host.build(self._source(types))
        return function

    def _source(self, types):
        warps = _WARP_EXCHANGE in self._body
        lines = [
            "#include <cmath>",
            "using std::exp; using std::tanh; using std::sqrt; using std::log; using std::abs;",
            # threads run one after another here: CUDA's atomic addition is a plain one
            "template <typename V> V atomicAdd(V* at, V value) "
            "{ const V old = *at; *at = old + value; return old; }",
            *(_WARP_SOURCE if warps else ()),
            *(f"typedef {_C_TYPES[np.dtype(t).name]} {k};" for k, t in types.items()),
            'extern "C" void run(void** p, const long long* s, long long size) {',
            *(_WARP_LOOP if warps else ("  for (long long i = 0; i < size; ++i) {",)),
        ]
        for k, (raw, kind, name, output) in enumerate(self._params):
            c_type = kind if kind in types else _C_TYPES[kind]
            if raw:
                const = "" if output else "const "
                lines.append(f"    {const}{c_type}* {name} = ({const}{c_type}*)p[{k}];")
            elif output:
                lines.append(f"    {c_type}& {name} = (({c_type}*)p[{k}])[s[{k}] * i];")
            else:
                lines.append(f"    const {c_type} {name} = ((const {c_type}*)p[{k}])[s[{k}] * i];")
        end = _WARP_END if warps else ("  }",)
        lines += ["    {", self._body, "    }", *end, "}"]
        return "\n".join(lines)


class HostCupy:
    """The part of the ``cupy`` module the kernels' callers use, on NumPy and a C++ compiler."""

    def __init__(self, build_dir=None):
        self._dir = Path(build_dir or tempfile.mkdtemp(prefix="rebind-host-kernels-"))
        self._kernels = {}
        # (in_params, out_params, body, name) -> the argument signatures it was called with
        self.calls = {}

    def record(self, definition, signature):
        """Note a kernel call (``cuda_source`` builds CuPy's code for each one noted)."""
        self.calls.setdefault(definition, {})[signature] = None

    def ElementwiseKernel(self, in_params, out_params, body, name):  # noqa: N802 (CuPy's name)
        key = (in_params, out_params, body, name)
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = _Kernel(self, in_params, out_params, body, name)
        return kernel

    @staticmethod
    def argsort(a, axis=-1):
        return np.argsort(a, axis=axis, kind="stable")

    def __getattr__(self, name):
        return getattr(np, name)

    def build(self, source):
        """Compile ``source`` into a shared library; its ``run`` function."""
        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        library = self._dir / f"kernel_{digest}.so"
        if not library.exists():
            path = self._dir / f"kernel_{digest}.cpp"
            path.write_text(source)
            command = [compiler(), "-O2", "-ffp-contract=off", "-shared", "-fPIC"]
            command += ["-std=c++17", "-pthread", "-o"] if _WARP_EXCHANGE in source else ["-o"]
            done = subprocess.run(
                [*command, str(library), str(path)], capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                raise RuntimeError(f"the kernel does not compile:\n{done.stderr}\n{source}")
        function = ctypes.CDLL(str(library)).run
        function.restype = None
        return function
