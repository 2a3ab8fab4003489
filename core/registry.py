"""The one plugin manager, and name -> implementation look-ups per family.

The manager is built lazily on first use: it registers the built-in plugin
modules (by module name), then the entry point group ``rebind`` (unless
``REBIND_DISABLE_PLUGIN_AUTOLOAD=1``), skipping any plugin named in
``REBIND_BLOCKED_PLUGINS=a,b``, and finally rejects hooks nobody specified.

A family (backends, optimizers, metrics, ...) is filled by calling its
``rebind_add_<family>`` hook once per plugin, each with a ``Contributor`` that
remembers which plugin adds what, so a name given by two plugins is an error
naming both.
"""

import difflib
import importlib
import os
import pkgutil
import threading
import warnings

import pluggy

from . import hookspecs
from .errors import PluginError, UnknownNameError

__all__ = [
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "FAMILIES",
    "Registry",
    "get_plugin_manager",
    "get_registry",
    "lookup",
    "register_plugin",
    "unregister_plugin",
    "add_runtime",
    "reset",
]

ENTRY_POINT_GROUP = "rebind"

# Built-in plugin modules, registered under their module names (which is also
# the name REBIND_BLOCKED_PLUGINS uses), followed by every module of the
# rebind.plugins package. Order matters only for preference: the first backend
# registered for a device type serves it by default.
BUILTIN_PLUGINS = (
    "rebind.backends.numpy_backend",
    "rebind.backends.cupy_backend",
    "rebind.ops",
)
PLUGIN_PACKAGE = "rebind.plugins"

# family -> whether its names are looked up case-insensitively (as MXNet does)
FAMILIES = {
    "backends": True,
    "operators": False,
    "optimizers": True,
    "initializers": True,
    "metrics": True,
    "kvstores": True,
}

HOOK_PREFIX = "rebind_"


class Registry:
    """The implementations of one family, by name, with the plugin that gave each."""

    def __init__(self, family, case_insensitive=True):
        self.family = family
        self.case_insensitive = case_insensitive
        self._items = {}  # key -> (display name, implementation, owner)

    def _key(self, name):
        if not isinstance(name, str):
            raise TypeError(f"{self.family} names are strings, got {name!r}")
        return name.lower() if self.case_insensitive else name

    def add(self, name, implementation, owner="<unknown>", replace=False):
        """Add ``implementation`` under ``name``; a clash is an error unless ``replace``."""
        key = self._key(name)
        if key in self._items and not replace:
            _, _, first = self._items[key]
            raise PluginError(
                f"{self.family[:-1]} {name!r} is provided by two plugins: {first!r} and "
                f"{owner!r}; block one with REBIND_BLOCKED_PLUGINS={owner}"
            )
        self._items[key] = (name, implementation, owner)

    def get(self, name):
        """Return the implementation registered as ``name``, or raise UnknownNameError."""
        entry = self._items.get(self._key(name))
        if entry is None:
            raise UnknownNameError(self._unknown_message(name))
        return entry[1]

    def _unknown_message(self, name):
        known = self.names()
        message = f"unknown {self.family[:-1]} {name!r}; available: {', '.join(known) or 'none'}"
        pool = {self._key(n): n for n in known}
        close = difflib.get_close_matches(self._key(name), list(pool), n=1, cutoff=0.6)
        if close:
            message += f". Did you mean {pool[close[0]]!r}?"
        return message

    def owner(self, name):
        """The plugin that registered ``name``."""
        self.get(name)
        return self._items[self._key(name)][2]

    def names(self):
        """Registered names, sorted, as they were given."""
        return sorted(display for display, _, _ in self._items.values())

    def items(self):
        """(name, implementation) pairs in registration order."""
        return [(display, impl) for display, impl, _ in self._items.values()]

    def __contains__(self, name):
        return isinstance(name, str) and self._key(name) in self._items

    def __len__(self):
        return len(self._items)

    def __repr__(self):
        return f"<Registry {self.family}: {', '.join(self.names())}>"


class Contributor:
    """What a ``rebind_add_*`` hook receives: ``add`` records the calling plugin."""

    def __init__(self, registry, plugin_name):
        self._registry = registry
        self.plugin_name = plugin_name

    @property
    def family(self):
        return self._registry.family

    def add(self, name, implementation):
        """Contribute ``implementation`` under ``name``."""
        self._registry.add(name, implementation, owner=self.plugin_name)


class _Manager(pluggy.PluginManager):
    """A PluginManager that also takes undecorated ``rebind_*`` functions as hooks.

    That is what lets a misspelled hook be caught: every ``rebind_``-prefixed
    callable must match a specification, decorated or not.
    """

    def parse_hookimpl_opts(self, plugin, name):
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith(HOOK_PREFIX):
            if callable(getattr(plugin, name, None)):
                opts = {}
        return opts


_lock = threading.RLock()
_state = {"manager": None, "families": {}, "runtime": []}


def _env_list(name):
    return [part.strip() for part in os.environ.get(name, "").split(",") if part.strip()]


def _build_manager():
    manager = _Manager(hookspecs.PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    for blocked in _env_list("REBIND_BLOCKED_PLUGINS"):
        manager.set_blocked(blocked)
    for module_name in builtin_plugin_names():
        if not manager.is_blocked(module_name):
            _register(manager, importlib.import_module(module_name), module_name)
    if os.environ.get("REBIND_DISABLE_PLUGIN_AUTOLOAD", "") not in ("1", "true", "True"):
        _load_entry_points(manager)
    _check_unknown_hooks(manager)
    return manager


def builtin_plugin_names():
    """The module names of rebind's own plugins, in registration order."""
    package = importlib.import_module(PLUGIN_PACKAGE)
    found = sorted(info.name for info in pkgutil.iter_modules(package.__path__))
    return (*BUILTIN_PLUGINS, *(f"{PLUGIN_PACKAGE}.{name}" for name in found))


def _register(manager, plugin, name):
    try:
        manager.register(plugin, name=name)
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"plugin {name!r} is invalid: {exc}") from exc
    except ValueError as exc:  # pluggy: name or object already registered
        raise PluginError(f"plugin {name!r} cannot be registered: {exc}") from exc


def _load_entry_points(manager):
    try:
        manager.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"entry point plugin is invalid: {exc}") from exc
    except (ImportError, AttributeError) as exc:
        raise PluginError(
            f"an entry point of group {ENTRY_POINT_GROUP!r} failed to load: {exc}; "
            "uninstall the package or block it with REBIND_BLOCKED_PLUGINS"
        ) from exc


def _check_unknown_hooks(manager):
    specified = [n for n in dir(hookspecs) if n.startswith(HOOK_PREFIX)]
    for plugin in manager.get_plugins():
        for attr in dir(plugin):
            if attr.startswith(HOOK_PREFIX) and attr not in specified:
                if manager.parse_hookimpl_opts(plugin, attr) is None:
                    continue
                name = manager.get_name(plugin)
                close = difflib.get_close_matches(attr, specified, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise PluginError(
                    f"plugin {name!r} implements unknown hook {attr!r}{hint} "
                    f"(known hooks: {', '.join(specified)})"
                )
    manager.check_pending()


def get_plugin_manager():
    """The process-wide plugin manager, built on first use."""
    with _lock:
        if _state["manager"] is None:
            _state["manager"] = _build_manager()
        return _state["manager"]


def get_registry(family):
    """The ``Registry`` of ``family`` ("backends", "optimizers", ...), filled on first use."""
    with _lock:
        registry = _state["families"].get(family)
        if registry is None:
            registry = _fill(family)
            _state["families"][family] = registry
        return registry


def _fill(family):
    if family not in FAMILIES:
        raise PluginError(f"unknown plugin family {family!r}; known: {', '.join(FAMILIES)}")
    manager = get_plugin_manager()
    registry = Registry(family, case_insensitive=FAMILIES[family])
    caller = getattr(manager.hook, f"rebind_add_{family}")
    # one call per plugin, in registration order (built-ins first), so each
    # addition is attributed to the plugin that made it
    for impl in caller.get_hookimpls():
        contributor = Contributor(registry, impl.plugin_name)
        impl.function(**dict.fromkeys(impl.argnames, contributor))
    for runtime_family, name, implementation, owner in _state["runtime"]:
        if runtime_family == family:
            _add_runtime_entry(registry, name, implementation, owner)
    return registry


def _add_runtime_entry(registry, name, implementation, owner):
    if name in registry and registry.owner(name) != owner:
        warnings.warn(
            f"{registry.family[:-1]} {name!r} from {owner} replaces the one from "
            f"{registry.owner(name)}",
            stacklevel=4,
        )
    registry.add(name, implementation, owner=owner, replace=True)


def lookup(family, name):
    """Shorthand for ``get_registry(family).get(name)``."""
    return get_registry(family).get(name)


def add_runtime(family, name, implementation, owner):
    """Register at run time, as MXNet's ``register`` decorators do; it replaces with a warning."""
    with _lock:
        _state["runtime"].append((family, name, implementation, owner))
        registry = _state["families"].get(family)
        if registry is not None:
            _add_runtime_entry(registry, name, implementation, owner)


def register_plugin(plugin, name=None):
    """Register a plugin object or module now (tests, notebooks); returns its name."""
    with _lock:
        manager = get_plugin_manager()
        _register(manager, plugin, name)
        try:
            _check_unknown_hooks(manager)
        except PluginError:
            manager.unregister(plugin)
            raise
        _state["families"].clear()
        _notify_reset()
        return manager.get_name(plugin)


def unregister_plugin(plugin=None, name=None):
    """Remove a plugin registered before; families are rebuilt on next use."""
    with _lock:
        get_plugin_manager().unregister(plugin=plugin, name=name)
        _state["families"].clear()
        _notify_reset()


_reset_callbacks = []


def on_reset(callback):
    """Call ``callback()`` whenever registrations change (caches built on them drop)."""
    _reset_callbacks.append(callback)
    return callback


def _notify_reset():
    for callback in _reset_callbacks:
        callback()


def reset():
    """Forget the manager and every family; the next use re-reads the environment."""
    with _lock:
        _state["manager"] = None
        _state["families"].clear()
        _notify_reset()
