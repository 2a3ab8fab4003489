"""Objects a program uses to mark its own work in the profile: domains, tasks, counters...

Each records into the process's profiler only while it runs and is not
paused. Categories are MXNet's: a Task and a Counter belong to their domain's
name, a Frame to ``<domain>,frame``, a Marker to ``<domain>,instant_marker``,
an Event to ``event``.
"""

import contextlib

from ..errors import RebindError
from .recorder import NO_SCOPE, PROFILER, current_scope

__all__ = ["Counter", "Domain", "Event", "Frame", "Marker", "Task", "scope"]

# Marker.mark's scopes, and the trace format's instant-event scope letters
_MARK_SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "t"}


class Domain:
    """A named group of tasks, frames, counters and markers (a category in the trace)."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name

    def new_task(self, name):
        """A Task in this domain."""
        return Task(self, name)

    def new_frame(self, name):
        """A Frame in this domain."""
        return Frame(self, name)

    def new_counter(self, name, value=None):
        """A Counter in this domain, set to ``value`` when given."""
        return Counter(self, name, value)

    def new_marker(self, name):
        """A Marker in this domain."""
        return Marker(self, name)


class _Duration:
    """Something timed between ``start()`` and ``stop()``."""

    _kind = "duration"

    def __init__(self, category, name):
        self.name, self._category, self._start = name, category, None

    def __str__(self):
        return self.name

    def start(self):
        """Start timing."""
        self._start = PROFILER.now_ns()

    def stop(self):
        """Stop timing; the span is recorded if the profiler is running."""
        if self._start is None:
            raise RebindError(
                f"profiler {self._kind} {self.name!r}: stop() without start(); call start() "
                "at the beginning of the span"
            )
        start, self._start = self._start, None
        if PROFILER.active:
            PROFILER.complete(self._category, self.name, start, PROFILER.now_ns())


class Task(_Duration):
    """A logical unit of work; all its passes are aggregated into one row."""

    _kind = "Task"

    def __init__(self, domain, name):
        super().__init__(domain.name, name)


class Frame(_Duration):
    """A period such as one iteration; shown apart from tasks (``<domain>,frame``)."""

    _kind = "Frame"

    def __init__(self, domain, name):
        super().__init__(f"{domain.name},frame", name)


class Event(_Duration):
    """A span of application code, in the ``event`` category."""

    _kind = "Event"

    def __init__(self, name):
        super().__init__("event", name)


class Counter:
    """A value tracked over time (a counter track in the trace)."""

    def __init__(self, domain, name, value=None):
        self.name, self._category, self._value = name, domain.name, 0
        if value is not None:
            self.set_value(value)

    def __str__(self):
        return self.name

    def set_value(self, value):
        """Set the counter (an integer, as in MXNet)."""
        self._value = int(value)
        if PROFILER.active:
            PROFILER.counter(self._category, self.name, self._value)

    def increment(self, delta=1):
        """Add ``delta``."""
        self.set_value(self._value + int(delta))

    def decrement(self, delta=1):
        """Subtract ``delta``."""
        self.set_value(self._value - int(delta))

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self


class Marker:
    """An instant in time, marked with ``mark(scope)``."""

    def __init__(self, domain, name):
        self.name, self.domain = name, domain

    def mark(self, scope="process"):
        """Record the instant; ``scope`` is 'global', 'process', 'thread', 'task' or 'marker'."""
        letter = _MARK_SCOPES.get(scope)
        if letter is None:
            raise RebindError(
                f"Marker {self.name!r}: scope {scope!r} is not valid; valid scopes are "
                f"{sorted(_MARK_SCOPES)}"
            )
        if PROFILER.active:
            PROFILER.instant(f"{self.domain.name},instant_marker", self.name, letter)


@contextlib.contextmanager
def scope(name=NO_SCOPE, append_mode=True):
    """Prefix the operator names recorded inside with ``name:`` (nested scopes append).

    From MXNet 2's profiler (1.9 has no scope): ``name`` gains a trailing ':';
    with ``append_mode`` an enclosing scope's name goes in front. Yields the
    full scope name.
    """
    name = name if name.endswith(":") else name + ":"
    outer = current_scope.get()
    if append_mode and outer != NO_SCOPE:
        name = outer + name
    token = current_scope.set(name)
    try:
        yield name
    finally:
        current_scope.reset(token)
