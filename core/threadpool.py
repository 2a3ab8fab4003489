"""The CPU thread policy: how many threads rebind's CPU compute uses, and BLAS held to it.

``compute_threads()`` is the number of threads CPU compute may use now (>= 1);
kernels and engines with their own thread pools size them from it, and BLAS
(and OpenMP, where loaded) is held to it through ``threadpoolctl``.

The count, in order:

1. ``REBIND_NUM_THREADS``, else ``OMP_NUM_THREADS`` (as MXNet users set it): that
   many threads, always.
2. Otherwise the automatic policy: the cores this process may use (affinity mask
   and cgroup CPU quota, see ``cpus.py``; at most ``MXNET_OMP_MAX_THREADS`` where
   set), less the CPUs other processes keep busy (``cpus.LoadSampler``: their
   CPU time since the last sample, or the tasks waiting now if more), at least
   1. The load is sampled at most every ``SAMPLE_INTERVAL`` seconds, when
   compute runs (``refresh()``, called by ``Executor.forward``, and
   ``compute_threads()``). Fewer threads apply at once, more only once two
   samples in a row allow them: OpenBLAS's threads wait for each other by
   spinning, so a thread whose CPU another process holds stalls every product
   (training ran 5-8x slower with two threads on a busy 2-core machine), while
   one thread too few costs at most its share. A sample after a pause of the
   process's compute (``STALE_AFTER``) starts afresh: the tasks running at that
   instant decide, and a window of ``FRESH_WINDOW`` after them; the time others
   used while this process did not compute (a run that has ended) is not held
   against it (MobileNet at batch 1 right after another process's run had kept
   one thread for a second: 76 images/s against 106).

A library whose own variable the user set keeps that number
(``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``, ``BLIS_NUM_THREADS``; OpenMP
with ``OMP_NUM_THREADS``), and so does one whose count someone else changed
since rebind set it (``with threadpoolctl.threadpool_limits(...)``). A library
loaded after the last look for them (``import torch``, ``ctypes.CDLL``) is
found at the next resize or load sample: the dynamic loader's count of loaded
objects (``loaded_objects``, a microsecond) says when to look again. Without
threadpoolctl (``pip install rebind[threads]``) rebind can size BLAS only as it
loads: if NumPy is not imported before rebind, OpenBLAS/MKL start with the
count of that moment and keep it; ``compute_threads()`` still follows the load.

Small products need no rule here: OpenBLAS runs a GEMM of up to 262,144
multiply-adds on one thread (its ``GEMM_MULTITHREAD_THRESHOLD``), and measured
on 2 idle cores two threads there take the time of one. MXNet's
``MXNET_CPU_WORKER_NTHREADS`` (operators run side by side) has no counterpart:
rebind runs one operator at a time. The executors of several cpu contexts run
side by side (``side_by_side.py``), and within ``shared_by(n)`` each of the n
gets the count divided by n.
"""

import math
import os
import sys
import threading
import time
import warnings

from .cpus import LoadSampler, usable_cpus

__all__ = ["compute_threads", "engine_threads", "refresh", "shared_by"]

# The user's word for rebind's count, first found wins (OMP_NUM_THREADS as MXNet reads it)
COUNT_VARIABLES = ("REBIND_NUM_THREADS", "OMP_NUM_THREADS")
# MXNet's cap on its OpenMP threads; here a cap on the automatic count
CAP_VARIABLE = "MXNET_OMP_MAX_THREADS"
# a library's own variables: where one is set, that library keeps the user's number
LIBRARY_VARIABLES = {
    "openblas": ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS"),
    "mkl": ("MKL_NUM_THREADS",),
    "blis": ("BLIS_NUM_THREADS",),
    "openmp": ("OMP_NUM_THREADS",),
}
SAMPLE_INTERVAL = 0.5  # seconds between load samples
# a sample this long after the previous one follows a pause of this process's compute:
# it starts a fresh window, read after FRESH_WINDOW seconds
STALE_AFTER = 2 * SAMPLE_INTERVAL
FRESH_WINDOW = 0.1
# Other processes' use of a CPU up to this fraction leaves it free (daemons, short bursts);
# beyond, it counts as taken: a partly busy CPU stalls spinning BLAS threads too.
BUSY_SLACK = 0.3


def _count(name, environ):
    """The positive count in ``environ[name]`` ("4,2" for nested OpenMP reads 4), or None."""
    value = environ.get(name)
    if value is None or not value.strip():
        return None
    try:
        count = int(value.split(",")[0])
    except ValueError:
        count = 0
    if count < 1:
        # lenient as the OpenMP runtime: an unusable value is ignored, not fatal
        warnings.warn(
            f"{name}={value!r} is not a positive whole number of threads; rebind ignores it "
            f"(set {name} to e.g. 1 or 2, or unset it for the automatic count)",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    return count


def requested_threads(environ=None):
    """The user's count from ``REBIND_NUM_THREADS`` or ``OMP_NUM_THREADS``, or None."""
    environ = os.environ if environ is None else environ
    for name in COUNT_VARIABLES:
        count = _count(name, environ)
        if count is not None:
            return count
    return None


class ThreadPolicy:
    """The count: the user's, or the usable cores less those other processes keep busy."""

    def __init__(self, environ=None, sampler=None, cpus=None):
        environ = os.environ if environ is None else environ
        self.cores = usable_cpus() if cpus is None else cpus
        cap = _count(CAP_VARIABLE, environ)
        self.limit = min(self.cores, cap) if cap else self.cores
        self.fixed = requested_threads(environ)
        self._sampler = None
        if self.fixed is None:
            self._sampler = LoadSampler() if sampler is None else sampler
        self.threads = self.fixed or self._initial()
        self._allowed = self.threads  # the previous sample's count (see update)
        # a first update comes in any case: it also finds libraries loaded after rebind
        self._sampled_at = time.monotonic()
        self.next_sample = self._sampled_at + SAMPLE_INTERVAL

    def _initial(self):
        """The count at import, from the tasks running right now (no interval to average yet)."""
        running = LoadSampler.running_others()
        return self.limit if running is None else self.allowed_by(float(running))

    def allowed_by(self, others):
        """The count when other processes use ``others`` CPUs' worth of time."""
        busy = math.ceil(others - BUSY_SLACK) if others > BUSY_SLACK else 0
        return max(1, min(self.limit, self.cores - busy))

    def update(self, now):
        """Sample the load (the caller checked ``next_sample``); returns the count."""
        if self._sampler is None:
            self.next_sample = math.inf  # the user's count: nothing to sample, ever
            return self.threads
        stale, self._sampled_at = now - self._sampled_at > STALE_AFTER, now
        if stale:
            # the window since the last sample is mostly time this process did not
            # compute: what others did then says little about now. The tasks running now
            # decide, and the window starting now, read soon, decides alone
            others = self._sampler.restart()
            self.next_sample = now + FRESH_WINDOW
            self.threads = self.limit if others is None else self.allowed_by(others)
            self._allowed = self.limit
            return self.threads
        self.next_sample = now + SAMPLE_INTERVAL
        others = self._sampler.sample()
        allowed = self.limit if others is None else self.allowed_by(others)
        # fewer threads at once, more once two samples in a row allow them
        self.threads, self._allowed = min(allowed, self._allowed), allowed
        return self.threads


class BlasPools:
    """The BLAS and OpenMP pools threadpoolctl finds, set to the policy's count."""

    def __init__(self, environ=None):
        environ = os.environ if environ is None else environ
        self._users = {api for api, names in LIBRARY_VARIABLES.items() if _any_set(names, environ)}
        self._set = {}  # library file -> the count rebind set last
        self._libraries = ()  # threadpoolctl's controllers of the pools found last
        self._scanned = None  # loaded_objects() at the last scan
        self.applied = None
        self.rescan_due = True  # libraries may load after the first limit
        try:
            import threadpoolctl  # noqa: F401
        except ImportError:
            self.controllable = False  # resized only as NumPy loads (size_at_load)
        else:
            self.controllable = True

    def limit(self, threads):
        """Set every pool rebind may set to ``threads`` (found anew: libraries load late)."""
        from threadpoolctl import ThreadpoolController

        self._scanned = loaded_objects()
        self._libraries = ThreadpoolController().lib_controllers
        self.rescan_due = False
        self._hold(threads)

    def hold(self, threads):
        """Set the pools to ``threads``: those the last scan found, unless libraries loaded since.

        Microseconds when no library was loaded since the last scan (the
        count of loaded objects says so); otherwise a new scan (``limit``)
        first, so that a BLAS loaded late follows the count too.
        """
        if self.stale():
            self.limit(threads)
            return
        self._hold(threads)

    def stale(self):
        """Whether libraries were loaded since the last scan (microseconds)."""
        return self._scanned is None or loaded_objects() != self._scanned

    def _hold(self, threads):
        """Set the pools of the last scan to ``threads`` (those the user or others set, not)."""
        for library in self._libraries:
            if library.internal_api in self._users or library.user_api in self._users:
                continue  # the user's variable for this library wins
            last = self._set.get(library.filepath)
            if last is not None and library.get_num_threads() != last:
                continue  # someone else (threadpool_limits) set it since: theirs wins
            if library.get_num_threads() != threads:
                library.set_num_threads(threads)
            self._set[library.filepath] = threads
        self.applied = threads

    def size_at_load(self, threads):
        """Load NumPy's BLAS with ``threads`` through its variables (no threadpoolctl)."""
        if "numpy" in sys.modules:
            return  # loaded already: its count is fixed
        names = [n for n in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS") if n not in os.environ]
        os.environ.update(dict.fromkeys(names, str(threads)))
        try:
            import numpy  # noqa: F401  (the BLAS reads the variables as it loads)
        finally:
            for name in names:  # not inherited by child processes as if the user set them
                os.environ.pop(name, None)
        self.applied = threads


def _any_set(names, environ):
    return any(environ.get(name, "").strip() for name in names)


def loaded_objects():
    """A number that changes whenever the process loads a shared library (microseconds).

    glibc's count of objects ever loaded (``dlpi_adds`` of ``dl_iterate_phdr``,
    read from the first object) or macOS's image count; where neither is known,
    the number of imported modules (an extension module loads its libraries as
    it is imported). A rescan of the pools takes milliseconds; this says when
    one is due.
    """
    return _LOADER_COUNT() or -len(sys.modules)


def _loader_counter():
    """A function returning the dynamic loader's count of loaded objects (0 where unknown)."""
    import ctypes

    try:
        # PyDLL: the call keeps the GIL, so no thread can take it while the loader's
        # lock is held for the callback (which needs the GIL)
        libc = ctypes.PyDLL(None)
    except (OSError, TypeError):  # TypeError: Windows loads no library by the name None
        return lambda: 0
    if hasattr(libc, "_dyld_image_count"):  # macOS
        libc._dyld_image_count.restype = ctypes.c_uint32
        return libc._dyld_image_count
    if not hasattr(libc, "dl_iterate_phdr"):  # Windows, or a libc without it
        return lambda: 0
    return _phdr_adds(ctypes, libc.dl_iterate_phdr)


def _phdr_adds(ctypes, iterate):
    """``dlpi_adds`` through ``dl_iterate_phdr``, stopped at the first object."""

    class Info(ctypes.Structure):  # struct dl_phdr_info, up to dlpi_adds
        _fields_ = [
            ("addr", ctypes.c_void_p),
            ("name", ctypes.c_char_p),
            ("phdr", ctypes.c_void_p),
            ("phnum", ctypes.c_uint16),
            ("adds", ctypes.c_ulonglong),
        ]

    callback_type = ctypes.CFUNCTYPE(
        ctypes.c_int, ctypes.POINTER(Info), ctypes.c_size_t, ctypes.c_void_p
    )
    found = [0]

    def first(info, size, data):
        # a C library too old to fill dlpi_adds passes a smaller size: count 0 then
        found[0] = info.contents.adds if size >= ctypes.sizeof(Info) else 0
        return 1  # stop after the first object

    callback = callback_type(first)
    iterate.argtypes = [callback_type, ctypes.c_void_p]

    def count():
        iterate(callback, None)
        return found[0]

    return count


_LOADER_COUNT = _loader_counter()


# One policy per process: the pools it sizes are process-wide.
POLICY = ThreadPolicy()
POOLS = BlasPools()
_UPDATING = threading.Lock()


_SHARERS = [1]  # threads running compute side by side now (see shared_by)


def compute_threads():
    """The number of threads CPU kernels may use now (at least 1), per caller of ``shared_by``."""
    if time.monotonic() >= POLICY.next_sample:
        _update()
    return max(1, POLICY.threads // _SHARERS[0])


class shared_by:  # noqa: N801  (a context manager used as a function)
    """Within it, ``callers`` threads run CPU compute side by side, each on its share.

    ``compute_threads()`` and the BLAS pools give each caller the count divided
    by ``callers`` (at least 1): two executors running at once on a 2-core
    machine each run their products on one thread instead of both spinning two.
    The calling thread enters it around the work it hands out; it does not nest
    across threads (one group of side-by-side callers at a time).
    """

    __slots__ = ("_callers", "_previous")

    def __init__(self, callers):
        self._callers = max(1, int(callers))

    def __enter__(self):
        self._previous = _SHARERS[0]
        _share(self._callers)
        return self

    def __exit__(self, *exc):
        _share(self._previous)
        return False


def _share(callers):
    """Divide the count among ``callers`` and hold the BLAS pools to one caller's part."""
    _SHARERS[0] = callers
    threads = max(1, POLICY.threads // callers)
    if POOLS.controllable and POOLS.rescan_due:
        POOLS.limit(threads)  # once: the pools were not looked for since the import
    elif POOLS.controllable and threads != POOLS.applied:
        POOLS.hold(threads)


def engine_threads():
    """The size of a pool whose threads sleep while they wait (ONNX Runtime's, spinning off).

    The user's count, else the usable cores (capped by ``MXNET_OMP_MAX_THREADS``):
    the load does not reduce it. A sleeping thread whose CPU another process
    takes costs its pool little, and the scheduler shares a busy machine's
    time per thread (measured on ResNet-18 under load: two such threads ran as
    fast as one; idle, twice as fast).
    """
    return POLICY.fixed or POLICY.limit


def engine_share():
    """``engine_threads()`` divided among the callers running side by side now (at least 1).

    Several cpu contexts each running a team of the full count would put
    twice the threads on the cores (LeNet on two contexts: 0.93x one).
    """
    return max(1, engine_threads() // _SHARERS[0])


def refresh():
    """Re-sample the load when due and resize the pools if the count changed (microseconds)."""
    if time.monotonic() >= POLICY.next_sample:
        _update()


def _update():
    if not _UPDATING.acquire(blocking=False):
        return  # another thread is sampling: the current count stands meanwhile
    try:
        threads = max(1, POLICY.update(time.monotonic()) // _SHARERS[0])
        if POOLS.controllable and (threads != POOLS.applied or POOLS.rescan_due or POOLS.stale()):
            POOLS.limit(threads)  # also when libraries loaded since the last scan
    finally:
        _UPDATING.release()


def _size_pools_at_import():
    if POOLS.controllable:
        import numpy  # noqa: F401  (load the BLAS, then set it)

        POOLS.limit(POLICY.threads)
        POOLS.rescan_due = True  # again at the first update, for libraries loaded later
    else:
        POOLS.size_at_load(POLICY.threads)


_size_pools_at_import()
