"""Automatic node names (``NameManager``, ``Prefix``) and scoped attributes (``AttrScope``).

Both are ``with``-scoped and per thread, as in MXNet: ``with mx.name.Prefix('enc_'):``
prefixes every name created inside, ``with mx.AttrScope(ctx_group='dev1'):``
attaches ``__ctx_group__`` to every symbol created inside.
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


class NameManager:
    """Gives unnamed symbols the name ``<hint><counter>`` (``fullyconnected0``, ``_plus3``)."""

    def __init__(self):
        self._counter = {}
        self._old = None

    def get(self, name, hint):
        """``name`` itself if given, else a fresh name from ``hint``."""
        if name:
            return name
        count = self._counter.get(hint, 0)
        self._counter[hint] = count + 1
        return f"{hint}{count}"

    @classmethod
    def current(cls):
        manager = getattr(_local, "name_manager", None)
        if manager is None:
            manager = _local.name_manager = NameManager()
        return manager

    def __enter__(self):
        self._old = NameManager.current()
        _local.name_manager = self
        return self

    def __exit__(self, *exc):
        _local.name_manager = self._old
        return False


class Prefix(NameManager):
    """A NameManager that puts ``prefix`` before every name, given or generated."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


class AttrScope:
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

    def get(self, attr=None):
        """The scope's attributes, updated with ``attr`` (which wins)."""
        merged = dict(self._attr)
        if attr:
            merged.update(attr)
        return merged

    @classmethod
    def current(cls):
        scope = getattr(_local, "attr_scope", None)
        if scope is None:
            scope = _local.attr_scope = AttrScope()
        return scope

    def __enter__(self):
        self._old = AttrScope.current()
        merged = AttrScope()
        merged._attr = {**self._old._attr, **self._attr}
        _local.attr_scope = merged
        return self

    def __exit__(self, *exc):
        _local.attr_scope = self._old
        return False
