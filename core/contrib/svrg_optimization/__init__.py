"""``mx.contrib.svrg_optimization``: SVRGModule, a Module trained with SVRG.

``svrg_module.SVRGModule`` is the module; ``svrg_optimizer`` holds the two
optimizers it installs (``_SVRGOptimizer``, ``_AssignmentOptimizer``),
registered with ``mx.optimizer`` when this package is imported.
"""

from . import svrg_module, svrg_optimizer
from .svrg_module import SVRGModule

__all__ = ["SVRGModule", "svrg_module", "svrg_optimizer"]
