"""What the profiler writes: the Chrome trace file and MXNet's aggregate statistics.

The trace is the Trace Event Format that chrome://tracing and Perfetto open:
``{"traceEvents": [...], "displayTimeUnit": "ms"}`` with complete ("X")
events for durations, "C" for counters, "i" for instant markers and "M"
metadata naming each process (a device such as ``cpu/0``, or a domain) and
thread. Times are microseconds.

The aggregate statistics follow MXNet 1.9's ``profiler.dumps()``: one section
per category (``operator``, a Domain's name, ``event``...), rows sorted by a
statistic, times in milliseconds. A counter's row holds its last value as
"Total", its smallest and largest values, and half their range as "Avg",
each divided by 1000, as MXNet prints them.
"""

import json

__all__ = ["AggregateStats", "SORT_KEYS", "trace_document"]

SORT_KEYS = ("total", "avg", "min", "max", "count")
_NAME_WIDTH, _COLUMN_WIDTH = 25, 16
_HEADERS = ("Total Count", "Time (ms)", "Min Time (ms)", "Max Time (ms)", "Avg Time (ms)")
_RULES = ("-----------", "---------", "-------------", "-------------", "-------------")


class _Stat:
    """One row: a duration (microseconds) or a counter (values)."""

    __slots__ = ("counter", "count", "total", "min", "max")

    def __init__(self, counter):
        self.counter = counter
        self.count, self.total = 0, 0.0
        self.min, self.max = float("inf"), float("-inf")

    def add(self, value):
        self.count += 1
        # a counter's "total" is its current value (MXNet's convention)
        self.total = value if self.counter else self.total + value
        self.min, self.max = min(self.min, value), max(self.max, value)

    def values(self):
        """(count, total, min, max, avg), the four times in milliseconds."""
        avg = (self.max - self.min) / 2 if self.counter else self.total / self.count
        return (self.count, *(v / 1000 for v in (self.total, self.min, self.max, avg)))


class AggregateStats:
    """Per category, per name: count, total, min, max of what was recorded."""

    def __init__(self):
        self.sections = {}

    def add_category(self, category):
        """Make sure ``category`` has a section (markers show one with no rows)."""
        return self.sections.setdefault(category, {})

    def add_duration(self, category, name, micros):
        """Count one duration of ``micros`` microseconds."""
        section = self.add_category(category)
        stat = section.get(name)
        if stat is None:
            stat = section[name] = _Stat(False)
        stat.add(micros)

    def add_counter(self, category, name, value):
        """Count one new value of a counter."""
        section = self.add_category(category)
        stat = section.get(name)
        if stat is None:
            stat = section[name] = _Stat(True)
        stat.add(value)

    def clear(self):
        """Forget everything (``dumps(reset=True)``)."""
        self.sections = {}

    def _rows(self, section, sort_by, ascending):
        order = {"count": 0, "total": 1, "min": 2, "max": 3, "avg": 4}[sort_by]
        rows = [(name, stat.values()) for name, stat in section.items()]
        # MXNet pops (value, name) pairs from a max-heap, the value negated when
        # ascending: ties come out by name, from the last name to the first
        rows.sort(key=lambda r: (-r[1][order] if ascending else r[1][order], r[0]), reverse=True)
        return rows

    def table(self, sort_by="total", ascending=False):
        """MXNet's printable table."""
        lines = ["", "Profile Statistics:", "\tNote the difference in units for different entries."]
        for category, section in self.sections.items():
            lines += [category, "================="]
            lines.append(_line("Name", _HEADERS))
            lines.append(_line("----", _RULES))
            for name, (count, *times) in self._rows(section, sort_by, ascending):
                lines.append(_line(name, (str(count), *(f"{t:.4f}" for t in times))))
            lines.append("")
        return "\n".join(lines) + "\n"

    def json(self, sort_by="total", ascending=False):
        """The same statistics as a JSON document: Time, Memory and Unit, as MXNet has them."""
        labels = ("Total", "Min", "Max", "Avg")
        time_part = {}
        for category, section in self.sections.items():
            time_part[category] = {
                name: {
                    "Count": count,
                    **{k: _significant(v) for k, v in zip(labels, times, strict=True)},
                }
                for name, (count, *times) in self._rows(section, sort_by, ascending)
            }
        document = {"Time": time_part, "Memory": {}, "Unit": {"Time": "ms", "Memory": "kB"}}
        return json.dumps(document, indent=4) + "\n"


def _line(name, cells):
    return name.ljust(_NAME_WIDTH) + " ".join(cell.rjust(_COLUMN_WIDTH) for cell in cells)


def _significant(value):
    """``value`` to 4 significant digits, as MXNet's JSON prints it."""
    rounded = float(f"{value:.4g}")
    return int(rounded) if rounded == int(rounded) else rounded


def trace_document(events, processes, threads):
    """The trace file's text: metadata naming processes and threads, then ``events``.

    ``processes`` maps a label (``cpu/0``, a domain) to its pid; ``threads`` maps a
    tid to the thread's name.
    """
    meta = [
        {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": label}}
        for label, pid in processes.items()
    ]
    seen = sorted({(e["pid"], e["tid"]) for e in events})
    meta += [
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": threads[tid]}}
        for pid, tid in seen
    ]
    body = ",\n".join("        " + json.dumps(e) for e in (*meta, *events))
    return '{\n    "traceEvents": [\n' + body + '\n    ],\n    "displayTimeUnit": "ms"\n}\n'
