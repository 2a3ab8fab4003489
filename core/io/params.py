"""Keyword parameters of the file iterators, read the way MXNet's C++ iterators read them.

MXNet hands every keyword of ``MNISTIter`` / ``CSVIter`` to dmlc's parameter
parser as a string: ``shuffle='0'``, ``batch_size='128'`` or ``data_shape='(784,)'``
work as well as the Python values, and keywords the iterator does not declare
are ignored without a word. rebind converts values the same way and, where
MXNet is silent, logs a warning naming each ignored keyword, so a typo does not
go unnoticed (it never raises for one).
"""

import ast
import logging
import numbers

__all__ = ["as_bool", "as_int", "as_shape", "warn_ignored"]

_log = logging.getLogger("rebind.io")

_TRUE = ("true", "1")
_FALSE = ("false", "0")


def _bad(owner, name, expected, value):
    return ValueError(
        f"{owner}: invalid value for {name}: expected {expected}, got {value!r}; "
        f"pass e.g. {name}={_EXAMPLES[expected]}"
    )


_EXAMPLES = {"a bool": "True", "an int": "128", "a shape": "(3,)"}


def as_bool(owner, name, value):
    """``value`` as dmlc reads a bool: True/False, 1/0, or those spelled as strings."""
    if isinstance(value, (bool, numbers.Integral)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise _bad(owner, name, "a bool", value)


def as_int(owner, name, value):
    """``value`` as an int: an integer, an integral float, or its decimal string."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and float(value).is_integer():
        return int(value)
    try:
        return int(str(value).strip())
    except ValueError:
        raise _bad(owner, name, "an int", value) from None


def as_shape(owner, name, value):
    """``value`` as a shape tuple: a tuple/list of ints, one int, or their string form."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise _bad(owner, name, "a shape", value) from None
    if isinstance(value, numbers.Integral):
        return (int(value),)
    try:
        return tuple(as_int(owner, name, size) for size in value)
    except (TypeError, ValueError):
        raise _bad(owner, name, "a shape", value) from None


def warn_ignored(owner, ignored, hints=None):
    """Log one warning per keyword ``owner`` does not take (MXNet ignores them silently).

    ``hints`` maps a keyword to a sentence saying what to use instead.
    """
    hints = hints or {}
    for name in sorted(ignored):
        _log.warning(
            "%s ignores %s=%r: it is not one of its parameters (MXNet ignores it too)%s",
            owner,
            name,
            ignored[name],
            f"; {hints[name]}" if name in hints else "",
        )
