"""The defaults every test helper shares: the context and the float type of test data.

(The comparison functions of ``mx.test_utils`` join this module next.)
"""

import numpy as np

from ..context import current_context

__all__ = ["default_context", "default_dtype"]


def default_context():
    """The context tests run on: the current one (``with mx.gpu(0):`` switches it)."""
    return current_context()


def default_dtype():
    """The float type of generated test data: float32, as in MXNet."""
    return np.float32
