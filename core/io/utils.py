"""``mx.io.utils``: the input helpers MXNet's ``NDArrayIter`` is built on.

Their names are private in MXNet, but custom iterators written against MXNet
import them (``from mxnet.io.utils import _init_data``), so they keep MXNet's
names and return forms here.
"""

from ..ndarray import NDArray, array
from .ndarray_iter import named_inputs

__all__ = ["_getdata_by_idx", "_has_instance", "_init_data"]


def _init_data(data, allow_empty, default_name):
    """``[(name, NDArray), ...]`` sorted by name, from an array, a list of arrays or a dict."""
    return named_inputs(data, allow_empty, default_name)


def _has_instance(data, dtype):
    """Whether any array of ``_init_data``'s ``[(name, array), ...]`` is a ``dtype``."""
    return any(isinstance(value, dtype) for _, value in data)


def _getdata_by_idx(data, idx):
    """The ``idx`` rows of every ``(name, NDArray)`` pair, as new NDArrays on the same contexts."""
    picked = []
    for name, value in data:
        host = value.asnumpy() if isinstance(value, NDArray) else value
        ctx = value.context if isinstance(value, NDArray) else None
        picked.append((name, array(host[idx], ctx=ctx)))
    return picked
