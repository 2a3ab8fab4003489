"""The profiler's configuration keys, their defaults, and MXNet's parsing of their values.

MXNet 1.9 starts every ``set_config`` call from these defaults: a key left out
goes back to its default, it does not keep an earlier call's value.
"""

from ..errors import RebindError

__all__ = ["DEFAULTS", "PROCESSES", "initial_config", "parse_config"]

# key -> (kind, default), in MXNet's order (ProfileConfigParam)
_PARAMS = {
    "profile_all": ("bool", False),
    "profile_symbolic": ("bool", True),
    "profile_imperative": ("bool", True),
    "profile_memory": ("bool", True),
    "profile_api": ("bool", True),
    "filename": ("str", "profile.json"),
    "continuous_dump": ("bool", True),
    "dump_period": ("float", 1.0),
    "aggregate_stats": ("bool", False),
    "profile_process": ("process", "worker"),
}

DEFAULTS = {key: default for key, (_, default) in _PARAMS.items()}
PROCESSES = ("worker", "server")
# MXNET_PROFILER_MODE's bits (MXNet's ProfilerMode)
_MODE_BITS = {"profile_symbolic": 1, "profile_imperative": 2, "profile_api": 4, "profile_memory": 8}
_TRUE, _FALSE = ("true", "1"), ("false", "0")


def initial_config(environ):
    """The configuration before any ``set_config``: MXNet's profiler object starts this way.

    Symbolic, API and memory profiling, no imperative profiling, no continuous
    dump; ``MXNET_PROFILER_MODE`` (an integer of the bits above) replaces the mode.
    """
    config = dict(DEFAULTS, profile_imperative=False, continuous_dump=False)
    text = environ.get("MXNET_PROFILER_MODE")
    if text is not None:
        try:
            mode = int(text)
        except ValueError:
            raise RebindError(
                f"MXNET_PROFILER_MODE must be an integer of profiling bits {_MODE_BITS}, "
                f"got {text!r}"
            ) from None
        config.update({key: bool(mode & bit) for key, bit in _MODE_BITS.items()})
    return config


def parse_config(kwargs):
    """The full configuration for a ``set_config(**kwargs)`` call (defaults filled in)."""
    config = dict(DEFAULTS)
    for key, value in kwargs.items():
        if key not in _PARAMS:
            raise RebindError(
                f"profiler.set_config: cannot find argument {key!r}; the arguments are "
                f"{', '.join(_PARAMS)}"
            )
        config[key] = _parse(key, _PARAMS[key][0], value)
    if config["continuous_dump"] and not config["dump_period"] > 0:
        raise RebindError(
            f"profiler.set_config: dump_period must be > 0 with continuous_dump, "
            f"got {config['dump_period']}"
        )
    return config


def _parse(key, kind, value):
    text = str(value)
    if kind == "bool":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        return _invalid(key, "boolean", text)
    if kind == "float":
        try:
            return float(text)
        except ValueError:
            return _invalid(key, "float", text)
    if kind == "process":
        if text not in PROCESSES:
            raise RebindError(
                f"profiler.set_config: profile_process={text!r} is not valid; "
                f"valid values are {PROCESSES}"
            )
        return text
    return text


def _invalid(key, expected, text):
    raise RebindError(
        f"profiler.set_config: invalid value for {key}: expected a {expected}, got {text!r}"
    )
