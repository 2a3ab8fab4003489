"""How a kvstore call's ``key`` and ``value`` arguments are read, as MXNet 1.9.1 reads them.

A call names one key with one NDArray or a list of NDArrays (one per device),
or a list of keys with a list of such values, one per key. The result is a
flat list of ``(key, [NDArray, ...])`` pairs in the order given. Keys are
ints or strs, never both in one call.
"""

import numbers

from ..ndarray import NDArray

__all__ = ["key_value_pairs", "key_kind"]


def key_value_pairs(keys, values, call):
    """``[(key, [NDArray, ...]), ...]`` from ``keys`` and ``values`` of ``call``."""
    if isinstance(keys, (list, tuple)):
        if not isinstance(values, (list, tuple)) or len(values) != len(keys):
            raise ValueError(
                f"kvstore.{call}: {len(keys)} keys need a list of {len(keys)} values (an NDArray "
                f"or a list of NDArrays per key), got {_describe(values)}"
            )
        pairs = [_pair(key, value, call) for key, value in zip(keys, values, strict=True)]
    else:
        pairs = [_pair(keys, values, call)]
    kinds = {key_kind(key) for key, _ in pairs}
    if len(kinds) > 1:
        raise TypeError(
            f"kvstore.{call}: keys mix int and str ({[key for key, _ in pairs]}); "
            "use one kind of key"
        )
    return pairs


def key_kind(key):
    """``int`` or ``str``: the kind of ``key`` (a store holds one kind)."""
    return str if isinstance(key, str) else int


def _pair(key, value, call):
    key = _checked_key(key, call)
    if isinstance(value, NDArray):
        return key, [value]
    if isinstance(value, (list, tuple)) and value:
        for item in value:
            if not isinstance(item, NDArray):
                raise TypeError(
                    f"kvstore.{call}: values of key {key!r} must be NDArrays, "
                    f"got {type(item).__name__}"
                )
        return key, list(value)
    raise TypeError(
        f"kvstore.{call}: key {key!r} needs an NDArray or a non-empty list of NDArrays, "
        f"got {_describe(value)}"
    )


def _checked_key(key, call):
    if isinstance(key, str):
        return key
    if isinstance(key, numbers.Integral) and not isinstance(key, bool):
        return int(key)
    raise TypeError(f"kvstore.{call}: a key is an int or a str, got {key!r}")


def _describe(value):
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)}"
    return type(value).__name__
