"""The executors of several cpu contexts, run side by side: one thread per context.

MXNet's engine runs each device's operators on that device's own worker
threads, so the executors of ``context=[mx.cpu(0), mx.cpu(1)]`` compute at the
same time. rebind does the same for host contexts through ``side_by_side``:
the first context's executor in the calling thread, each other one in a
helper thread, the thread policy's BLAS threads divided among them.

Each executor reads and writes only its own arrays and draws from its own
context's random stream, so the values are those of running the executors in
turn, bit for bit. The executors run in turn, in the calling thread, when:

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

    def run(self, call):
        """``call(index, executor)`` for every executor; their results in order.

        An exception is raised once every call has ended: the first context's.
        """
        pairs = list(enumerate(self.execs))
        if not self._now():
            return [call(index, executor) for index, executor in pairs]
        return side_by_side.run([_bound(call, index, executor) for index, executor in pairs])

    def _now(self):
        """Whether this call may run side by side (a monitor or the profiler says no)."""
        if not self.side_by_side or PROFILER.symbolic:
            return False
        return all(getattr(executor, "_monitor", None) is None for executor in self.execs)


def _bound(call, index, executor):
    return lambda: call(index, executor)
