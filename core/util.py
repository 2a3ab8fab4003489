"""``mx.util``: environment variables, GPU facts, and MXNet's NumPy-mode switches.

rebind has no C library, so ``getenv``/``setenv`` work on ``os.environ`` (which
is where rebind reads its own settings). GPU facts come from the gpu backend
(CuPy), imported only when asked. rebind has no NumPy-semantics mode
(``mx.np``): the query functions answer False, switching it off is accepted,
and switching it on raises NotImplementedError saying so.
"""

import functools
import os

from .context import backend_for, gpu_memory_info
from .errors import BackendUnavailableError

__all__ = [
    "get_cuda_compute_capability",
    "get_gpu_count",
    "get_gpu_memory",
    "getenv",
    "is_np_array",
    "is_np_shape",
    "np_array",
    "np_shape",
    "np_ufunc_legal_option",
    "reset_np",
    "set_module",
    "set_np",
    "set_np_shape",
    "setenv",
    "use_np",
    "use_np_array",
    "use_np_shape",
    "wrap_np_binary_func",
    "wrap_np_unary_func",
]

NO_NUMPY_MODE = (
    "rebind has no NumPy-compatible mode (mx.np / mx.npx): arrays keep MXNet's "
    "legacy NDArray semantics"
)


def getenv(name):
    """The value of environment variable ``name``, or None when it is unset."""
    return os.environ.get(name)


def setenv(name, value):
    """Set environment variable ``name`` to ``value`` (None unsets it)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


def _gpu_backend():
    return backend_for("gpu")


def get_gpu_count():
    """How many GPUs rebind can use (0 without CuPy or a device)."""
    try:
        backend = _gpu_backend()
    except BackendUnavailableError:
        return 0
    return backend.num_devices() if backend.unavailable_reason() is None else 0


def get_gpu_memory(gpu_dev_id):
    """``(free, total)`` bytes of GPU ``gpu_dev_id``'s memory.

    Raises BackendUnavailableError naming what is missing where there is no
    such GPU (or no CuPy).
    """
    return gpu_memory_info(gpu_dev_id)


def get_cuda_compute_capability(ctx):
    """The compute capability of GPU context ``ctx`` as an int (``90`` for 9.0)."""
    if ctx.device_type != "gpu":
        raise ValueError(f"get_cuda_compute_capability: {ctx} is not a GPU context")
    return _gpu_backend().compute_capability(ctx.device_id)


def set_module(module):
    """Decorator giving a function or class the ``__module__`` of the public namespace."""

    def decorate(func):
        if module is not None:
            func.__module__ = module
        return func

    return decorate


def is_np_array():
    """Always False: rebind has no NumPy-array mode."""
    return False


def is_np_shape():
    """Always False: rebind has no NumPy-shape mode (0 means an unknown dimension)."""
    return False


def set_np_shape(active):
    """Switch NumPy-shape semantics: off is accepted (returns False), on is refused."""
    if active:
        raise NotImplementedError(NO_NUMPY_MODE)
    return False


def set_np(shape=True, array=True, dtype=False):
    """Switch MXNet's NumPy mode: only all-off is accepted (rebind has no such mode)."""
    if shape or array or dtype:
        raise NotImplementedError(NO_NUMPY_MODE)


def reset_np():
    """Turn the NumPy mode off: it never is on in rebind, so this does nothing."""


class _NumpyMode:
    """The context managers ``np_shape(active)`` / ``np_array(active)``."""

    def __init__(self, active=True):
        self._active = active

    def __enter__(self):
        if self._active:
            raise NotImplementedError(NO_NUMPY_MODE)
        return self

    def __exit__(self, *exc):
        return False


def np_shape(active=True):
    """Context manager for NumPy-shape semantics: ``np_shape(False)`` is a no-op."""
    return _NumpyMode(active)


def np_array(active=True):
    """Context manager for NumPy-array semantics: ``np_array(False)`` is a no-op."""
    return _NumpyMode(active)


def _refusing_decorator(name):
    def decorate(func):
        """Calling the decorated function raises: rebind has no NumPy mode."""

        @functools.wraps(func)
        def refused(*args, **kwargs):
            raise NotImplementedError(f"{name}: {NO_NUMPY_MODE}")

        return refused

    decorate.__name__ = name
    return decorate


# Decorating is allowed (test files decorate at import time); running the result refuses.
use_np = _refusing_decorator("use_np")
use_np_array = _refusing_decorator("use_np_array")
use_np_shape = _refusing_decorator("use_np_shape")
wrap_np_unary_func = _refusing_decorator("wrap_np_unary_func")
wrap_np_binary_func = _refusing_decorator("wrap_np_binary_func")


def np_ufunc_legal_option(key, value):
    """Whether ``key=value`` is a ufunc option MXNet's NumPy mode accepts."""
    raise NotImplementedError(f"np_ufunc_legal_option: {NO_NUMPY_MODE}")
