"""The executors of several cpu contexts, run side by side: one thread per context.

MXNet's engine runs each device's operators on that device's own worker
threads, so the executors of ``context=[mx.cpu(0), mx.cpu(1)]`` compute at the
same time. rebind does the same for host contexts through ``side_by_side``:
the first context's executor in the calling thread, each other one in a
helper thread, the thread policy's BLAS threads divided among them.

Each executor reads and writes only its own arrays and draws from its own
context's random stream, so the values are those of running the executors in
turn, bit for bit. ``Module.forward_backward`` (``fit``'s step) hands each
context its forward and its backward at once (the group's ``hold_forward``):
one hand-over a step, and a helper thread that has not started its context's
work by the time the calling thread is done with its own leaves it to the
calling thread (``side_by_side.run``). The executors run in turn, in the calling thread, when:

- there is one context, or a context is not a CPU one (a GPU queues its work);
- ``REBIND_CONTEXT_THREADS=0`` (read at bind);
- a monitor is installed or the profiler records (both keep one thread's order);
- the graph has a ``Custom`` operator (the user's Python, not known thread-safe).
"""

from .. import side_by_side
from ..profiler import PROFILER

__all__ = ["ContextRunner", "on_host"]

HOST_TYPES = ("cpu", "cpu_pinned", "cpu_shared")


def on_host(contexts):
    """Whether every context of ``contexts`` is host memory (side-by-side work is safe)."""
    return all(ctx.device_type in HOST_TYPES for ctx in contexts)


def _has_custom_op(executor):
    plan = getattr(executor, "_plan", None)
    return plan is not None and any(step.op.name == "Custom" for step in plan.steps)


class ContextRunner:
    """Calls one function per executor of a group: side by side where that is safe.

    Args:
        contexts: the group's contexts, one per executor.
        execs: the group's executors (their plans and monitors are read).
    """

    def __init__(self, contexts, execs):
        self.execs = list(execs)
        self.side_by_side = (
            len(self.execs) > 1
            and side_by_side.enabled()
            and on_host(contexts)
            and not any(_has_custom_op(executor) for executor in self.execs)
        )
        self._holding = False  # hold(): a run(call, hold=True) waits for the next run
        self._held = None  # that held call

    def run(self, call, hold=False):
        """``call(index, executor)`` for every executor; their results in order.

        An exception is raised once every call has ended: the first context's.
        With ``hold`` while ``hold()`` is on, the call is kept (None returned)
        and runs with the next one, each executor's pair in one pass.
        """
        if hold and self._holding:
            self._held = call
            return None
        held, self._held = self._held, None
        if held is not None:
            call = _after(held, call)
        pairs = list(enumerate(self.execs))
        if not self.side_by_side_now():
            return [call(index, executor) for index, executor in pairs]
        return side_by_side.run([_bound(call, index, executor) for index, executor in pairs])

    def hold(self):
        """Keep the next ``run(call, hold=True)`` for the run after it; whether it will.

        Only while the calls run side by side: there a pair of calls in one
        pass saves a hand-over. ``release()`` ends it.
        """
        self._holding = self.side_by_side_now()
        return self._holding

    def release(self):
        """End ``hold()``; a call still kept runs now."""
        held, self._held, self._holding = self._held, None, False
        if held is not None:
            self.run(held)

    def side_by_side_now(self):
        """Whether a call now runs side by side (a monitor or the profiler says no)."""
        if not self.side_by_side or PROFILER.symbolic:
            return False
        return all(getattr(executor, "_monitor", None) is None for executor in self.execs)


def _bound(call, index, executor):
    return lambda: call(index, executor)


def _after(first, then):
    """``then(index, executor)`` after ``first(index, executor)``; ``then``'s result."""

    def both(index, executor):
        first(index, executor)
        return then(index, executor)

    return both
