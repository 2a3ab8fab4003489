"""MXNet namespaces rebind does not rebuild (Gluon, autograd, the NumPy interface), explained.

``mx.gluon`` raises ``MissingNamespaceError`` (an AttributeError, so ``hasattr``
stays False) and ``import rebind.gluon`` / ``import mxnet.gluon`` under the alias
/ ``from mxnet.gluon import nn`` raise ``MissingModuleError`` (a
ModuleNotFoundError); both say why the name is missing and what to use instead.
"""

import importlib.abc
import sys

from .errors import MissingModuleError, MissingNamespaceError

__all__ = ["REASONS", "explain", "missing_attribute", "missing_module", "install"]

_NUMPY_INTERFACE = (
    "MXNet's NumPy-compatible interface (mx.np, mx.npx) is not part of rebind, which "
    "rebuilds MXNet's Module API: use mx.nd (NDArray; .asnumpy() gives a NumPy array) "
    "and mx.sym, or NumPy itself"
)

REASONS = {
    "gluon": (
        "MXNet's Gluon API (mx.gluon) is not part of rebind, which rebuilds MXNet's Module "
        "API (mx.sym, mx.mod). A Gluon model exported with HybridBlock.export(path) loads "
        "here: sym, arg_params, aux_params = mx.model.load_checkpoint(path, 0), then "
        "mx.mod.Module(sym, data_names=['data'], label_names=None) with bind() and "
        "set_params(arg_params, aux_params); or mx.mod.Module.load(path, 0). An ONNX "
        "model imports with mx.onnx.import_model(file)"
    ),
    "autograd": (
        "mx.autograd (recording imperative NDArray code, for Gluon) is not part of rebind, "
        "which differentiates bound symbols: build the computation with mx.sym, then "
        "exe = net.simple_bind(ctx, data=shape); exe.forward(is_train=True); exe.backward() "
        "(or train it with mx.mod.Module)"
    ),
    "np": _NUMPY_INTERFACE,
    "npx": _NUMPY_INTERFACE,
    "numpy": _NUMPY_INTERFACE,
    "numpy_extension": _NUMPY_INTERFACE,
}

_PACKAGE = __name__.rpartition(".")[0]  # "rebind"


def explain(name):
    """Why ``mx.<name>`` is missing and what to use instead, or None for other names."""
    return REASONS.get(name)


def missing_attribute(name):
    """The error for ``mx.<name>``: explained for REASONS, Python's usual text otherwise."""
    reason = explain(name)
    if reason is None:
        return AttributeError(f"module {_PACKAGE!r} has no attribute {name!r}")
    return MissingNamespaceError(f"mx.{name}: {reason}")


def missing_module(fullname, shown=None):
    """The error for importing ``rebind.<missing name>[...]``, or None for other modules.

    Args:
        fullname: the module asked for, under ``rebind``.
        shown: the name the user wrote, where it differs (``mxnet.gluon`` under the alias).
    """
    head, _, rest = fullname.partition(".")
    reason = explain(rest.partition(".")[0]) if head == _PACKAGE and rest else None
    if reason is None:
        return None
    # name stays None: `from mxnet import gluon` would otherwise swallow the error
    # and report a bare "cannot import name"
    return MissingModuleError(f"No module named {shown or fullname!r}: {reason}")


class _MissingFinder(importlib.abc.MetaPathFinder):
    """Answers an import of ``rebind.<missing name>`` (and its submodules) with the reason."""

    def find_spec(self, fullname, path=None, target=None):
        """Raise MissingModuleError for a missing namespace; None (not mine) otherwise."""
        error = missing_module(fullname)
        if error is not None:
            raise error
        return None


_FINDER = _MissingFinder()


def install():
    """Put the finder last on ``sys.meta_path`` (once): only names nothing else finds."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)
