"""The Backend contract: what rebind asks of an array library.

A backend owns one array namespace ``xp`` (NumPy's API; CuPy mirrors it) and
the few things that differ between libraries: putting arrays on a device,
bringing them to the host, random streams, and waiting for queued work.
Everything else (NDArray arithmetic, operator kernels) is written once against
``xp``. A backend may replace an operator's kernel with its own through
``kernels`` (for example a cuDNN convolution).

Backends are contributed by plugins through ``rebind_add_backends``.
"""

import attrs
import numpy as np

from .errors import BackendUnavailableError

__all__ = ["Backend"]


@attrs.define(eq=False)
class Backend:
    """Base class of array backends; subclasses fill in the device-specific parts.

    Attributes:
        name: what ``REBIND_BACKEND`` selects ("numpy", "cupy", ...).
        device_type: the context type it serves ("cpu", "gpu", or a new one).
        kernels: operator name -> kernel replacing the generic one.
    """

    name: str
    device_type: str
    kernels: dict = attrs.field(factory=dict, repr=False)
    _rngs: dict = attrs.field(factory=dict, repr=False, init=False)
    _seed: object = attrs.field(default=None, repr=False, init=False)

    # -- availability -------------------------------------------------------
    @property
    def xp(self):
        """The array namespace (a module with NumPy's API)."""
        raise NotImplementedError(f"backend {self.name!r} does not define xp")

    def unavailable_reason(self):
        """None when usable; otherwise a sentence saying what is missing."""
        return None

    def num_devices(self):
        """How many devices of ``device_type`` this backend can use."""
        return 1

    def check_device(self, device_id):
        """Raise BackendUnavailableError unless ``device_id`` can be used."""
        reason = self.unavailable_reason()
        if reason is None and not 0 <= device_id < self.num_devices():
            reason = (
                f"{self.device_type}({device_id}) does not exist: backend {self.name!r} "
                f"sees {self.num_devices()} device(s)"
            )
        if reason is not None:
            raise BackendUnavailableError(reason)

    # -- arrays -------------------------------------------------------------
    def device(self, device_id):
        """A context manager under which new arrays land on ``device_id``."""
        return _NoDevice()

    def asarray(self, obj, dtype, device_id):
        """A new array on ``device_id`` holding a copy of ``obj``."""
        with self.device(device_id):
            return self.xp.array(obj, dtype=dtype, copy=True)

    def empty(self, shape, dtype, device_id):
        with self.device(device_id):
            return self.xp.empty(shape, dtype=dtype)

    def zeros(self, shape, dtype, device_id):
        with self.device(device_id):
            return self.xp.zeros(shape, dtype=dtype)

    def full(self, shape, value, dtype, device_id):
        with self.device(device_id):
            return self.xp.full(shape, value, dtype=dtype)

    def to_host(self, array):
        """A NumPy array with the values of ``array`` (a copy where needed)."""
        return np.asarray(array)

    def owns(self, array):
        """Whether ``array`` is one of this backend's arrays."""
        return isinstance(array, self.xp.ndarray)

    def synchronize(self, device_id=None):
        """Wait until queued work on the device (all devices if None) is done."""

    def free_cached_memory(self):
        """Give cached device memory back to the system, where the library caches."""

    # -- random streams -----------------------------------------------------
    def seed(self, seed, device_id=None):
        """Re-seed the stream of one device, or of all devices when None."""
        if device_id is None:
            self._seed = seed
            self._rngs.clear()
        else:
            self._rngs[device_id] = self._make_rng(_mix(seed, device_id), device_id)

    def rng(self, device_id):
        """The random generator of ``device_id``, made on first use."""
        generator = self._rngs.get(device_id)
        if generator is None:
            seed = None if self._seed is None else _mix(self._seed, device_id)
            generator = self._rngs[device_id] = self._make_rng(seed, device_id)
        return generator

    def _make_rng(self, seed, device_id):
        raise NotImplementedError(f"backend {self.name!r} has no random generator")

    def uniform(self, low, high, shape, dtype, device_id):
        raise NotImplementedError(f"backend {self.name!r} cannot draw uniform samples")

    def normal(self, loc, scale, shape, dtype, device_id):
        raise NotImplementedError(f"backend {self.name!r} cannot draw normal samples")

    def randint(self, low, high, shape, dtype, device_id):
        raise NotImplementedError(f"backend {self.name!r} cannot draw random integers")

    def permutation(self, n, device_id):
        raise NotImplementedError(f"backend {self.name!r} cannot draw permutations")

    # -- kernels ------------------------------------------------------------
    def kernel(self, op_name, default):
        """The kernel to run for ``op_name``: this backend's override or ``default``."""
        return self.kernels.get(op_name, default)

    def describe(self):
        """One line for error messages: name, device type, and state."""
        reason = self.unavailable_reason()
        state = "ready" if reason is None else "unavailable"
        return f"{self.name} [{self.device_type}, {state}]"


def _mix(seed, device_id):
    """A per-device seed: the same user seed gives each device its own stream."""
    return [int(seed) & 0xFFFFFFFFFFFFFFFF, int(device_id)]


class _NoDevice:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
