"""rebind: MXNet 1.x's Module API on NumPy and CuPy. ``import rebind as mx``."""

from . import errors, ndarray, random, registry
from . import ndarray as nd
from .context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus
from .errors import (
    FormatError,
    LifecycleError,
    PluginError,
    RebindError,
    ShapeError,
)
from .hookspecs import hookimpl

__version__ = "0.1.0"

__all__ = [
    "Context",
    "FormatError",
    "LifecycleError",
    "PluginError",
    "RebindError",
    "ShapeError",
    "cpu",
    "cpu_pinned",
    "current_context",
    "errors",
    "gpu",
    "hookimpl",
    "nd",
    "ndarray",
    "num_gpus",
    "random",
    "registry",
]
