"""Built-in initializers that delegate: Load (from saved arrays) and Mixed (by name pattern).

As in MXNet these are plain callables, not ``Initializer`` subclasses: they
have no JSON form and cannot be a variable's ``__init__`` attribute.
"""

import logging
import re

from rebind import ndarray
from rebind.errors import ShapeError
from rebind.hookspecs import hookimpl

__all__ = ["Load", "Mixed"]

_log = logging.getLogger(__name__)


def _strip_prefix(name):
    return name[4:] if name.startswith(("arg:", "aux:")) else name


class Load:
    """Initializes parameters from saved arrays, falling back on ``default_init``.

    Args:
        param: a dict of name -> NDArray, or the name of a file written by
            ``mx.nd.save`` (a checkpoint's ``.params``); ``arg:``/``aux:``
            prefixes are stripped.
        default_init: called for parameters not found; without it they are errors.
        verbose: log where each parameter came from.
    """

    def __init__(self, param, default_init=None, verbose=False):
        if isinstance(param, str):
            source, param = param, ndarray.load(param)
        else:
            source = "the given dict"
        if not isinstance(param, dict):
            raise TypeError(
                f"Load: {source} must hold named arrays (a dict), got {type(param).__name__}"
            )
        self.param = {_strip_prefix(name): arr for name, arr in param.items()}
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr):
        """Copy the loaded array called ``name`` into ``arr``, or defer to ``default_init``."""
        if name in self.param:
            loaded = self.param[name]
            if arr.shape != loaded.shape:
                raise ShapeError(
                    f"Parameter {name} cannot be initialized from loading. Shape mismatch, "
                    f"target {arr.shape} vs loaded {loaded.shape}"
                )
            arr[:] = loaded
            if self.verbose:
                _log.info("Initialized %s by loading", name)
            return
        if self.default_init is None:
            raise ValueError(
                f"Cannot Initialize {name}. Not found in loaded param and no default "
                f"Initializer is provided (loaded: {', '.join(sorted(self.param)) or 'none'})."
            )
        self.default_init(name, arr)
        if self.verbose:
            _log.info("Initialized %s by default", name)


class Mixed:
    """Chooses an initializer per parameter: the first regex (``re.match``) that matches its name.

    Args:
        patterns: regular expressions, tried in order; end with ".*" for a default.
        initializers: one initializer per pattern.
    """

    def __init__(self, patterns, initializers):
        patterns, initializers = list(patterns), list(initializers)
        if len(patterns) != len(initializers):
            raise ValueError(
                f"Mixed: got {len(patterns)} patterns but {len(initializers)} initializers; "
                "give one initializer per pattern"
            )
        self.map = [(re.compile(p), init) for p, init in zip(patterns, initializers, strict=True)]

    def __call__(self, name, arr):
        """Initialize ``arr`` with the initializer of the first pattern matching ``name``."""
        for pattern, init in self.map:
            if pattern.match(name):
                init(name, arr)
                return
        tried = ", ".join(repr(p.pattern) for p, _ in self.map)
        raise ValueError(
            f"Parameter name {name} did not match any pattern ({tried}). Consider adding "
            'a ".*" pattern at the end with a default Initializer.'
        )


@hookimpl
def rebind_add_initializers(registry):
    registry.add("load", Load)
    registry.add("mixed", Mixed)
