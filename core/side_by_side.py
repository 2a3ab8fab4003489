"""Calls run at the same time, one thread each: the executors of several cpu contexts.

``run(calls)`` runs the first call in the calling thread and each other one in
a helper thread of the process, and returns their results in order. NumPy and
BLAS compute without the GIL, so calls that each touch their own arrays (one
context's executor, one context's copy of the weights) run in parallel and
give the values they give in turn. While they run, the thread policy's count
is divided among them (``threadpool.shared_by``: two side-by-side products on
2 cores take one BLAS thread each instead of spinning two each), and each
carries the calling thread's flags (``thread_flags``). The helper threads
sleep between calls; on a busy machine the scheduler still gives each its
share, which is what MXNet's per-device engine threads get too.

A training step hands work out several times, so the hand-over is two lock
releases and two acquires per helper (tens of microseconds less than a
``concurrent.futures`` pool's futures and conditions). One group of calls runs
side by side at a time: a ``run`` while another is under way (from a helper,
or from a second thread of the user's) runs its calls in turn, as the divided
thread count (``shared_by``) assumes. ``REBIND_CONTEXT_THREADS=0``
(``enabled()``) tells the callers to stay in the calling thread.
"""

import os
import threading

from . import threadpool
from .thread_flags import raise_all, raised

__all__ = ["SWITCH", "enabled", "run"]

SWITCH = "REBIND_CONTEXT_THREADS"  # "0": work for several cpu contexts takes turns

_busy = threading.Lock()  # held while a group of calls runs side by side
_helpers = {"threads": []}  # this process's helper threads


class _Task:
    """One handed call: run by whichever thread claims it first (its helper, or the caller)."""

    __slots__ = ("call", "claim", "done", "outcome")

    def __init__(self, call):
        self.call = call
        self.claim = threading.Lock()  # taken by the thread that runs the call
        self.done = threading.Lock()  # released once the helper that claimed it has run it
        self.done.acquire()
        self.outcome = None  # (True, result) or (False, exception)

    def run(self):
        """Run the call (the claim is held), keeping how it ended."""
        try:
            self.outcome = (True, self.call())
        except BaseException as exc:  # noqa: BLE001  (handed back to the caller)
            self.outcome = (False, exc)


class _Helper:
    """A daemon thread that runs the calls handed to it, unless the caller took them first."""

    def __init__(self):
        self._handed = threading.Lock()  # released: a task is waiting for the thread
        self._handed.acquire()
        self._offer = None  # (task, flags): one attribute, read whole by the thread
        threading.Thread(target=self._serve, name="rebind-side-by-side", daemon=True).start()

    def hand(self, task, flags):
        """Offer ``task`` to the thread, with the calling thread's ``flags`` to set."""
        self._offer = (task, flags)
        if self._handed.locked():  # else a wake-up is pending already: it finds this task
            self._handed.release()

    def _serve(self):
        while True:
            self._handed.acquire()
            task, flags = self._offer
            if not task.claim.acquire(blocking=False):
                continue  # the caller ran it already (see run)
            with raise_all(flags):
                task.run()
            task.done.release()


def _helper_threads(count):
    """``count`` helpers of this process (``_busy`` is held: no other run changes the list)."""
    threads = _helpers["threads"]
    while len(threads) < count:
        threads.append(_Helper())
    return threads[:count]


def _forget_after_fork():
    """In a forked child: none of the parent's threads exist, and no run is under way."""
    global _busy
    _helpers["threads"] = []
    _busy = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def enabled():
    """Whether side-by-side work is allowed (``REBIND_CONTEXT_THREADS`` is not ``0``)."""
    return os.environ.get(SWITCH, "1").strip() != "0"


def run(calls):
    """Call each zero-argument function of ``calls`` at the same time; results in order.

    An exception is raised once every call has ended: the first one's by
    position. One call runs in the calling thread, as is; a call its helper
    has not started by the time the calling thread is done with its own runs
    there too (on a busy machine a woken thread may wait milliseconds for a
    CPU: the work is not held up by it).
    """
    calls = list(calls)
    if len(calls) < 2 or not _busy.acquire(blocking=False):
        return _in_turn(calls)  # one call, or another group runs side by side now
    try:
        helpers = _helper_threads(len(calls) - 1)
        tasks = [_Task(call) for call in calls[1:]]
        flags = raised()
        with threadpool.shared_by(len(calls)):
            for helper, task in zip(helpers, tasks, strict=True):
                helper.hand(task, flags)
            try:
                first = calls[0]()
            finally:
                _finish(tasks)
    finally:
        _busy.release()
    return [first, *_results(tasks)]


def _finish(tasks):
    """Run the tasks no helper has claimed yet; wait for those the helpers run."""
    for task in tasks:
        if task.claim.acquire(blocking=False):
            task.run()
        else:
            task.done.acquire()


def _results(tasks):
    for ended, value in (task.outcome for task in tasks):
        if not ended:
            raise value
    return [task.outcome[1] for task in tasks]


def _in_turn(calls):
    """The calls one after another, with ``run``'s promise: all run, the first error raised."""
    results, error = [], None
    for call in calls:
        try:
            results.append(call())
        except Exception as exc:  # noqa: BLE001  (raised once every call has run)
            if error is None:
                error = exc
            results.append(None)
    if error is not None:
        raise error
    return results
