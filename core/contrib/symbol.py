"""``mx.contrib.symbol`` (``mx.contrib.sym``): the ``_contrib_*`` operators on symbols.

MXNet registers each contrib operator in this module as well as in
``mx.sym.contrib``; here every name is looked up in ``mx.sym.contrib``.
"""

from ..symbol import contrib as _contrib

__all__ = []


def __getattr__(name):
    return getattr(_contrib, name)


def __dir__():
    return dir(_contrib)
