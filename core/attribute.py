"""``mx.attribute``: scoped symbol attributes (``AttrScope``)."""

from .symbol.names import AttrScope

__all__ = ["AttrScope"]
