"""``KVStoreBase``: the interface every key-value store offers, and ``register``.

MXNet 1.9 separates the interface a training loop needs (``broadcast``,
``pushpull``, ``set_optimizer``, optimizer states, ``is_capable``, ``type``,
``rank``, ``num_workers``) from its native store, so a third party (Horovod,
BytePS) can plug in a store written in Python: subclass ``KVStoreBase``,
decorate it with ``KVStoreBase.register`` and ``mx.kv.create(name)`` makes one.
rebind keeps that interface here; ``KVStore`` (``kvstore.py``) is rebind's
in-process implementation of it. Registered classes join the ``kvstores``
family of the plugin registry, the one the built-in stores are found in.
"""

from .. import registry

__all__ = ["KVStoreBase", "register", "FAMILY"]

FAMILY = "kvstores"


class KVStoreBase:
    """The key-value store interface for data-parallel training; every method is abstract.

    A subclass implements what it supports and leaves the rest raising
    ``NotImplementedError``, as MXNet's stores do. ``is_capable(OPTIMIZER)``
    says whether the store can run the optimizer itself (then a module hands
    it one with ``set_optimizer``); otherwise the module updates locally and
    uses the store only to ``broadcast`` parameters and ``pushpull`` gradients.
    """

    OPTIMIZER = "optimizer"

    def _missing(self, what):
        return NotImplementedError(f"{type(self).__name__} does not implement {what}")

    def broadcast(self, key, value, out, priority=0):
        """Copy ``value`` (rank 0's) of ``key`` into ``out`` (an NDArray or a list) everywhere."""
        raise self._missing("broadcast")

    def pushpull(self, key, value, out=None, priority=0):
        """Sum ``value`` over devices and workers into ``out`` (or into ``value`` itself)."""
        raise self._missing("pushpull")

    def set_optimizer(self, optimizer):
        """Run ``optimizer`` on the store (stores capable of ``OPTIMIZER`` only)."""
        raise self._missing("set_optimizer")

    def is_capable(self, capability):
        """Whether the store supports ``capability`` (e.g. ``KVStoreBase.OPTIMIZER``)."""
        raise self._missing("is_capable")

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the optimizer states of the store to ``fname``."""
        raise self._missing("save_optimizer_states")

    def load_optimizer_states(self, fname):
        """Read the optimizer states of the store from ``fname``."""
        raise self._missing("load_optimizer_states")

    @property
    def type(self):
        """The store's type name, e.g. ``'local'``."""
        raise self._missing("type")

    @property
    def rank(self):
        """This worker's rank, in ``[0, num_workers)``."""
        raise self._missing("rank")

    @property
    def num_workers(self):
        """The number of workers."""
        raise self._missing("num_workers")

    @staticmethod
    def register(klass):
        """Make ``mx.kv.create(klass.__name__.lower())`` return ``klass()``; returns ``klass``.

        MXNet's decorator: registering a name again replaces it with a warning.
        """
        return register(klass)


def register(klass):
    """Register a KVStoreBase subclass under its lower-cased class name; returns the class."""
    if not (isinstance(klass, type) and issubclass(klass, KVStoreBase)):
        raise TypeError(
            f"kvstore register: expected a KVStoreBase subclass, got {klass!r}; derive "
            "the store from mx.kv.KVStoreBase"
        )
    registry.add_runtime(FAMILY, klass.__name__.lower(), klass, owner=klass.__module__)
    return klass
