"""``mx.contrib``: MXNet's contributed packages that Module users reach.

Each lives in a sub-package of its own, named as in MXNet.
"""

from .. import onnx
from . import amp, svrg_optimization

__all__ = ["amp", "onnx", "svrg_optimization"]
