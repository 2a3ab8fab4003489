"""``mx.contrib``: MXNet's contributed packages that Module users reach.

Each lives in a sub-package of its own, named as in MXNet.
"""

from .. import onnx
from . import amp, ndarray, svrg_optimization, symbol
from . import ndarray as nd
from . import symbol as sym

__all__ = ["amp", "nd", "ndarray", "onnx", "svrg_optimization", "sym", "symbol"]
