"""NumPy 1.x names that MXNet-era code uses (``np.int``, ``np.NaN``), for the alias runners only.

NumPy 2 removed its aliases of Python types (``np.int``, ``np.float``, ...)
and several constants and functions. Code written for MXNet 1.x, which ran on
NumPy < 1.24, still uses them: MXNet's own unit tests call ``np.int(...)``.

The alias runners (``pytest -p rebind.alias``, ``python -m rebind.alias``)
offer those names while they run, and nothing else does: ``install()`` wraps
NumPy's module ``__getattr__``, which NumPy consults only for names it does
not have, so no name NumPy defines changes meaning, and ``uninstall()`` puts
the original back. Each name warns once (a ``DeprecationWarning`` naming its
modern spelling) the first time it is used.
"""

import warnings

import numpy

__all__ = ["install", "uninstall", "installed", "LEGACY_NAMES"]

# name -> (value, the spelling that works on every NumPy)
LEGACY_NAMES = {
    "int": (int, "int"),
    "float": (float, "float"),
    "complex": (complex, "complex"),
    "object": (object, "object"),
    "str": (str, "str"),
    "unicode": (str, "str"),
    "float_": (numpy.float64, "numpy.float64"),
    "complex_": (numpy.complex128, "numpy.complex128"),
    "unicode_": (numpy.str_, "numpy.str_"),
    "string_": (numpy.bytes_, "numpy.bytes_"),
    "NaN": (numpy.nan, "numpy.nan"),
    "NAN": (numpy.nan, "numpy.nan"),
    "Inf": (numpy.inf, "numpy.inf"),
    "Infinity": (numpy.inf, "numpy.inf"),
    "PINF": (numpy.inf, "numpy.inf"),
    "infty": (numpy.inf, "numpy.inf"),
    "NINF": (-numpy.inf, "-numpy.inf"),
    "product": (numpy.prod, "numpy.prod"),
    "cumproduct": (numpy.cumprod, "numpy.cumprod"),
    "alltrue": (numpy.all, "numpy.all"),
    "sometrue": (numpy.any, "numpy.any"),
    "round_": (numpy.round, "numpy.round"),
}

_state = {"original": None, "warned": set()}


def _legacy_getattr(name):
    """NumPy's ``__getattr__``, answering the legacy names first."""
    entry = LEGACY_NAMES.get(name)
    if entry is None:
        return _state["original"](name)
    if name not in _state["warned"]:
        _state["warned"].add(name)
        warnings.warn(
            f"numpy.{name} was removed in NumPy 2; rebind.alias provides it for MXNet-era "
            f"code while the alias runs. Use {entry[1]} instead.",
            DeprecationWarning,
            stacklevel=2,
        )
    return entry[0]


def installed():
    """Whether the legacy names are offered now."""
    return numpy.__dict__.get("__getattr__") is _legacy_getattr


def install():
    """Offer the legacy names on ``numpy`` (names NumPy has are left alone)."""
    if installed():
        return
    _state["original"] = numpy.__dict__.get("__getattr__", _no_attribute)
    numpy.__getattr__ = _legacy_getattr


def uninstall():
    """Take the legacy names away again: NumPy's own ``__getattr__`` is back."""
    if not installed():
        return
    if _state["original"] is _no_attribute:
        del numpy.__getattr__
    else:
        numpy.__getattr__ = _state["original"]
    _state["original"] = None


def _no_attribute(name):
    raise AttributeError(f"module 'numpy' has no attribute {name!r}")
