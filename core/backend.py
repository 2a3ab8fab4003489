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

    def copy_from_host(self, target, host, device_id):
        """Write the NumPy array ``host`` into this backend's array ``target`` (same shape).

        Host backends copy directly; a device backend may stage the copy (see
        the CuPy backend). ``host`` may be read only until this returns.
        """
        target[...] = host

    def copy_to_host(self, source, out):
        """Write this backend's array ``source`` into the NumPy array ``out`` (same shape).

        A device backend may copy straight into ``out`` (see the CuPy backend).
        """
        out[...] = self.to_host(source)

    def host_zeros(self, shape, dtype):
        """A NumPy array of zeros that copies to and from this backend's devices fast.

        Host memory as usual here; a GPU backend gives page-locked memory, which the
        device reads and writes at the bus's speed (the module's host copies of its
        parameters, refreshed each epoch, live in it).
        """
        return np.zeros(shape, dtype=dtype)

    def copy_ahead(self, target, host, device_id):
        """Start copying the NumPy array ``host`` for ``target`` before ``target`` may change.

        For a device that runs the work queued before the copy while the copy
        travels. Returns a ticket, or None where nothing would overlap (then the
        caller copies when the values are due, as host backends always do). The
        ticket's ``finish()`` writes the values into ``target`` after the work
        already queued on the current stream; ``drop()`` forgets them. ``host``
        may change once this returns.
        """
        return None

    def owns(self, array):
        """Whether ``array`` is one of this backend's arrays."""
        return isinstance(array, self.xp.ndarray)

    def synchronize(self, device_id=None):
        """Wait until queued work on the device (all devices if None) is done."""

    def free_cached_memory(self):
        """Give cached device memory back to the system, where the library caches."""

    def memory_info(self, device_id):
        """``(free, total)`` bytes of one device's memory; backends without one refuse."""
        raise NotImplementedError(
            f"backend {self.name!r} ({self.device_type}) reports no device memory"
        )

    def memory_report(self, device_id):
        """Bytes one device's memory holds, by kind (a dict), or None for host backends.

        Device backends report at least ``device_free`` and ``device_total``;
        the CuPy backend adds its memory pool and pinned staging buffer.
        """
        return None

    def compute_capability(self, device_id):
        """The device's compute capability as an int (``90`` for 9.0); GPU backends only."""
        raise NotImplementedError(
            f"backend {self.name!r} ({self.device_type}) has no compute capability"
        )

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

    def get_rng_state(self):
        """Every stream of this backend as JSON-able data, to resume training exactly.

        A generator that exports its state (NumPy's) is saved as it is. One that
        cannot (CuPy's ``RandomState``) is re-seeded with a number drawn from
        itself and that number is saved, so the run that saved and the run that
        resumes continue from the same point.
        """
        streams = {str(device_id): self._stream_state(device_id) for device_id in list(self._rngs)}
        return {"seed": self._seed, "streams": streams}

    def _stream_state(self, device_id):
        generator = self._rngs[device_id]
        bit_generator = getattr(generator, "bit_generator", None)
        if bit_generator is not None:
            return {"bit_generator": bit_generator.state}
        drawn = int(self.to_host(self.randint(0, 2**62, (1,), "int64", device_id))[0])
        self._rngs[device_id] = self._make_rng(_mix(drawn, device_id), device_id)
        return {"reseeded": drawn}

    def set_rng_state(self, state):
        """Restore the streams saved by ``get_rng_state``."""
        self._seed = state.get("seed")
        self._rngs.clear()
        for key, stream in state.get("streams", {}).items():
            device_id = int(key)
            if "bit_generator" in stream:
                generator = self._make_rng(None, device_id)
                generator.bit_generator.state = stream["bit_generator"]
            else:
                generator = self._make_rng(_mix(stream["reseeded"], device_id), device_id)
            self._rngs[device_id] = generator

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
