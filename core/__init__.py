"""rebind: MXNet 1.x's Module API on NumPy and CuPy. ``import rebind as mx``."""

# first: the thread policy sizes BLAS as NumPy loads it (see threadpool.py)
from . import threadpool  # noqa: F401

# isort: split
from . import (
    attribute,
    base,
    callback,
    contrib,
    engine,
    errors,
    executor,
    image,
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
    onnx,
    operator,
    optimizer,
    profiler,
    random,
    recordio,
    registry,
    rnn,
    runtime,
    symbol,
    test_utils,
    util,
    visualization,
)
from . import image as img  # MXNet's alias
from . import initializer as init
from . import kvstore as kv
from . import module as mod
from . import monitor as mon
from . import ndarray as nd
from . import optimizer as opt
from . import random as rnd
from . import symbol as sym
from . import visualization as viz
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
from .util import (
    is_np_array,
    is_np_shape,
    np_array,
    np_shape,
    set_np_shape,
    use_np,
    use_np_array,
    use_np_shape,
)

__version__ = "0.1.0"

from . import missing as _missing  # noqa: E402  (after the package's own names)

_missing.install()


def __getattr__(name):
    """``mx.gluon``, ``mx.autograd``, ``mx.np``...: an AttributeError saying why and what to use."""
    raise _missing.missing_attribute(name)


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
    "engine",
    "errors",
    "executor",
    "gpu",
    "hookimpl",
    "image",
    "img",
    "init",
    "initializer",
    "io",
    "is_np_array",
    "is_np_shape",
    "kv",
    "kvstore",
    "lr_scheduler",
    "metric",
    "mod",
    "model",
    "module",
    "mon",
    "monitor",
    "name",
    "nd",
    "ndarray",
    "np_array",
    "np_shape",
    "num_gpus",
    "onnx",
    "operator",
    "opt",
    "optimizer",
    "profiler",
    "random",
    "recordio",
    "registry",
    "rnd",
    "rnn",
    "runtime",
    "set_np_shape",
    "sym",
    "symbol",
    "test_utils",
    "use_np",
    "use_np_array",
    "use_np_shape",
    "util",
    "visualization",
    "viz",
]
