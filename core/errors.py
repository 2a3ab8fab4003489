"""The exceptions rebind raises.

One base class, ``RebindError``, itself an ``mx.base.MXNetError`` (a
``RuntimeError``, as in MXNet); each subclass also derives from the built-in
exception that fits, so ``except mx.MXNetError``, ``except RuntimeError`` or
``except ValueError`` in old scripts keeps working.
"""

from .base import MXNetError

__all__ = [
    "MXNetError",
    "RebindError",
    "LifecycleError",
    "ShapeError",
    "InputNameError",
    "FormatError",
    "PluginError",
    "UnknownNameError",
    "BackendUnavailableError",
    "ContextMismatchError",
    "DTypeMismatchError",
    "StopTraining",
    "MissingNamespaceError",
    "MissingModuleError",
]


class RebindError(MXNetError):
    """Base class of every error rebind raises on purpose."""


class LifecycleError(RebindError, RuntimeError):
    """A module method was called at a stage where it is not allowed."""


class ShapeError(RebindError, ValueError):
    """Shapes do not fit: inference failed or an input has the wrong shape."""


class InputNameError(RebindError, ValueError, KeyError):
    """A module's input names and the names its data provides do not fit together.

    A ``ValueError``, and a ``KeyError`` as MXNet raised for a label the symbol
    does not have; the message prints as given (not quoted, as a KeyError's is).
    """

    __str__ = BaseException.__str__


class FormatError(RebindError, ValueError):
    """A file or serialized text is not in the format rebind reads."""


class PluginError(RebindError):
    """A plugin is malformed, missing, blocked or clashes with another."""


class UnknownNameError(PluginError, ValueError):
    """No plugin registered the name asked for (the message lists what exists)."""


class BackendUnavailableError(PluginError, RuntimeError):
    """A backend was asked for but its library or device is not present."""


class ContextMismatchError(RebindError, ValueError):
    """Arrays that live on different contexts were mixed in one operation."""


class DTypeMismatchError(RebindError, TypeError):
    """Arrays of different dtypes were mixed where MXNet requires one dtype."""


class StopTraining(RebindError):
    """Raised by a callback to end ``fit`` early; fit stops cleanly and fires its end hooks."""


class MissingNamespaceError(RebindError, AttributeError):
    """``mx.<name>`` of an MXNet API rebind does not rebuild (``hasattr`` stays False)."""


class MissingModuleError(RebindError, ModuleNotFoundError):
    """``import mxnet.<name>`` (or ``rebind.<name>``) of an MXNet API rebind does not rebuild."""
