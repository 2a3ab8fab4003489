"""rebind: MXNet 1.x's Module API on NumPy and CuPy. ``import rebind as mx``."""

from . import (
    attribute,
    base,
    callback,
    contrib,
    errors,
    executor,
    initializer,
    io,
    kvstore,
    lr_scheduler,
    metric,
    model,
    module,
    monitor,
    name,
    ndarray,
    operator,
    optimizer,
    random,
    registry,
    rnn,
    symbol,
    test_utils,
)
from . import initializer as init
from . import kvstore as kv
from . import module as mod
from . import ndarray as nd
from . import optimizer as opt
from . import symbol as sym
from .attribute import AttrScope
from .base import MXNetError
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
    "MXNetError",
    "PluginError",
    "RebindError",
    "ShapeError",
    "attribute",
    "base",
    "callback",
    "contrib",
    "cpu",
    "cpu_pinned",
    "current_context",
    "errors",
    "executor",
    "gpu",
    "hookimpl",
    "init",
    "initializer",
    "io",
    "kv",
    "kvstore",
    "lr_scheduler",
    "metric",
    "mod",
    "model",
    "module",
    "monitor",
    "name",
    "nd",
    "ndarray",
    "num_gpus",
    "operator",
    "opt",
    "optimizer",
    "random",
    "registry",
    "rnn",
    "sym",
    "symbol",
    "test_utils",
]
