"""Calls run at the same time, one thread each: the executors of several cpu contexts.

``run(calls)`` runs the first call in the calling thread and each other one in
a thread of one process-wide pool, and returns their results in order. NumPy
and BLAS compute without the GIL, so calls that each touch their own arrays
(one context's executor, one context's copy of the weights) run in parallel
and give the values they give in turn. While they run, the thread policy's
count is divided among them (``threadpool.shared_by``: two side-by-side
products on 2 cores take one BLAS thread each instead of spinning two each),
and each carries the calling thread's flags (``thread_flags``). The pool's
threads sleep between calls; on a busy machine the scheduler still gives each
its share, which is what MXNet's per-device engine threads get too.
``REBIND_CONTEXT_THREADS=0`` (``enabled()``) tells the callers to stay in the
calling thread.
"""

import concurrent.futures
import os
import threading

from . import threadpool
from .thread_flags import raise_all, raised

__all__ = ["SWITCH", "enabled", "run"]

SWITCH = "REBIND_CONTEXT_THREADS"  # "0": work for several cpu contexts takes turns

_lock = threading.Lock()
_pool = {}  # "executor": ThreadPoolExecutor, "size": its max_workers, "pid": its process


def _executor(workers):
    """The process's pool with at least ``workers`` threads (made anew after a fork)."""
    with _lock:
        executor = _pool.get("executor")
        if executor is None or _pool["size"] < workers or _pool["pid"] != os.getpid():
            if executor is not None and _pool["pid"] == os.getpid():
                executor.shutdown(wait=False)
            executor = concurrent.futures.ThreadPoolExecutor(workers, "rebind-side-by-side")
            _pool.update(executor=executor, size=workers, pid=os.getpid())
        return executor


def enabled():
    """Whether side-by-side work is allowed (``REBIND_CONTEXT_THREADS`` is not ``0``)."""
    return os.environ.get(SWITCH, "1").strip() != "0"


def run(calls):
    """Call each zero-argument function of ``calls`` at the same time; results in order.

    An exception is raised once every call has ended: the first one's by
    position. One call runs in the calling thread, as is.
    """
    calls = list(calls)
    if len(calls) < 2:
        return [call() for call in calls]
    flags = raised()

    def task(call):
        with raise_all(flags):
            return call()

    pool = _executor(len(calls) - 1)
    with threadpool.shared_by(len(calls)):
        futures = [pool.submit(task, call) for call in calls[1:]]
        try:
            first = calls[0]()
        finally:
            concurrent.futures.wait(futures)
    return [first, *(future.result() for future in futures)]
