"""``nd.save`` / ``nd.load``: NDArrays in MXNet's list file (``.params``) format.

The byte-level codec is ``fileformat``; this module turns NDArrays into host
arrays (``SparseRecord`` for csr and row_sparse arrays, written and read as
MXNet writes them) and back. Loaded arrays land on ``cpu(0)``: the device recorded in the
file is informational (MXNet moves arrays to a recorded GPU when one exists;
rebind leaves that choice to the caller, e.g. ``as_in_context``).
"""

from ..context import Context, cpu, num_gpus
from . import fileformat
from .ndarray import NDArray
from .sparse_array import make_sparse
from .sparse_format import SparseRecord

__all__ = ["save", "load", "load_frombuffer", "install_pickling"]


def _host_arrays(data):
    """(host arrays, names or None) from an NDArray, a list of them, or a dict."""
    if isinstance(data, NDArray):
        return [_host(data)], None
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
    """A dense array's NumPy values, a sparse array's host SparseRecord, or None."""
    if value is None:
        return None
    if value.stype == "default":
        return value.asnumpy()
    to_host = value.context.backend.to_host
    aux = tuple(to_host(a) for a in value._aux)
    return SparseRecord(value.stype, to_host(value._values), aux, value.shape)


def _on_context(host, ctx):
    """An NDArray (dense or sparse) on ``ctx`` from a host array or SparseRecord."""
    backend, device = ctx.backend, ctx.device_id
    if isinstance(host, SparseRecord):
        values = backend.asarray(host.values, host.values.dtype, device)
        aux = tuple(backend.asarray(a, a.dtype, device) for a in host.aux)
        return make_sparse(host.stype, values, aux, host.shape, ctx)
    return NDArray(backend.asarray(host, host.dtype, device), ctx)


def save(fname, data):
    """Write ``data`` to ``fname`` atomically, in MXNet's format."""
    arrays, names = _host_arrays(data)
    fileformat.save_file(fname, arrays, names)


def _wrap_loaded(arrays, names):
    ctx = cpu()
    wrapped = [None if a is None else _on_context(a, ctx) for a in arrays]
    if names is None:
        return wrapped
    return dict(zip(names, wrapped, strict=True))


def load(fname):
    """Read a file written by ``save`` (or by MXNet): a list, or a dict when it has names."""
    return _wrap_loaded(*fileformat.load_file(fname, sparse=True))


def load_frombuffer(buf):
    """Like ``load``, from the bytes of such a file."""
    return _wrap_loaded(*fileformat.decode(bytes(buf), source="<buffer>", sparse=True))


# -- pickling: MXNet's state, {"handle": one V2 record naming the array's device} ------
def _getstate(self):
    """The pickled state: the array's record in MXNet's file format, as MXNet pickles it."""
    device = (self.context.device_typeid or 1, self.context.device_id)
    return {"handle": bytearray(fileformat.encode_record(_host(self), device))}


def _setstate(self, state):
    """Restore a pickled array on its recorded device, or on cpu(0) when that GPU is absent."""
    record = state.get("handle")
    if record is None:
        raise NotImplementedError(
            "unpickling an NDArray without data (MXNet's handle None): rebind has no empty "
            "NDArray handles; pickle arrays that hold data"
        )
    values, device = fileformat.decode_record(bytes(record), "<pickle>", sparse=True)
    array = _on_context(values, _recorded_context(device))
    if array.stype != self.stype:
        raise ValueError(
            f"unpickling a {type(self).__name__} from a {array.stype} record; "
            "the pickle is corrupt or from another class"
        )
    if array.stype == "default":
        self._data = array._data
    else:
        self._values, self._aux, self._shape = array._values, array._aux, array.shape
    self._ctx, self._version = array.context, 0


def _recorded_context(device):
    """The context a record's ``(type id, device id)`` names; cpu(0) for a GPU not here."""
    if device is None:
        return cpu()
    dev_type, dev_id = device
    if dev_type not in Context.devtype2str or (dev_type == 2 and dev_id >= num_gpus()):
        return cpu()  # MXNet, too, loads a GPU array onto the CPU when no GPU is there
    return Context(dev_type, dev_id)


def _deepcopy(self, memo=None):
    """A copy on the same context, made directly rather than through the pickled record."""
    return self.copy()


def install_pickling(cls):
    """Make NDArray pickle as MXNet's does (its state is one file-format record)."""
    cls.__getstate__ = _getstate
    cls.__setstate__ = _setstate
    # copy.copy and copy.deepcopy give what the record round trip gives, without the bytes
    cls.__copy__ = cls.__deepcopy__ = _deepcopy
