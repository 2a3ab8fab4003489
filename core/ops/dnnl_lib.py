"""oneDNN's C API through ctypes: the library, its engine, memory and primitives (issue 31).

oneDNN (the kernel library MXNet 1.9.1's CPU build runs) comes from the
``onednn`` extra (``onednn-cpu-gomp``, a self-contained ``libdnnl.so.3`` on
GNU OpenMP); ``REBIND_DNNL_LIBRARY`` names another ``libdnnl.so.3``. Only the
stable part of the version-3 C API is used: memory descriptors with plain
tags or ``any``, primitive descriptors, reorders and ``dnnl_primitive_execute``.
The constants below are those of oneDNN 3.x's ``dnnl_types.h`` (checked against
the loaded library's version at load time).

Primitives and their scratch buffers are kept per calling thread: a stream is
not thread-safe and the library-managed scratchpad belongs to one primitive,
and the cpu contexts that run side by side each call from their own thread.
ctypes releases the GIL during every call, so those threads overlap.
"""

import ctypes
import ctypes.util
import functools
import os
import sys
import threading
from pathlib import Path

__all__ = ["Library", "library", "missing_reason"]

LIBRARY_VARIABLE = "REBIND_DNNL_LIBRARY"

# dnnl_types.h / dnnl_common_types.h (oneDNN 3.x)
F32 = 3
TAG_ANY = 1
PLAIN_TAGS = {1: 2, 2: 3, 3: 4, 4: 5, 5: 6, 6: 7}  # ndims -> dnnl_a ... dnnl_abcdef
CPU = 1
FORWARD_TRAINING, FORWARD_INFERENCE = 64, 96
BACKWARD, BACKWARD_DATA, BACKWARD_WEIGHTS = 128, 160, 192
CONVOLUTION_DIRECT = 1
ELTWISE_RELU = 0x20  # dnnl_alg_kind_t's dnnl_eltwise_relu (v3.2 dnnl_types.h)
POOLING_MAX, POOLING_AVG_INCLUDE, POOLING_AVG_EXCLUDE = 511, 767, 1023
USE_GLOBAL_STATS, USE_SCALE, USE_SHIFT = 1, 2, 4
QUERY_IMPL_INFO = 8
QUERY = {
    "src": 129,
    "diff_src": 130,
    "weights": 131,
    "diff_weights": 132,
    "dst": 133,
    "diff_dst": 134,
    "workspace": 135,
}
ARG = {
    "src": 1,
    "dst": 17,
    "weights": 33,
    "bias": 41,
    "mean": 49,
    "variance": 50,
    "scale": 51,
    "shift": 52,
    "workspace": 64,
    "diff_src": 129,
    "diff_dst": 145,
    "diff_weights": 161,
    "diff_bias": 169,
    "diff_scale": 255,
    "diff_shift": 256,
    "src_scales": 4096 | 1,  # DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC
}
MAX_NDIMS = 12

_void = ctypes.c_void_p
_handle = ctypes.POINTER(_void)
_int = ctypes.c_int
Dims = ctypes.c_int64 * MAX_NDIMS


class ExecArg(ctypes.Structure):
    """dnnl_exec_arg_t: an argument index and its memory."""

    _fields_ = [("arg", _int), ("memory", _void)]


class Version(ctypes.Structure):
    """dnnl_version_t."""

    _fields_ = [
        ("major", _int),
        ("minor", _int),
        ("patch", _int),
        ("hash", ctypes.c_char_p),
        ("cpu_runtime", ctypes.c_uint),
        ("gpu_runtime", ctypes.c_uint),
    ]


_SIGNATURES = {
    "dnnl_engine_create": [_handle, _int, ctypes.c_size_t],
    "dnnl_stream_create": [_handle, _void, ctypes.c_uint],
    "dnnl_memory_desc_create_with_tag": [_handle, _int, Dims, _int, _int],
    "dnnl_memory_desc_create_with_strides": [_handle, _int, Dims, _int, Dims],
    "dnnl_memory_desc_destroy": [_void],
    "dnnl_memory_create": [_handle, _void, _void, _void],
    "dnnl_memory_destroy": [_void],
    "dnnl_primitive_desc_destroy": [_void],
    "dnnl_primitive_create": [_handle, _void],
    "dnnl_primitive_destroy": [_void],
    "dnnl_primitive_execute": [_void, _void, _int, ctypes.POINTER(ExecArg)],
    "dnnl_primitive_desc_query": [_void, _int, _int, _void],
    "dnnl_memory_set_data_handle": [_void, _void],
    # primitive attributes and their post-ops (dnnl.h, v3.2): no scale argument in 3.x
    "dnnl_primitive_attr_create": [_handle],
    "dnnl_primitive_attr_destroy": [_void],
    "dnnl_primitive_attr_set_post_ops": [_void, _void],
    "dnnl_post_ops_create": [_handle],
    "dnnl_post_ops_destroy": [_void],
    "dnnl_post_ops_append_eltwise": [_void, _int, ctypes.c_float, ctypes.c_float],
    "dnnl_primitive_attr_set_scales_mask": [_void, _int, _int],
    "dnnl_reorder_primitive_desc_create": [_handle, _void, _void, _void, _void, _void],
    "dnnl_convolution_forward_primitive_desc_create": [_handle, _void, _int, _int]
    + [_void] * 4
    + [Dims] * 4
    + [_void],
    "dnnl_convolution_backward_data_primitive_desc_create": [_handle, _void, _int]
    + [_void] * 3
    + [Dims] * 4
    + [_void, _void],
    "dnnl_pooling_forward_primitive_desc_create": [_handle, _void, _int, _int, _void, _void]
    + [Dims] * 5
    + [_void],
    "dnnl_pooling_backward_primitive_desc_create": [_handle, _void, _int, _void, _void]
    + [Dims] * 5
    + [_void, _void],
    "dnnl_batch_normalization_forward_primitive_desc_create": [_handle, _void, _int, _void, _void]
    + [ctypes.c_float, ctypes.c_uint, _void],
    "dnnl_batch_normalization_backward_primitive_desc_create": [_handle, _void, _int]
    + [_void] * 3
    + [ctypes.c_float, ctypes.c_uint, _void, _void],
    "dnnl_convolution_backward_weights_primitive_desc_create": [_handle, _void, _int]
    + [_void] * 4
    + [Dims] * 4
    + [_void, _void],
}


def _candidates():
    """Paths a ``libdnnl.so.3`` may be at: the variable, the environment's lib/, the loader's."""
    named = os.environ.get(LIBRARY_VARIABLE, "").strip()
    if named:
        return [named]
    found = [str(Path(prefix) / "lib" / "libdnnl.so.3") for prefix in (sys.prefix, sys.base_prefix)]
    system = ctypes.util.find_library("dnnl")
    return found + ([system] if system else [])


class Library:
    """The loaded ``libdnnl``, its CPU engine and the calls rebind makes."""

    def __init__(self, cdll):
        self.cdll = cdll
        for name, argtypes in _SIGNATURES.items():
            function = getattr(cdll, name)
            function.argtypes, function.restype = argtypes, _int
        cdll.dnnl_primitive_desc_query_md.argtypes = [_void, _int, _int]
        cdll.dnnl_primitive_desc_query_md.restype = _void
        cdll.dnnl_memory_desc_get_size.argtypes = [_void]
        cdll.dnnl_memory_desc_get_size.restype = ctypes.c_size_t
        cdll.dnnl_memory_desc_equal.argtypes = [_void, _void]
        cdll.dnnl_memory_desc_equal.restype = _int
        cdll.dnnl_version.restype = ctypes.POINTER(Version)
        self.version = cdll.dnnl_version().contents
        self.engine = self.make("dnnl_engine_create", CPU, 0)
        self._local = threading.local()
        # the OpenMP runtime libdnnl links (None for a sequential or TBB build)
        self._omp_set = getattr(cdll, "omp_set_num_threads", None)
        self._omp_get = getattr(cdll, "omp_get_max_threads", None)
        if self._omp_set is not None and self._omp_get is not None:
            self._omp_set.argtypes, self._omp_set.restype = [_int], None
            self._omp_get.argtypes, self._omp_get.restype = [], _int
        else:
            self._omp_set = None

    def call(self, name, *args):
        """Call ``name``; a status other than success raises naming the call."""
        status = getattr(self.cdll, name)(*args)
        if status != 0:
            raise RuntimeError(f"oneDNN's {name} failed with status {status}")

    def make(self, name, *args):
        """Call a ``name(&result, ...)`` constructor and return the handle it wrote."""
        result = _void()
        self.call(name, ctypes.byref(result), *args)
        return result

    def stream(self):
        """The calling thread's stream (streams are not thread-safe)."""
        stream = getattr(self._local, "stream", None)
        if stream is None:
            stream = self._local.stream = self.make("dnnl_stream_create", self.engine, 1)
        return stream

    def thread_cache(self):
        """A dict private to the calling thread, for its primitives and buffers."""
        cache = getattr(self._local, "cache", None)
        if cache is None:
            cache = self._local.cache = {}
        return cache

    def plain_md(self, shape):
        """A float32 memory descriptor of ``shape`` in C order."""
        return self.make(
            "dnnl_memory_desc_create_with_tag",
            len(shape),
            Dims(*shape),
            F32,
            PLAIN_TAGS[len(shape)],
        )

    def strided_md(self, shape, strides):
        """A float32 memory descriptor of ``shape`` with ``strides`` (in elements)."""
        return self.make(
            "dnnl_memory_desc_create_with_strides", len(shape), Dims(*shape), F32, Dims(*strides)
        )

    def any_md(self, shape):
        """A float32 memory descriptor of ``shape`` whose layout the primitive picks."""
        return self.make("dnnl_memory_desc_create_with_tag", len(shape), Dims(*shape), F32, TAG_ANY)

    def query_md(self, pd, what):
        """The memory descriptor ``what`` (a ``QUERY`` key) of primitive descriptor ``pd``."""
        return self.cdll.dnnl_primitive_desc_query_md(pd, QUERY[what], 0)

    def same(self, lhs, rhs):
        return bool(self.cdll.dnnl_memory_desc_equal(lhs, rhs))

    def nbytes(self, md):
        return self.cdll.dnnl_memory_desc_get_size(md)

    def implementation(self, pd):
        """The implementation oneDNN chose for ``pd`` (e.g. ``jit:avx512_core``)."""
        text = ctypes.c_char_p()
        self.call("dnnl_primitive_desc_query", pd, QUERY_IMPL_INFO, 0, ctypes.byref(text))
        return text.value.decode()

    def primitive(self, pd):
        return self.make("dnnl_primitive_create", pd)

    def relu_attr(self):
        """New primitive attributes with one post-op, relu (``max(x, 0)``); the caller destroys.

        The attributes keep their own copy of the post-ops, and a primitive
        descriptor its own copy of the attributes.
        """
        post_ops = self.make("dnnl_post_ops_create")
        try:
            self.call("dnnl_post_ops_append_eltwise", post_ops, ELTWISE_RELU, 0.0, 0.0)
            attr = self.make("dnnl_primitive_attr_create")
            self.call("dnnl_primitive_attr_set_post_ops", attr, post_ops)
        finally:
            self.destroy("post_ops", post_ops)
        return attr

    def memory(self, md, array):
        """A memory object over ``array``'s buffer (the array must outlive its use)."""
        return self.make("dnnl_memory_create", md, self.engine, _void(array.ctypes.data))

    def point(self, memory, array):
        """Point ``memory`` at ``array``'s buffer."""
        self.call("dnnl_memory_set_data_handle", memory, _void(array.ctypes.data))

    def destroy(self, kind, handle):
        """Release a handle (kind as in ``dnnl_{kind}_destroy``: memory, primitive, post_ops...)."""
        self.call(f"dnnl_{kind}_destroy", handle)

    def set_threads(self, threads):
        """Size the calling thread's OpenMP team (GNU OpenMP keeps the count per thread).

        Read back each time, not remembered: the thread policy resizes OpenMP to
        the load (``threadpool``), and many of oneDNN's kernels size their team
        from the count current when they run. Its sleeping threads are the
        inference engine's kind (``engine_threads``): two of them on a busy
        2-core machine still ran ResNet-18's step 1.2x faster than one.
        """
        if self._omp_set is not None and self._omp_get() != threads:
            self._omp_set(threads)

    def execute(self, primitive, args):
        """Run ``primitive`` on ``args``, (ARG key, memory) pairs, in the thread's stream."""
        packed = (ExecArg * len(args))(*(ExecArg(ARG[key], memory) for key, memory in args))
        self.call("dnnl_primitive_execute", primitive, self.stream(), len(args), packed)

    def reorder(self, source_md, target_md, scales_mask=None):
        """A reorder primitive from ``source_md``'s layout to ``target_md``'s.

        With ``scales_mask`` it also multiplies by runtime scales (argument
        ``src_scales``, float32) along the source axes whose bits the mask sets
        (oneDNN's scales mask), in the order of those axes.
        """
        attr = None if scales_mask is None else self.make("dnnl_primitive_attr_create")
        try:
            if attr is not None:
                self.call("dnnl_primitive_attr_set_scales_mask", attr, ARG["src"], scales_mask)
            pd = self.make(
                "dnnl_reorder_primitive_desc_create",
                source_md,
                self.engine,
                target_md,
                self.engine,
                attr,
            )
        finally:
            if attr is not None:
                self.destroy("primitive_attr", attr)
        try:
            return self.primitive(pd)
        finally:
            self.destroy("primitive_desc", pd)  # the primitive keeps its own copy


def _load():
    """(Library, None), or (None, why it is missing)."""
    tried = []
    for path in _candidates():
        if not path or (os.sep in path and not os.path.exists(path)):
            tried.append(path)
            continue
        # GNU OpenMP's threads would spin between kernels, taking the cores NumPy's code
        # runs on next; read once, when libgomp loads
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            library = Library(ctypes.CDLL(path))
        except (OSError, AttributeError) as exc:
            return None, f"{path} did not load: {exc}"
        if library.version.major != 3:
            return None, f"{path} is oneDNN {library.version.major}.x; rebind needs 3.x"
        return library, None
    return (
        None,
        "libdnnl.so.3 was not found (pip install 'rebind[onednn]'); looked at " + ", ".join(tried),
    )


@functools.cache
def _loaded():
    loaded = _load()
    if loaded[0] is not None and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forked)
    return loaded


_FORKED = "this process was forked after oneDNN loaded (GNU OpenMP's threads do not survive a fork)"


def _forked():
    """In a forked child: the NumPy kernels run (a parallel region here could hang)."""
    _loaded.cache_clear()
    globals()["_loaded"] = lambda: (None, _FORKED)


def library():
    """The loaded oneDNN library, or None when it is not installed (or the process forked)."""
    return _loaded()[0]


def missing_reason():
    """Why ``library()`` is None (None when it loaded)."""
    return _loaded()[1]
