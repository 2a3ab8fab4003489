"""The profiler's configuration keys, their defaults, and MXNet's parsing of their values.

MXNet 1.9 starts every ``set_config`` call from these defaults: a key left out
goes back to its default, it does not keep an earlier call's value.
"""

from ..errors import RebindError

__all__ = ["DEFAULTS", "PROCESSES", "parse_config"]

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
_TRUE, _FALSE = ("true", "1"), ("false", "0")


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
