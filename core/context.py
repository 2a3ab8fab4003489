"""Contexts (where an array lives) and the choice of backend behind each.

``Context("gpu", 1)`` names a device; the backend that serves it comes from
the registry. ``REBIND_BACKEND`` names the backend behind the default context
(``numpy`` unless set); that backend also serves its own device type, so a
third-party CPU backend selected this way runs every ``cpu()`` array.
"""

import os
import threading

from . import registry
from .errors import BackendUnavailableError, UnknownNameError

__all__ = [
    "Context",
    "backend_for",
    "cpu",
    "cpu_pinned",
    "current_context",
    "gpu",
    "gpu_memory_info",
    "gpu_memory_report",
    "num_gpus",
]

# MXNet's numeric device types, as written in .params files.
_DEVTYPE_IDS = {"cpu": 1, "gpu": 2, "cpu_pinned": 3, "cpu_shared": 5}
# Device types that are host memory and so share the cpu backend.
_HOST_TYPES = ("cpu", "cpu_pinned", "cpu_shared")

_local = threading.local()
_cache = {}


class _ContextMeta(type):
    """Gives ``Context.default_ctx`` MXNet's class-level, per-thread read/write behaviour.

    As in MXNet, ``default_ctx`` is the current context of the calling thread:
    inside ``with ctx:`` it is ``ctx``, and setting it there lasts until the
    block ends. Outside any block, setting it changes this thread's default;
    ``None`` restores the selected backend's device 0. Other threads start
    from the backend's default, whatever this thread set.
    """

    @property
    def default_ctx(cls):
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, ctx):
        stack = _stack()
        if ctx is None:
            _local.default = None
        elif stack:
            stack[-1] = Context(ctx)
        else:
            _local.default = Context(ctx)


class Context(metaclass=_ContextMeta):
    """A device: a type ("cpu", "gpu", ...) and an index, usable as ``with ctx:``."""

    __slots__ = ("device_type", "device_id", "_outer")

    devtype2str = {value: key for key, value in _DEVTYPE_IDS.items()}
    devstr2type = dict(_DEVTYPE_IDS)

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        elif isinstance(device_type, int):
            if device_type not in self.devtype2str:
                raise ValueError(f"unknown device type id {device_type}; known: {self.devtype2str}")
            device_type = self.devtype2str[device_type]
        if not isinstance(device_type, str) or not device_type:
            raise TypeError(f"device_type must be a name such as 'cpu', got {device_type!r}")
        if not isinstance(device_id, int) or device_id < 0:
            raise ValueError(f"device_id must be a non-negative int, got {device_id!r}")
        self.device_type = device_type
        self.device_id = device_id
        self._outer = []

    @property
    def device_typeid(self):
        """MXNet's numeric device type (1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared; 0 other)."""
        return _DEVTYPE_IDS.get(self.device_type, 0)

    @property
    def backend(self):
        """The backend that runs arrays on this context (checked to be usable)."""
        backend = _cache.get(self)
        if backend is None:
            backend = _cache[self] = _usable_backend(self)
        return backend

    def empty_cache(self):
        """Release memory the backend caches for this device type (CuPy's pools)."""
        backend_for(self.device_type).free_cached_memory()

    def __eq__(self, other):
        return (
            isinstance(other, Context)
            and self.device_type == other.device_type
            and self.device_id == other.device_id
        )

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        return f"{self.device_type}({self.device_id})"

    __str__ = __repr__

    def __enter__(self):
        stack = _stack()
        self._outer.append(len(stack))
        stack.append(self)
        return self

    def __exit__(self, *exc):
        del _stack()[self._outer.pop() :]
        return False


def _stack():
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def cpu(device_id=0):
    """The CPU context; ``device_id`` only matters to tell contexts apart."""
    return Context("cpu", device_id)


def gpu(device_id=0):
    """The GPU context ``device_id`` (served by the cupy backend)."""
    return Context("gpu", device_id)


def cpu_pinned(device_id=0):
    """Page-locked host memory; on rebind's backends the same as ``cpu``."""
    return Context("cpu_pinned", device_id)


def current_context():
    """The innermost ``with ctx:`` context of this thread, or this thread's default."""
    stack = _stack()
    if stack:
        return stack[-1]
    default = getattr(_local, "default", None)
    return default if default is not None else _default_context()


def selected_backend_name():
    """The backend name ``REBIND_BACKEND`` asks for ("numpy" when unset)."""
    return os.environ.get("REBIND_BACKEND", "").strip() or "numpy"


def selected_backend():
    """The backend behind the default context, from ``REBIND_BACKEND``."""
    backend = _cache.get("selected")
    if backend is None:
        name = selected_backend_name()
        try:
            backend = registry.lookup("backends", name)
        except UnknownNameError as exc:
            raise BackendUnavailableError(f"REBIND_BACKEND={name!r} is not usable: {exc}") from exc
        _cache["selected"] = backend
    return backend


def _default_context():
    return Context(selected_backend().device_type, 0)


def backend_for(device_type):
    """The backend serving ``device_type``: the selected one if it fits, else the first."""
    base_type = "cpu" if device_type in _HOST_TYPES else device_type
    backend = _cache.get(("type", base_type))
    if backend is None:
        backend = _resolve(base_type)
        _cache[("type", base_type)] = backend
    return backend


def _resolve(base_type):
    selected = selected_backend()
    if selected.device_type == base_type:
        return selected
    backends = registry.get_registry("backends")
    for _, backend in backends.items():
        if backend.device_type == base_type:
            return backend
    available = ", ".join(backend.describe() for _, backend in backends.items()) or "none"
    raise BackendUnavailableError(
        f"no backend serves device type {base_type!r}; installed backends: {available}"
    )


def _usable_backend(ctx):
    backend = backend_for(ctx.device_type)
    try:
        backend.check_device(ctx.device_id)
    except BackendUnavailableError as exc:
        installed = ", ".join(b.describe() for _, b in registry.get_registry("backends").items())
        raise BackendUnavailableError(
            f"{ctx} cannot be used: {exc}. Installed backends: {installed}"
        ) from None
    return backend


def num_gpus():
    """How many GPUs the gpu backend can use (0 without CuPy or a device)."""
    try:
        backend = backend_for("gpu")
    except BackendUnavailableError:
        return 0
    return backend.num_devices() if backend.unavailable_reason() is None else 0


def gpu_memory_info(device_id=0):
    """``(free, total)`` bytes of GPU ``device_id``'s memory (BackendUnavailableError without)."""
    return backend_for("gpu").memory_info(device_id)


def gpu_memory_report(device_id=0):
    """Bytes GPU ``device_id``'s memory holds, by kind (rebind; see the CuPy backend).

    Keys: ``pool_used``, ``pool_held``, ``pinned_staging``, ``device_free``,
    ``device_total``. Raises BackendUnavailableError without a usable GPU.
    """
    return backend_for("gpu").memory_report(device_id)


def _forget_backends():
    _cache.clear()


registry.on_reset(_forget_backends)
