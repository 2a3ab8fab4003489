"""``mx.profiler``: time operators and marked spans; write a Chrome trace and MXNet's stats.

``set_config(...)``, ``set_state('run')``, run the work, ``set_state('stop')``,
then ``dump()`` writes the trace (chrome://tracing, Perfetto) to the configured
file and ``dumps()`` returns MXNet's aggregate table (with ``aggregate_stats``).
Executor forward/backward steps are recorded with ``profile_symbolic``, and
``mx.nd`` operator calls with ``profile_imperative``, under the operators' names
(``FullyConnected``, ``_backward_FullyConnected``).
"""

import warnings

from ..errors import RebindError
from .config import PROCESSES
from .objects import Counter, Domain, Event, Frame, Marker, Task, scope
from .output import SORT_KEYS
from .recorder import PROFILER

__all__ = [
    "Counter",
    "Domain",
    "Event",
    "Frame",
    "Marker",
    "Task",
    "dump",
    "dump_profile",
    "dumps",
    "pause",
    "profiler_set_config",
    "profiler_set_state",
    "resume",
    "scope",
    "set_config",
    "set_kvstore_handle",
    "set_state",
]

_STATES = {"stop": False, "run": True}
profiler_kvstore_handle = None


def set_kvstore_handle(handle):
    """Remember the kvstore whose servers MXNet would profile (kept for compatibility)."""
    global profiler_kvstore_handle
    profiler_kvstore_handle = handle


def _worker_only(function, profile_process):
    if profile_process not in PROCESSES:
        raise RebindError(
            f"profiler.{function}: profile_process={profile_process!r} is not valid; "
            f"valid values are {PROCESSES}"
        )
    if profile_process == "server":
        raise NotImplementedError(
            f"profiler.{function}(profile_process='server'): rebind's distributed kvstore "
            "has no server processes to profile; profile each worker instead"
        )


def set_config(**kwargs):
    """Configure the profiler (keywords only; keys left out return to MXNet's defaults).

    Keys: filename ('profile.json'), profile_all (False), profile_symbolic (True),
    profile_imperative (True), profile_memory (True, records nothing here),
    profile_api (True, records nothing here), continuous_dump (True),
    dump_period (1.0 s), aggregate_stats (False), profile_process ('worker').
    """
    _worker_only("set_config", str(kwargs.get("profile_process", "worker")))
    PROFILER.configure(kwargs)


def profiler_set_config(mode="symbolic", filename="profile.json"):
    """Deprecated: ``set_config(profile_<mode>=True, filename=filename)``."""
    warnings.warn(
        "profiler.profiler_set_config() is deprecated; use profiler.set_config() instead",
        stacklevel=2,
    )
    set_config(**{f"profile_{mode}": True, "filename": filename})


def set_state(state="stop", profile_process="worker"):
    """Start ('run') or stop ('stop') recording."""
    _worker_only("set_state", profile_process)
    if state not in _STATES:
        raise RebindError(f"profiler.set_state: state must be 'run' or 'stop', got {state!r}")
    PROFILER.set_state(_STATES[state])


def profiler_set_state(state="stop"):
    """Deprecated: ``set_state(state)``."""
    warnings.warn(
        "profiler.profiler_set_state() is deprecated; use profiler.set_state() instead",
        stacklevel=2,
    )
    set_state(state)


def dump(finished=True, profile_process="worker"):
    """Write the trace to the configured file; ``finished`` ends output until the next run."""
    _worker_only("dump", profile_process)
    PROFILER.dump(finished is True)


def dump_profile():
    """Deprecated: ``dump(True)``."""
    warnings.warn(
        "profiler.dump_profile() is deprecated; use profiler.dump() instead",
        stacklevel=2,
    )
    dump(True)


def dumps(reset=False, format="table", sort_by="total", ascending=False):  # noqa: A002
    """The aggregate statistics as MXNet's table or as JSON ('' without aggregate_stats).

    ``sort_by``: 'total', 'avg', 'min', 'max' or 'count'; ``reset`` clears them after.
    """
    _check(format in ("table", "json"), f"format: {format}. Support: 'table', 'json'")
    _check(sort_by in SORT_KEYS, f"sort_by: {sort_by}. Support: {', '.join(map(repr, SORT_KEYS))}")
    _check(ascending in (False, True), f"ascending: {ascending}. Support: False, True")
    _check(reset in (False, True), f"reset: {reset}. Support: False, True")
    return PROFILER.statistics(format == "json", sort_by, ascending, reset)


def _check(condition, message):
    # MXNet asserts these; raised explicitly so that python -O keeps the check
    if not condition:
        raise AssertionError(f"profiler.dumps: Invalid value provided for {message}")


def pause(profile_process="worker"):
    """Stop recording for a while (``resume()`` continues)."""
    _worker_only("pause", profile_process)
    PROFILER.set_paused(True)


def resume(profile_process="worker"):
    """Continue recording after ``pause()``."""
    _worker_only("resume", profile_process)
    PROFILER.set_paused(False)
