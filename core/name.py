"""``mx.name``: automatic naming of symbols (``NameManager``, ``Prefix``)."""

from .symbol.names import NameManager, Prefix

__all__ = ["NameManager", "Prefix"]
