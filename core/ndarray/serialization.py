"""``nd.save`` / ``nd.load``: NDArrays in MXNet's list file (``.params``) format.

The byte-level codec is ``fileformat``; this module turns NDArrays into host
arrays and back. Loaded arrays land on ``cpu(0)``: the device recorded in the
file is informational (MXNet moves arrays to a recorded GPU when one exists;
rebind leaves that choice to the caller, e.g. ``as_in_context``).
"""

from ..context import cpu
from . import fileformat
from .ndarray import NDArray

__all__ = ["save", "load", "load_frombuffer"]


def _host_arrays(data):
    """(host arrays, names or None) from an NDArray, a list of them, or a dict."""
    if isinstance(data, NDArray):
        return [data.asnumpy()], None
    if isinstance(data, dict):
        for key, value in data.items():
            if not isinstance(key, str):
                raise TypeError(f"save: dict keys must be strings, got {key!r}")
            _check_value(value, key)
        return [_host(v) for v in data.values()], list(data) or None
    if isinstance(data, (list, tuple)):
        for index, value in enumerate(data):
            _check_value(value, index)
        return [_host(v) for v in data], None
    raise TypeError(
        f"save takes an NDArray, a list of NDArrays or a dict str -> NDArray, "
        f"got {type(data).__name__}"
    )


def _check_value(value, where):
    if value is not None and not isinstance(value, NDArray):
        raise TypeError(f"save: entry {where!r} is a {type(value).__name__}, not an NDArray")


def _host(value):
    return None if value is None else value.asnumpy()


def save(fname, data):
    """Write ``data`` to ``fname`` atomically, in MXNet's format."""
    arrays, names = _host_arrays(data)
    fileformat.save_file(fname, arrays, names)


def _wrap_loaded(arrays, names):
    ctx = cpu()
    backend = ctx.backend
    wrapped = [None if a is None else NDArray(backend.asarray(a, a.dtype, 0), ctx) for a in arrays]
    if names is None:
        return wrapped
    return dict(zip(names, wrapped, strict=True))


def load(fname):
    """Read a file written by ``save`` (or by MXNet): a list, or a dict when it has names."""
    return _wrap_loaded(*fileformat.load_file(fname))


def load_frombuffer(buf):
    """Like ``load``, from the bytes of such a file."""
    return _wrap_loaded(*fileformat.decode(bytes(buf), source="<buffer>"))
