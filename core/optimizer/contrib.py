"""``mx.optimizer.contrib``: where MXNet keeps its contributed optimizer, ``GroupAdaGrad``.

The optimizer itself is a plugin (``rebind.plugins.optimizers_adagrad``),
reachable as ``mx.optimizer.GroupAdaGrad`` too; this module gives it MXNet's
import path.
"""

from .. import registry

__all__ = ["GroupAdaGrad"]  # noqa: F822  (resolved by __getattr__ from the registry)


def __getattr__(name):
    if name == "GroupAdaGrad":
        return registry.lookup("optimizers", "groupadagrad")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
