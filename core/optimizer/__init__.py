"""``mx.optimizer`` (alias ``mx.opt``): the Optimizer base class, ``create`` and ``register``.

An optimizer turns a gradient into an in-place weight update. The package owns
what every optimizer shares, as MXNet 1.9.1 defines it: the constructor
arguments, learning-rate and weight-decay multipliers per parameter (from
``set_lr_mult``/``set_wd_mult``, from a symbol's ``__lr_mult__``/``__wd_mult__``
attributes, and MXNet's default of no weight decay on parameters whose names
end in neither ``_weight`` nor ``_gamma``), the per-index update counts that
drive schedules and bias corrections, and the float16 master-copy wrapper.

The optimizers themselves (``sgd``, ``adam``, ...) are plugins registered
through ``rebind_add_optimizers``; ``mx.optimizer.SGD`` and the like resolve
through the registry, so a third-party optimizer is reachable the same way.
Helpers for implementations (``_clip``, ``_state_zeros``, ...) work on the
backend arrays, so update math is written once for NumPy and CuPy.

Files: ``optimizer`` (the base class, ``create``, ``register``), ``updater``
(``Updater``, ``get_updater``), ``states`` (saving and loading updater
states) and ``mxnet_pickle`` (reading MXNet's pickled ``.states`` safely).
"""

from .. import registry
from . import contrib  # noqa: F401  (mx.optimizer.contrib, as in MXNet)
from .optimizer import FAMILY, Optimizer, create, register
from .updater import Updater, get_updater

__all__ = ["Optimizer", "Updater", "create", "get_updater", "register"]


def __getattr__(name):
    """``mx.optimizer.SGD`` and friends: registered optimizer classes by (any-case) name."""
    if not name.startswith("_"):
        optimizers = registry.get_registry(FAMILY)
        if name in optimizers:
            return optimizers.get(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
