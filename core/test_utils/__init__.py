"""``mx.test_utils``: what MXNet users' own test suites call.

Like MXNet's module, it has no ``__all__``: ``from mxnet.test_utils import *``
brings in every public name.
"""

import numpy as np  # noqa: F401  (MXNet's star import brings np along)

from .compare import *  # noqa: F403
from .data import *  # noqa: F403
from .distributions import *  # noqa: F403
from .env import *  # noqa: F403
from .random_data import *  # noqa: F403
