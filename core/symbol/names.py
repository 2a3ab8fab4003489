"""Automatic node names (``NameManager``, ``Prefix``) and scoped attributes (``AttrScope``).

Both are ``with``-scoped and per thread, as in MXNet: ``with mx.name.Prefix('enc_'):``
prefixes every name created inside, ``with mx.AttrScope(ctx_group='dev1'):``
attaches ``__ctx_group__`` to every symbol created inside. ``NameManager.current``
and ``AttrScope.current`` are MXNet's class-level attributes: the calling thread's
manager or scope, which may also be assigned (each thread starts with a fresh one).
"""

import threading

__all__ = ["NameManager", "Prefix", "AttrScope", "HIDDEN_KEYS", "stored_key"]

_local = threading.local()

# Attributes MXNet stores as __key__ but also lists, reads and sets as plain key.
HIDDEN_KEYS = (
    "ctx_group",
    "lr_mult",
    "wd_mult",
    "force_mirroring",
    "mirror_stage",
    "profiler_scope",
)


def stored_key(key):
    """The key an attribute is stored under: ``lr_mult`` -> ``__lr_mult__``, others as given."""
    return f"__{key}__" if key in HIDDEN_KEYS else key


class _PerThreadCurrent(type):
    """Gives ``cls.current`` MXNet's class-level read/write behaviour, one value per thread.

    The value lives in this module's thread-local under ``cls._slot``; a thread
    that never set one gets ``cls._fresh()``.
    """

    @property
    def current(cls):
        value = getattr(_local, cls._slot, None)
        if value is None:
            value = cls._fresh()
            setattr(_local, cls._slot, value)
        return value

    @current.setter
    def current(cls, value):
        setattr(_local, cls._slot, value)


class NameManager(metaclass=_PerThreadCurrent):
    """Gives unnamed symbols the name ``<hint><counter>`` (``fullyconnected0``, ``_plus3``)."""

    _slot = "name_manager"

    def __init__(self):
        self._counter = {}
        self._old = None

    @staticmethod
    def _fresh():
        return NameManager()

    def get(self, name, hint):
        """``name`` itself if given, else a fresh name from ``hint``."""
        if name:
            return name
        count = self._counter.get(hint, 0)
        self._counter[hint] = count + 1
        return f"{hint}{count}"

    def __enter__(self):
        self._old = NameManager.current
        NameManager.current = self
        return self

    def __exit__(self, *exc):
        NameManager.current = self._old
        return False


class Prefix(NameManager):
    """A NameManager that puts ``prefix`` before every name, given or generated."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


class AttrScope(metaclass=_PerThreadCurrent):
    """Attributes attached to every symbol created inside the ``with`` block.

    MXNet's hidden keys are given without underscores (``ctx_group='dev1'``)
    and stored as ``__ctx_group__``; other keys are kept as given. Values
    must be strings.
    """

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError(f"AttrScope: attribute {key!r} must be a string, got {value!r}")
        self._attr = {stored_key(k): v for k, v in kwargs.items()}
        self._old = None

    _slot = "attr_scope"

    @staticmethod
    def _fresh():
        return AttrScope()

    def get(self, attr=None):
        """The scope's attributes, updated with ``attr`` (which wins)."""
        merged = dict(self._attr)
        if attr:
            merged.update(attr)
        return merged

    def __enter__(self):
        self._old = AttrScope.current
        merged = AttrScope()
        merged._attr = {**self._old._attr, **self._attr}
        AttrScope.current = merged
        return self

    def __exit__(self, *exc):
        AttrScope.current = self._old
        return False
