"""The process's one profiler: configuration, run state, recorded events, aggregate stats.

Everything the profiler knows lives on the ``PROFILER`` object. The executor
and the imperative op call read one attribute of it per call (``symbolic`` or
``imperative``): these flags are recomputed whenever the configuration or the
state changes, so with the profiler stopped the hot paths pay one attribute
read and take their normal, untimed route.
"""

import atexit
import contextvars
import os
import threading
import time

from ..errors import RebindError
from ..fileutil import write_atomic
from .config import initial_config, parse_config
from .output import AggregateStats, trace_document

__all__ = ["PROFILER", "Profiler", "current_scope"]

CUSTOM_DOMAIN = "Custom Operator"  # MXNet's aggregate-table section for custom operators
# the op_type of the custom operator whose Python code runs now (None: none does)
_custom_op_type = contextvars.ContextVar("rebind_profiler_custom_op", default=None)

# the scope set by profiler.scope(); '<unk>:' is MXNet's name for "no scope"
NO_SCOPE = "<unk>:"
current_scope = contextvars.ContextVar("rebind_profiler_scope", default=NO_SCOPE)


class Profiler:
    """Configuration, state ('run'/'stop', paused), events and aggregate statistics."""

    def __init__(self):
        self.config = initial_config(os.environ)
        self.running = self.paused = False
        self.output_enabled = False  # set by the first 'run'; a finished dump clears it
        self.active = self.symbolic = self.imperative = False
        self.events = []
        self.aggregate = None  # AggregateStats while aggregate_stats is set
        self._lock = threading.RLock()
        # the aggregate's own lock, so that recording never waits for a dump being written
        self._stats_lock = threading.Lock()
        self._pids, self._threads = {}, {}  # label -> pid; tid -> thread name
        # a thread's tid lives on the thread: an ended thread's ident may be reused
        self._local = threading.local()
        # perf_counter gives the durations; this offset puts them on the wall clock
        self._epoch_ns = time.time_ns() - time.perf_counter_ns()
        self._dumper = None  # (thread, stop event) while continuous_dump runs
        self._written = 0  # how many events the file holds

    # -- configuration and state ---------------------------------------------------------
    def configure(self, kwargs):
        """Apply ``set_config(**kwargs)``: unmentioned keys return to their defaults."""
        config = parse_config(kwargs)
        with self._lock:
            self.config = config
            _remove(config["filename"])
            self._written = 0
            if not config["aggregate_stats"]:
                self.aggregate = None
            elif self.aggregate is None:
                self.aggregate = AggregateStats()
            self._refresh()

    def set_state(self, running):
        """Start (True) or stop (False) recording; starting also ends a pause."""
        with self._lock:
            self.running = running
            self.paused = not running
            if running:
                self.output_enabled = True
            self._refresh()

    def set_paused(self, paused):
        """Pause or resume recording without changing the state."""
        with self._lock:
            self.paused = paused
            self._refresh()

    def _refresh(self):
        config = self.config
        self.active = self.running and not self.paused
        self.symbolic = self.active and (config["profile_symbolic"] or config["profile_all"])
        self.imperative = self.active and (config["profile_imperative"] or config["profile_all"])
        want_dumper = self.running and config["continuous_dump"] and self.output_enabled
        if want_dumper and self._dumper is None:
            self._start_dumper(config["dump_period"])
        elif not want_dumper and self._dumper is not None:
            self._stop_dumper()

    # -- recording -----------------------------------------------------------------------
    def now_ns(self):
        """The clock events are measured with (nanoseconds, monotonic)."""
        return time.perf_counter_ns()

    def time_step(self, prefix, step, function):
        """``function``, timed as the executor step ``step`` (named ``prefix`` + its op's name)."""
        name, node, context = prefix + step.op.name, step.name, step.context
        return lambda *args: self.time_op(name, node, context, function, *args)

    def time_op_function(self, name, context, function):
        """``function``, timed as the imperative operator ``name`` on ``context``."""
        return lambda *args: self.time_op(name, None, context, function, *args)

    def time_op(self, name, node, context, function, *args):
        """Run ``function(*args)`` as operator ``name`` on ``context``, recording its time.

        ``node`` (the graph node's name, or None for an imperative call) goes in
        the trace event's args.
        On a device other than the CPU the backend is synchronized before and
        after, so the time is the kernel's and not only its launch.
        """
        sync = context.device_type != "cpu"
        if sync:
            context.backend.synchronize(context.device_id)
        start = time.perf_counter_ns()
        result = function(*args)
        if sync:
            context.backend.synchronize(context.device_id)
        end = time.perf_counter_ns()
        scope = current_scope.get()
        if scope != NO_SCOPE:
            name = scope + name
        category, op_type = "operator", _custom_op_type.get()
        if op_type is not None:  # an operator a custom operator's Python code called
            category, name = CUSTOM_DOMAIN, f"{op_type}::{name}"
        device = f"{context.device_type}/{context.device_id}"
        self.complete(category, name, start, end, device, None if node is None else {"node": node})
        return result

    def time_custom_python(self, op_type, backward, function):
        """Run a custom operator's Python ``forward``/``backward`` and record it, as MXNet does.

        The Python code is recorded in the "Custom Operator" domain as
        ``<op_type>::pure_python`` (``_backward_<op_type>::pure_python``), and the
        operators it calls as ``<op_type>::<operator>``.
        """
        token = _custom_op_type.set(op_type)
        start = time.perf_counter_ns()
        try:
            function()
        finally:
            end = time.perf_counter_ns()
            _custom_op_type.reset(token)
        prefix = "_backward_" if backward else ""
        self.complete(CUSTOM_DOMAIN, f"{prefix}{op_type}::pure_python", start, end)

    def complete(self, category, name, start_ns, end_ns, process=None, args=None):
        """Record a finished duration (a trace "X" event, and the aggregate)."""
        event = {
            "name": name,
            "cat": category,
            "ph": "X",
            "ts": self._micros(start_ns),
            "dur": round((end_ns - start_ns) / 1000, 3),
            "pid": self._pid(process or category),
            "tid": self._tid(),
        }
        if args:
            event["args"] = args
        self.events.append(event)
        aggregate = self.aggregate
        if aggregate is not None:
            with self._stats_lock:
                aggregate.add_duration(category, name, (end_ns - start_ns) / 1000)

    def counter(self, category, name, value):
        """Record a counter's new value (a trace "C" event)."""
        event = {
            "name": name,
            "cat": category,
            "ph": "C",
            "ts": self._micros(time.perf_counter_ns()),
            "pid": self._pid(category),
            "tid": self._tid(),
            "args": {name: value},
        }
        self.events.append(event)
        aggregate = self.aggregate
        if aggregate is not None:
            with self._stats_lock:
                aggregate.add_counter(category, name, value)

    def instant(self, category, name, scope_letter):
        """Record an instant marker (a trace "i" event)."""
        event = {
            "name": name,
            "cat": category,
            "ph": "i",
            "ts": self._micros(time.perf_counter_ns()),
            "s": scope_letter,
            "pid": self._pid(category),
            "tid": self._tid(),
        }
        self.events.append(event)
        aggregate = self.aggregate
        if aggregate is not None:
            with self._stats_lock:
                aggregate.add_category(category)

    def _micros(self, ns):
        return round((ns + self._epoch_ns) / 1000, 3)

    def _pid(self, process):
        pid = self._pids.get(process)
        if pid is None:
            with self._lock:
                pid = self._pids.setdefault(process, len(self._pids))
        return pid

    def _tid(self):
        tid = getattr(self._local, "tid", None)
        if tid is None:
            with self._lock:
                tid = self._local.tid = len(self._threads)
                self._threads[tid] = threading.current_thread().name
        return tid

    def statistics(self, as_json, sort_by, ascending, reset):
        """The aggregate statistics as text ('' without aggregate_stats); ``reset`` clears them."""
        with self._stats_lock:
            stats = self.aggregate
            if stats is None:
                return ""
            text = (stats.json if as_json else stats.table)(sort_by, ascending)
            if reset:
                stats.clear()
            return text

    # -- output --------------------------------------------------------------------------
    def dump(self, finished=True):
        """Write the trace of everything recorded so far to the configured file."""
        with self._lock:
            if not self.output_enabled:
                raise RebindError(
                    "profiler.dump: the profiler has not been run; configure it with "
                    "profiler.set_config(...) and start it with profiler.set_state('run') first"
                )
            self._write()
            if finished:
                self.events = []
                self._written = 0
                self.output_enabled = False
                self._refresh()

    def _write(self):
        events = list(self.events)
        threads = dict(self._threads)
        text = trace_document(events, self._pids, threads)
        write_atomic(self.config["filename"], text.encode("utf-8"))
        self._written = len(events)

    def _start_dumper(self, period):
        stop = threading.Event()
        thread = threading.Thread(
            target=self._dump_periodically, args=(stop, period), name="rebind-profiler-dump"
        )
        thread.daemon = True  # never keeps the interpreter alive; atexit writes the last part
        self._dumper = (thread, stop)
        thread.start()

    def _stop_dumper(self):
        _, stop = self._dumper
        self._dumper = None
        # no join: the thread may be waiting for the lock this caller holds; it sees
        # the event as soon as it gets the lock, and leaves without writing
        stop.set()

    def _dump_periodically(self, stop, period):
        while not stop.wait(period):
            with self._lock:
                if stop.is_set():
                    return
                if self.output_enabled and len(self.events) != self._written:
                    self._write()

    def dump_at_exit(self):
        """What MXNet does when the process ends: write what was not yet written."""
        with self._lock:
            if self._dumper is not None:
                self._stop_dumper()
            if self.output_enabled and len(self.events) != self._written:
                self._write()


def _remove(path):
    """Remove the output file of an earlier configuration (MXNet starts it afresh)."""
    try:
        os.remove(path)
    except OSError:
        pass


def _autostart(profiler, environ):
    """MXNET_PROFILER_AUTOSTART=1 runs the profiler from the start; the exit writes the file."""
    if environ.get("MXNET_PROFILER_AUTOSTART", "0").strip() not in ("", "0"):
        profiler.set_state(True)


PROFILER = Profiler()
_autostart(PROFILER, os.environ)
atexit.register(PROFILER.dump_at_exit)
