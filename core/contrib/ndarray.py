"""``mx.contrib.ndarray`` (``mx.contrib.nd``): the ``_contrib_*`` operators on arrays.

MXNet registers each contrib operator in this module as well as in
``mx.nd.contrib``; here every name is looked up in ``mx.nd.contrib``.
"""

from ..ndarray import contrib as _contrib

__all__ = []


def __getattr__(name):
    return getattr(_contrib, name)


def __dir__():
    return dir(_contrib)
