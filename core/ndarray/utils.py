"""``mx.nd.utils``: where MXNet keeps its creation and file functions (the same ones as mx.nd)."""

from .creation import array, empty, full, ones, zeros
from .serialization import load, load_frombuffer, save

__all__ = ["array", "empty", "full", "load", "load_frombuffer", "ones", "save", "zeros"]
