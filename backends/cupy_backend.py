"""The CuPy backend: serves ``gpu`` contexts.

Importing this module does not import CuPy: the library is loaded the first
time a GPU array is asked for, so machines without CuPy or without a GPU pay
nothing and get a clear error only when they ask for ``gpu(i)``.
"""

import importlib
import math
import weakref

import attrs
import numpy as np

from rebind.backend import Backend
from rebind.hookspecs import hookimpl

from .cupy_ahead import CopyAhead
from .cupy_staging import PinnedRing

__all__ = ["CupyBackend"]

# page-locked host memory host_zeros gives at most, live (more is pageable: pinning
# takes the memory from the system for good while it lives)
PINNED_HOST_LIMIT = 4 << 30

INSTALL_HINT = (
    "pip install 'rebind[gpu]' (CuPy for CUDA 12) or 'rebind[gpu-cuda13]' (CuPy for CUDA 13)"
)


@attrs.define(eq=False)
class CupyBackend(Backend):
    """GPU arrays are ``cupy.ndarray``, placed with ``cupy.cuda.Device``."""

    name: str = "cupy"
    device_type: str = "gpu"
    _module: object = attrs.field(default=None, init=False, repr=False)
    _stagings: dict = attrs.field(factory=dict, init=False, repr=False)
    _aheads: dict = attrs.field(factory=dict, init=False, repr=False)
    _import_error: object = attrs.field(default=None, init=False, repr=False)
    _pinned_host_bytes: int = attrs.field(default=0, init=False, repr=False)

    def _cupy(self):
        if self._module is None and self._import_error is None:
            try:
                self._module = importlib.import_module("cupy")
            except Exception as exc:  # ImportError, or CUDA libraries failing to load
                self._import_error = exc
        return self._module

    @property
    def xp(self):
        cupy = self._cupy()
        if cupy is None:
            self.check_device(0)
        return cupy

    def unavailable_reason(self):
        cupy = self._cupy()
        if cupy is None:
            return f"CuPy is not importable ({self._import_error}); install it with {INSTALL_HINT}"
        if self.num_devices() == 0:
            return "CuPy is installed but no CUDA device is visible"
        return None

    def num_devices(self):
        cupy = self._cupy()
        if cupy is None:
            return 0
        try:
            return cupy.cuda.runtime.getDeviceCount()
        except cupy.cuda.runtime.CUDARuntimeError:
            return 0

    def device(self, device_id):
        return self.xp.cuda.Device(device_id)

    def asarray(self, obj, dtype, device_id):
        with self.device(device_id):
            if isinstance(obj, self.xp.ndarray):
                return obj.astype(dtype, copy=True)
            # one host -> device copy, staged (see copy_from_host): NumPy input is read
            # where it is (np.asarray)
            host = np.asarray(obj, dtype=dtype)
            target = self.xp.empty(host.shape, dtype=host.dtype)
            self._staging(device_id).copy(self.xp, target, host)
            return target

    def to_host(self, array):
        return self.xp.asnumpy(array)

    def copy_from_host(self, target, host, device_id):
        """Host -> device through pinned staging memory, without waiting for the device.

        See ``cupy_staging``: a copy from pageable memory would first wait for
        every kernel queued on the device. A non-contiguous target is filled
        from a staged contiguous copy.
        """
        host = np.asarray(host)
        if host.dtype != target.dtype:
            host = host.astype(target.dtype)
        host = np.broadcast_to(host, target.shape)
        with self.device(device_id):
            staging = self._staging(device_id)
            if target.flags.c_contiguous:
                staging.copy(self.xp, target, host)
                return
            whole = self.xp.empty(target.shape, dtype=target.dtype)
            staging.copy(self.xp, whole, host)
            target[...] = whole

    def copy_to_host(self, source, out):
        """Device -> host straight into ``out`` where the layouts match (no host array between).

        ``ndarray.get(out=)`` waits for the queued work, then copies; into
        page-locked memory (``host_zeros``) at the bus's speed.
        """
        if (
            out.dtype == source.dtype
            and out.shape == source.shape
            and out.flags.c_contiguous
            and out.flags.writeable
            and source.flags.c_contiguous
        ):
            source.get(out=out)
            return
        out[...] = self.to_host(source)

    def host_zeros(self, shape, dtype):
        """Zeros in page-locked host memory, up to ``PINNED_HOST_LIMIT`` bytes live in all."""
        dtype = np.dtype(dtype)
        count = math.prod(shape)
        nbytes = count * dtype.itemsize
        if not nbytes or self._pinned_host_bytes + nbytes > PINNED_HOST_LIMIT:
            return np.zeros(shape, dtype=dtype)
        memory = self.xp.cuda.alloc_pinned_memory(nbytes)
        array = np.frombuffer(memory, dtype=dtype, count=count).reshape(shape)
        array.fill(0)  # the pinned pool hands memory back out as it was left
        self._pinned_host_bytes += nbytes
        weakref.finalize(array, self._unpin, nbytes)
        return array

    def _unpin(self, nbytes):
        self._pinned_host_bytes -= nbytes

    def copy_ahead(self, target, host, device_id):
        """Start the copy on the device's copy stream (``cupy_ahead``); None if it does not fit.

        A target that is not C-contiguous, or a host array of another shape,
        gets None: the caller's ordinary copy handles (or refuses) it.
        """
        host = np.asarray(host)
        if host.shape != target.shape or not target.flags.c_contiguous:
            return None
        if host.dtype != target.dtype:
            host = host.astype(target.dtype)
        with self.device(device_id):
            ahead = self._aheads.get(device_id)
            if ahead is None:
                ahead = self._aheads[device_id] = CopyAhead(self._staging(device_id))
            return ahead.start(self.xp, device_id, target, host)

    def owns(self, array):
        cupy = self._cupy()
        return cupy is not None and isinstance(array, cupy.ndarray)

    def synchronize(self, device_id=None):
        devices = range(self.num_devices()) if device_id is None else [device_id]
        for index in devices:
            with self.device(index):
                self.xp.cuda.get_current_stream().synchronize()

    def free_cached_memory(self):
        for device_id, ahead in self._aheads.items():
            with self.device(device_id):
                ahead.release()
        self.xp.get_default_memory_pool().free_all_blocks()
        self.xp.get_default_pinned_memory_pool().free_all_blocks()

    def memory_info(self, device_id):
        self.check_device(device_id)
        with self.device(device_id):
            free, total = self.xp.cuda.runtime.memGetInfo()
        return int(free), int(total)

    def memory_report(self, device_id):
        """CuPy's pool on the device (bytes in arrays, bytes held), pinned staging, the device.

        ``pool_used``: bytes of live CuPy arrays; ``pool_held``: bytes the pool
        has taken from the device (used plus cached for reuse, which
        ``Context.empty_cache`` gives back); ``pinned_staging``: the host buffer
        that stages copies to the device; ``device_free``/``device_total``: what
        CUDA reports for the whole device (other processes included).
        """
        free, total = self.memory_info(device_id)  # checks the device
        with self.device(device_id):
            pool = self.xp.get_default_memory_pool()
            used, held = int(pool.used_bytes()), int(pool.total_bytes())
        staging = self._stagings.get(device_id)
        return {
            "pool_used": used,
            "pool_held": held,
            "pinned_staging": 0 if staging is None else staging.capacity,
            "device_free": free,
            "device_total": total,
        }

    def compute_capability(self, device_id):
        self.check_device(device_id)
        return int(self.device(device_id).compute_capability)

    def _staging(self, device_id):
        staging = self._stagings.get(device_id)
        if staging is None:
            staging = self._stagings[device_id] = PinnedRing()
        return staging

    def _make_rng(self, seed, device_id):
        with self.device(device_id):
            folded = None if seed is None else (seed[0] * 1000003 + seed[1]) % (2**63)
            return self.xp.random.RandomState(folded)

    def uniform(self, low, high, shape, dtype, device_id):
        with self.device(device_id):
            values = self.rng(device_id).uniform(low, high, size=shape)
            return values.astype(dtype, copy=False)

    def normal(self, loc, scale, shape, dtype, device_id):
        with self.device(device_id):
            values = self.rng(device_id).normal(loc, scale, size=shape)
            return values.astype(dtype, copy=False)

    def randint(self, low, high, shape, dtype, device_id):
        with self.device(device_id):
            return self.rng(device_id).randint(low, high, size=shape, dtype=dtype)

    def permutation(self, n, device_id):
        with self.device(device_id):
            return self.rng(device_id).permutation(n)

    def gamma(self, alpha, scale, shape, dtype, device_id):
        """Gamma draws of shape ``alpha`` and scale ``scale`` (scalars or broadcast arrays)."""
        with self.device(device_id):
            values = self.rng(device_id).gamma(alpha, scale, size=shape)
            return values.astype(dtype, copy=False)

    def exponential(self, scale, shape, dtype, device_id):
        with self.device(device_id):
            values = self.rng(device_id).exponential(scale, size=shape)
            return values.astype(dtype, copy=False)

    def poisson(self, lam, shape, dtype, device_id):
        with self.device(device_id):
            values = self.rng(device_id).poisson(lam, size=shape)
            return values.astype(dtype, copy=False)


@hookimpl
def rebind_add_backends(registry):
    registry.add("cupy", CupyBackend())
