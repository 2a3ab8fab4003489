"""Updater states as bytes: rebind's safe format, and MXNet's pickles read safely.

rebind's format (what ``Updater.get_states(dump_optimizer=True)`` writes;
states alone are written as MXNet's pickle, by ``mxnet_pickle_writer``) is::

    b"rebind-updater-states\\n"   magic
    u32 LE                       format version (1)
    u64 LE                       length of the JSON header
    JSON header (UTF-8)          {"version": 1, "states": <value>, "optimizer": null | {...}}
    NDArray list file            the arrays, in MXNet's ``.params`` list format

A <value> in the header is plain JSON for None, booleans, integers, finite
floats and strings, and a one-key object for everything else:
``{"array": i}`` (the i-th array of the list file), ``{"tuple": [...]}``,
``{"list": [...]}``, ``{"dict": [[key, value], ...]}`` (keys keep their type),
``{"float": "nan" | "inf" | "-inf"}``, and ``{"lr_scheduler": {"class": name,
"attrs": <dict>}}`` for the schedulers of ``rebind.lr_scheduler``. A saved
optimizer is ``{"name": registered name, "attrs": <dict>}``. Nothing in the
format names code to run: loading builds only registered optimizers and
rebind's own schedulers, by name, and fills their attributes with data.

Bytes in any other format are handed to ``mxnet_pickle`` (MXNet's ``.states``).
"""

import json
import math
import numbers
import struct

import numpy as np

from .. import lr_scheduler, registry
from ..context import cpu
from ..errors import FormatError
from ..ndarray import NDArray, fileformat
from ..ndarray.serialization import _host as host_record
from ..ndarray.serialization import _on_context as on_context
from . import mxnet_pickle
from .optimizer import Optimizer

__all__ = ["MAGIC", "VERSION", "dumps", "loads"]

MAGIC = b"rebind-updater-states\n"
VERSION = 1
_HEAD = struct.Struct("<IQ")
# optimizer attributes that are not saved: param_dict holds live parameters
# (MXNet drops it too); the current count table is an alias re-made on load
_NOT_SAVED = ("param_dict", "_index_update_count")
_SCHEDULERS = {name: getattr(lr_scheduler, name) for name in lr_scheduler.__all__}


# ---------------------------------------------------------------- writing


def dumps(states, optimizer=None):
    """Serialize ``{index: state}`` (and ``optimizer`` when given) to bytes."""
    arrays = []
    header = {
        "version": VERSION,
        "states": _encode(states, arrays, "states"),
        "optimizer": None if optimizer is None else _encode_optimizer(optimizer, arrays),
    }
    text = json.dumps(header, allow_nan=False, separators=(",", ":")).encode("utf-8")
    return MAGIC + _HEAD.pack(VERSION, len(text)) + text + fileformat.encode(arrays)


def _encode(value, arrays, where):
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (numbers.Integral, np.bool_)):
        return bool(value) if isinstance(value, np.bool_) else int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        return number if math.isfinite(number) else {"float": repr(number)}
    if isinstance(value, NDArray):
        arrays.append(host_record(value))  # row_sparse states stay row_sparse
        return {"array": len(arrays) - 1}
    if isinstance(value, (tuple, list)):
        items = [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(value)]
        return {type(value).__name__: items}
    if isinstance(value, dict):
        return {"dict": [_encode_pair(k, v, arrays, where) for k, v in value.items()]}
    if isinstance(value, lr_scheduler.LRScheduler):
        return {"lr_scheduler": _encode_scheduler(value, arrays, where)}
    raise TypeError(
        f"cannot save {where}: a {type(value).__name__} is not an NDArray, number, string, "
        "None, tuple, list, dict or rebind LR scheduler"
    )


def _encode_pair(key, value, arrays, where):
    if not isinstance(key, (str, numbers.Integral)):
        raise TypeError(f"cannot save {where}: key {key!r} is not a string or an integer")
    return [_encode(key, arrays, where), _encode(value, arrays, f"{where}[{key!r}]")]


def _encode_scheduler(scheduler, arrays, where):
    name = type(scheduler).__name__
    if _SCHEDULERS.get(name) is not type(scheduler):
        raise TypeError(
            f"cannot save {where}: scheduler {type(scheduler).__qualname__} is not one of "
            f"rebind.lr_scheduler's ({', '.join(_SCHEDULERS)}); save with dump_optimizer=False"
        )
    return {"class": name, "attrs": _encode(vars(scheduler), arrays, f"{where}.{name}")}


def _encode_optimizer(optimizer, arrays):
    names = [
        n for n, impl in registry.get_registry("optimizers").items() if impl is type(optimizer)
    ]
    if not names:
        raise TypeError(
            f"cannot save optimizer {type(optimizer).__qualname__}: it is not registered; "
            "register it (mx.optimizer.register) or save with dump_optimizer=False"
        )
    attrs = {k: v for k, v in vars(optimizer).items() if k not in _NOT_SAVED}
    return {"name": names[0], "attrs": _encode(attrs, arrays, "optimizer")}


# ---------------------------------------------------------------- reading


def loads(data):
    """``(states, optimizer or None)`` from ``dumps`` bytes or an MXNet ``.states`` pickle."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"set_states needs bytes, got {type(data).__name__}")
    data = bytes(data)
    if not data.startswith(MAGIC):
        return mxnet_pickle.loads(data, source="updater states"), None
    header, arrays = _split(data)
    try:
        states = _decode(header.get("states"), arrays, "states")
        optimizer = header.get("optimizer")
        optimizer = None if optimizer is None else _decode_optimizer(optimizer, arrays)
    except RecursionError:
        raise FormatError("updater states: values are nested too deeply") from None
    if not isinstance(states, dict):
        raise FormatError(f"updater states: expected a dict of states, found {type(states)}")
    return states, optimizer


def _split(data):
    """The parsed JSON header and the arrays of the list file after it."""
    start = len(MAGIC)
    if len(data) < start + _HEAD.size:
        raise FormatError(f"updater states: truncated header ({len(data)} bytes)")
    version, length = _HEAD.unpack_from(data, start)
    if version != VERSION:
        raise FormatError(f"updater states: format version {version}, this rebind reads {VERSION}")
    body = start + _HEAD.size
    if length > len(data) - body:
        raise FormatError(
            f"updater states: header of {length} bytes, only {len(data) - body} remain"
        )
    try:
        header = json.loads(data[body : body + length].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise FormatError(f"updater states: the header is not valid JSON: {exc}") from None
    if not isinstance(header, dict) or header.get("version") != VERSION:
        raise FormatError("updater states: the header is not a version-1 object")
    arrays, names = fileformat.decode(
        data[body + length :], source="updater states arrays", sparse=True
    )
    if names is not None:
        raise FormatError("updater states: the array list must not be named")
    return header, arrays


def _decode(node, arrays, where):
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if not (isinstance(node, dict) and len(node) == 1):
        raise FormatError(f"updater states: {where} is not a value: {str(node)[:60]}")
    ((tag, body),) = node.items()
    decoder = _DECODERS.get(tag)
    if decoder is None:
        raise FormatError(
            f"updater states: {where} has unknown tag {tag!r}; known: {', '.join(_DECODERS)}"
        )
    return decoder(body, arrays, where)


def _decode_array(body, arrays, where):
    if not isinstance(body, int) or isinstance(body, bool) or not 0 <= body < len(arrays):
        raise FormatError(f"updater states: {where} names array {body!r} of {len(arrays)}")
    host = arrays[body]
    if host is None:
        return None
    return on_context(host, cpu())


def _decode_sequence(kind):
    def decode(body, arrays, where):
        if not isinstance(body, list):
            raise FormatError(f"updater states: {where} {kind} is not a JSON list")
        return kind(_decode(v, arrays, f"{where}[{i}]") for i, v in enumerate(body))

    return decode


def _decode_dict(body, arrays, where):
    if not isinstance(body, list):
        raise FormatError(f"updater states: {where} dict is not a list of pairs")
    result = {}
    for pair in body:
        if not (isinstance(pair, list) and len(pair) == 2):
            raise FormatError(f"updater states: {where} has a malformed pair {str(pair)[:60]}")
        key = _decode(pair[0], arrays, where)
        if not isinstance(key, (str, int)):
            raise FormatError(f"updater states: {where} has key {key!r} (not str or int)")
        result[key] = _decode(pair[1], arrays, f"{where}[{key!r}]")
    return result


def _decode_float(body, arrays, where):
    if body not in ("nan", "inf", "-inf"):
        raise FormatError(f"updater states: {where} is not a special float: {body!r}")
    return float(body)


def _decode_scheduler(body, arrays, where):
    cls = _SCHEDULERS.get(body.get("class")) if isinstance(body, dict) else None
    if cls is None:
        raise FormatError(
            f"updater states: {where} names no rebind scheduler; known: {', '.join(_SCHEDULERS)}"
        )
    return _instance(cls, body.get("attrs"), arrays, where)


def _decode_optimizer(body, arrays):
    name = body.get("name") if isinstance(body, dict) else None
    if not isinstance(name, str):
        raise FormatError("updater states: the saved optimizer has no name")
    cls = registry.lookup("optimizers", name)
    if not (isinstance(cls, type) and issubclass(cls, Optimizer)):
        raise FormatError(f"updater states: optimizer {name!r} is not an Optimizer class")
    optimizer = _instance(cls, body.get("attrs"), arrays, f"optimizer {name!r}")
    optimizer.param_dict = {}
    counts = optimizer.__dict__.setdefault("_all_index_update_counts", {0: {}})
    optimizer._index_update_count = counts.setdefault(0, {})
    return optimizer


def _instance(cls, attrs, arrays, where):
    """An instance of ``cls`` made without its constructor, its attributes set from data."""
    values = _decode(attrs, arrays, where)
    if not isinstance(values, dict) or not all(isinstance(k, str) for k in values):
        raise FormatError(f"updater states: {where} attributes are not a dict of names")
    instance = cls.__new__(cls)
    instance.__dict__.update(values)
    return instance


_DECODERS = {
    "array": _decode_array,
    "tuple": _decode_sequence(tuple),
    "list": _decode_sequence(list),
    "dict": _decode_dict,
    "float": _decode_float,
    "lr_scheduler": _decode_scheduler,
}
