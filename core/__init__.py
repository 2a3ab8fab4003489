"""rebind: MXNet 1.x's Module API on NumPy and CuPy. ``import rebind as mx``."""

from . import attribute, errors, executor, name, ndarray, operator, random, registry, symbol
from . import ndarray as nd
from . import symbol as sym
from .attribute import AttrScope
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
    "AttrScope",
    "Context",
    "FormatError",
    "LifecycleError",
    "PluginError",
    "RebindError",
    "ShapeError",
    "cpu",
    "cpu_pinned",
    "current_context",
    "attribute",
    "errors",
    "executor",
    "gpu",
    "hookimpl",
    "nd",
    "name",
    "ndarray",
    "num_gpus",
    "random",
    "registry",
    "sym",
    "symbol",
    "operator",
]
