"""Read MXNet's pickled optimizer states (``.states`` files) without running their code.

MXNet's ``Updater.get_states`` pickles ``{index: state}``, a state being an
NDArray, None, or tuples of them. An NDArray pickles as the call
``mxnet.ndarray.ndarray.NDArray(None)`` followed by ``__setstate__`` with
``{'handle': bytearray(...)}``, the bytes being one array record of MXNet's
``.params`` format. So the unpickler here resolves only the few globals such
files contain, each to a stand-in of ours that can do nothing but hold data:

- ``mxnet.ndarray.ndarray.NDArray`` (and the sparse classes): a record holder;
- ``builtins.bytearray``, and ``_codecs.encode`` (how protocol 2 writes bytes),
  restricted to building bytes from text;
- NumPy's array, dtype and scalar reconstructors, restricted to numeric types
  and to the empty array NumPy's own pickles start from.

Any other global (``os.system``, an MXNet optimizer saved with
``dump_optimizer=True``, ...) raises ``FormatError`` naming it, at the moment
the unpickler meets its name, before anything is called. Arrays come back as
rebind NDArrays on the host device their record names (GPU records on cpu(0)).
"""

import io
import pickle
import struct

import numpy as np

from ..context import Context, cpu
from ..errors import FormatError
from ..ndarray import fileformat
from ..ndarray.serialization import _on_context as on_context

__all__ = ["loads"]

# dtype kinds a state array may have: bool, signed, unsigned, float, complex
_NUMERIC_KINDS = "biufc"
_HOST_DEVICE_TYPES = {1: "cpu", 3: "cpu_pinned", 5: "cpu_shared"}


class _NDArrayRecord:
    """Stand-in for MXNet's NDArray while unpickling: keeps the raw record bytes."""

    def __init__(self, handle=None):
        if handle is not None:
            raise FormatError(f"MXNet NDArray pickled with a constructor argument {handle!r}")
        self.raw = None

    def __setstate__(self, state):
        if not isinstance(state, dict) or set(state) != {"handle"}:
            raise FormatError(f"MXNet NDArray state must be {{'handle': bytes}}, got {state!r:.80}")
        raw = state["handle"]
        if raw is not None and not isinstance(raw, (bytes, bytearray)):
            raise FormatError(f"MXNet NDArray handle must be bytes, got {type(raw).__name__}")
        self.raw = None if raw is None else bytes(raw)


class _NumpyArrayType:
    """Stand-in for ``numpy.ndarray`` as a global: only ``_reconstruct`` may use it."""

    def __new__(cls, *args, **kwargs):
        raise FormatError("a pickle may not call numpy.ndarray directly")


def _bytearray(source=b"", encoding=None):
    if isinstance(source, str) and encoding is not None:
        return bytearray(_latin1(source, encoding))
    if isinstance(source, (bytes, bytearray)) and encoding is None:
        return bytearray(source)
    raise FormatError(f"bytearray may be rebuilt only from bytes or text, got {source!r:.60}")


def _latin1(text, encoding="latin1"):
    """``_codecs.encode`` as protocol 2 uses it: text to bytes in latin-1, nothing else."""
    if not isinstance(text, str) or encoding.replace("-", "").lower() != "latin1":
        raise FormatError(f"_codecs.encode may only encode text as latin-1, got {encoding!r}")
    return text.encode("latin-1")


def _reconstruct(subtype, shape, dtype_code):
    if subtype is not _NumpyArrayType or tuple(shape) != (0,):
        raise FormatError("numpy arrays may be rebuilt only as NumPy's own pickles do")
    return np.empty((0,), np.uint8)


def _dtype(spec, align=False, copy=False):
    if not isinstance(spec, str):
        raise FormatError(f"numpy dtype must be named by a string, got {spec!r:.60}")
    dtype = np.dtype(spec)
    if dtype.kind not in _NUMERIC_KINDS:
        raise FormatError(f"numpy dtype {spec!r} is not numeric; only number arrays are read")
    return dtype


def _scalar(dtype, data):
    if not isinstance(dtype, np.dtype) or not isinstance(data, bytes):
        raise FormatError("numpy scalars must be rebuilt from a dtype and bytes")
    if len(data) != dtype.itemsize:
        raise FormatError(f"numpy scalar of {dtype} needs {dtype.itemsize} bytes, got {len(data)}")
    return np.frombuffer(data, dtype, 1)[0]


def _frombuffer(buffer, dtype, shape, order):
    """NumPy's protocol-5 array reconstructor, for in-band buffers of numeric data."""
    if not isinstance(dtype, np.dtype) or dtype.kind not in _NUMERIC_KINDS:
        raise FormatError(f"numpy arrays must have a numeric dtype, got {dtype!r:.60}")
    if not isinstance(buffer, (bytes, bytearray, pickle.PickleBuffer)):
        raise FormatError(f"numpy array data must be bytes, got {type(buffer).__name__}")
    raw = bytes(buffer)
    shape = tuple(int(d) for d in shape)
    if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != len(raw) or order not in ("C", "F"):
        raise FormatError(f"numpy array of shape {shape} and {dtype} does not fit {len(raw)} bytes")
    return np.frombuffer(raw, dtype).reshape(shape, order=order).copy()


_ALLOWED = {
    ("mxnet.ndarray.ndarray", "NDArray"): _NDArrayRecord,
    ("mxnet.ndarray", "NDArray"): _NDArrayRecord,
    ("mxnet.ndarray.sparse", "RowSparseNDArray"): _NDArrayRecord,
    ("mxnet.ndarray.sparse", "CSRNDArray"): _NDArrayRecord,
    ("builtins", "bytearray"): _bytearray,
    ("__builtin__", "bytearray"): _bytearray,
    ("_codecs", "encode"): _latin1,
    ("numpy", "ndarray"): _NumpyArrayType,
    ("numpy", "dtype"): _dtype,
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy.core.multiarray", "scalar"): _scalar,
    ("numpy._core.multiarray", "scalar"): _scalar,
    ("numpy.core.numeric", "_frombuffer"): _frombuffer,
    ("numpy._core.numeric", "_frombuffer"): _frombuffer,
}


class _RestrictedUnpickler(pickle.Unpickler):
    """An Unpickler whose globals are only the stand-ins above."""

    def __init__(self, data, source):
        super().__init__(io.BytesIO(data), fix_imports=False)
        self.source = source

    def find_class(self, module, name):
        found = _ALLOWED.get((module, name))
        if found is None:
            raise FormatError(_refusal(self.source, module, name))
        return found

    def persistent_load(self, pid):
        raise FormatError(f"{self.source}: persistent ids are not allowed in MXNet states")


def _refusal(source, module, name):
    message = (
        f"{source}: refusing to load {module}.{name}: MXNet states files may hold only "
        "NDArrays, NumPy number arrays, numbers, strings, None and tuples, lists or dicts "
        "of them, so nothing else is ever constructed or called"
    )
    if module.startswith(("mxnet.optimizer", "mxnet.lr_scheduler")):
        message += (
            "; this file includes the optimizer itself (get_states(dump_optimizer=True)): "
            "save the states with dump_optimizer=False, and create the optimizer in rebind"
        )
    return message


def loads(data, source="MXNet states"):
    """``{index: state}`` from the bytes of an MXNet ``.states`` file (or ``get_states``)."""
    try:
        loaded = _RestrictedUnpickler(bytes(data), source).load()
    except FormatError:
        raise
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
        KeyError,
        struct.error,
        RecursionError,
        MemoryError,
    ) as exc:
        raise FormatError(
            f"{source}: neither rebind's updater-states format nor a readable MXNet "
            f"states pickle ({type(exc).__name__}: {exc})"
        ) from None
    if isinstance(loaded, tuple) and len(loaded) == 2 and isinstance(loaded[0], dict):
        raise FormatError(f"{source}: holds (states, optimizer); only states are read")
    if not isinstance(loaded, dict):
        raise FormatError(f"{source}: expected a dict of states, found {type(loaded).__name__}")
    return {_key(k, source): _convert(v, source, f"state {k!r}") for k, v in loaded.items()}


def _key(key, source):
    if isinstance(key, bytes):
        key = key.decode("utf-8", "replace")
    if not isinstance(key, (int, str)) or isinstance(key, bool):
        raise FormatError(f"{source}: state key {key!r} is not an integer or a string")
    return key


def _convert(value, source, where):
    """The loaded value with stand-ins turned into NDArrays; anything odd refused."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.generic, np.ndarray)) and value.dtype.kind not in _NUMERIC_KINDS:
        raise FormatError(f"{source}: {where} has dtype {value.dtype}, not a numeric one")
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, _NDArrayRecord):
        return _ndarray_from_record(value.raw, source, where)
    if isinstance(value, np.ndarray):
        return _on_cpu(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_convert(v, source, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(value, dict):
        return {k: _convert(v, source, f"{where}[{k!r}]") for k, v in value.items()}
    raise FormatError(f"{source}: {where} is a {type(value).__name__}, not an array or container")


def _ndarray_from_record(raw, source, where):
    """The array of one pickled record, on the host device it names (else cpu(0)).

    Keeping a host device (cpu(1), cpu_pinned(0), ...) lets states saved from
    several CPU devices be written back as they were; a GPU record is loaded on
    the CPU and moved on first use.
    """
    if raw is None:
        return None
    values, device = fileformat.decode_record(raw, source=f"{source} {where}", sparse=True)
    if values is None:
        return None
    device_type, device_id = device or (1, 0)
    if device_type not in _HOST_DEVICE_TYPES or device_id < 0:
        return _on_cpu(values)
    return _on_cpu(values, Context(_HOST_DEVICE_TYPES[device_type], device_id))


def _on_cpu(host, ctx=None):
    """An NDArray (a sparse one for a sparse record) of ``host`` on ``ctx`` (cpu())."""
    return on_context(host, cpu() if ctx is None else ctx)
