"""``mx.monitor``: statistics of a network's arrays, gathered every few batches.

``Monitor`` is installed on executors (``mod.install_monitor(mon)`` installs it
on each of a module's executors). Between ``tic()`` and ``toc()`` of an
activated step it records ``stat_func`` of every op output the executors
produce (and, with ``monitor_all``, every op input), then at ``toc`` of every
argument and auxiliary state; names are filtered by ``pattern``.
"""

import logging
import math
import re

from . import ndarray
from .ndarray.ndarray import NDArray

__all__ = ["Monitor"]


def norm_stat(array):
    """``norm(x) / sqrt(x.size)``: MXNet's default statistic, the root mean square."""
    return ndarray.norm(array) / math.sqrt(array.size)


class Monitor:
    """Collect a statistic of the arrays matching ``pattern`` every ``interval`` batches.

    Call ``tic()`` before a batch's forward and ``toc()`` (or ``toc_print()``)
    after its update. Only a ``tic`` at a step divisible by ``interval``
    activates the monitor; an activated step collects, and its ``toc`` returns
    ``[(step, name, text), ...]`` where ``step`` counts ``tic`` calls (the
    first activated step reports 1) and ``text`` is each statistic's value
    followed by a tab. A ``toc`` of a step that was not activated returns [].

    Args:
        interval: batches between two collections.
        stat_func: ``NDArray -> NDArray`` (or a list of them); by default
            ``norm(x) / sqrt(x.size)``.
        pattern: a regular expression; names matching it (``re.match``, so
            anchored at the start) are collected.
        sort: sort the results by name.
        monitor_all: also collect every op's inputs, not only its outputs.

    Differences from MXNet: the callback receives ``str`` names and NDArrays
    viewing the op's arrays rather than bytes and raw handles.
    """

    def __init__(self, interval, stat_func=None, pattern=".*", sort=False, monitor_all=False):
        self.stat_func = norm_stat if stat_func is None else stat_func
        self.interval = interval
        self.activated = False
        self.queue = []
        self.step = 0
        self.exes = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

    def stat_helper(self, name, array):
        """Executor callback: record ``stat_func(array)`` when activated and ``name`` matches."""
        if self.activated and self.re_prog.match(name):
            self.queue.append((self.step, name, self.stat_func(array)))

    def install(self, exe):
        """Make executor ``exe`` report its arrays to this monitor."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def tic(self):
        """Start a batch: activate when the step is a multiple of ``interval``; count the step."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self):
        """End a batch: add the arguments and auxiliary states, return the collected stats."""
        if not self.activated:
            return []
        for exe in self.exes:
            for named in (exe.arg_dict, exe.aux_dict):
                for name, array in named.items():
                    if self.re_prog.match(name):
                        self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda entry: entry[1])
        results = [(step, name, _as_text(stat)) for step, name, stat in self.queue]
        self.queue = []
        return results

    def toc_print(self):
        """``toc()``, logged at INFO one line per statistic: ``Batch: step name value``."""
        for step, name, text in self.toc():
            logging.info(f"Batch: {step:7d} {name:30s} {text:s}")


def _as_text(stat):
    """Each value of a statistic, then a tab: a scalar for shape (1,), else the array."""
    values = [stat] if isinstance(stat, NDArray) else stat
    if not isinstance(values, list):
        raise TypeError(
            "Monitor: stat_func must return an NDArray or a list of them, "
            f"got {type(stat).__name__}"
        )
    text = ""
    for value in values:
        if not isinstance(value, NDArray):
            raise TypeError(f"Monitor: stat_func returned {type(value).__name__}, not an NDArray")
        text += (str(value.asscalar()) if value.shape == (1,) else str(value.asnumpy())) + "\t"
    return text
