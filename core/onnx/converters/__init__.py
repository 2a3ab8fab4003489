"""The converter registry: rebind operator name -> function emitting ONNX nodes.

Each module of this package registers its family with ``@converter(...)``;
importing the package imports them all. A converter is
``convert(node: ExportNode, g: ExportGraph) -> None`` (see ../graph.py).
Operators that can never be exported get a reason with ``refuse``, which
the exporter puts in its error instead of a bare "no converter".
"""

import importlib
import pkgutil

__all__ = ["CONVERTERS", "converter", "lookup", "refuse", "refusal", "supported_operators"]

CONVERTERS = {}
REFUSALS = {}


def converter(*op_names):
    """Register the decorated function as the converter of ``op_names`` (OpDef names)."""

    def register(function):
        for name in op_names:
            if name in CONVERTERS:
                raise ValueError(
                    f"two converters for {name!r}: {CONVERTERS[name].__module__} and "
                    f"{function.__module__}"
                )
            CONVERTERS[name] = function
        return function

    return register


def refuse(op_name, reason):
    """Record why ``op_name`` has no ONNX form (used in the export error)."""
    REFUSALS[op_name] = reason


def refusal(opdef):
    """The recorded reason ``opdef`` cannot be exported, or None."""
    return REFUSALS.get(opdef.name)


def lookup(opdef):
    """The converter of ``opdef`` (found by its canonical name, so aliases resolve), or None."""
    return CONVERTERS.get(opdef.name)


def supported_operators():
    """Every operator name and alias whose OpDef has a converter, sorted."""
    from ...registry import get_registry

    names = {name for name, opdef in get_registry("operators").items() if lookup(opdef)}
    return sorted(names)


def _import_families():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        importlib.import_module(f"{__name__}.{info.name}")


_import_families()
