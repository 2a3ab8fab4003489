"""Automatic mixed precision (``mx.contrib.amp``): float16 compute, float32 where it matters.

Importing never needs a GPU or CuPy; on the NumPy backend float16 runs (slowly) too.
"""

from . import lists
from .amp import *  # noqa: F403 - the public surface is amp.__all__
from .amp import __all__ as _amp_all
from .amp import missing_ops

__all__ = [*_amp_all, "lists", "missing_ops"]
